"""The YOLOv8n graph: ultralytics' layout, size and decoding (``carla_demo.yolo_graph``)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

from carla_demo.yolo import letterbox
from carla_demo.yolo_graph import build_yolov8n

YOLOV8N_PARAMS = 3_151_904  # ultralytics' fused yolov8n (Conv+BN folded), 80 classes


def test_graph_is_valid_yolov8n_with_ultralytics_layout() -> None:
    model = build_yolov8n(seed=0)
    onnx.checker.check_model(model, full_check=True)
    graph = model.graph
    assert [i.name for i in graph.input] == ["images"]
    assert [o.name for o in graph.output] == ["output0"]
    dims = [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 3, 640, 640]
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    out_dims = [d.dim_value for d in inferred.graph.output[0].type.tensor_type.shape.dim]
    assert out_dims == [1, 84, 8400]
    params = sum(int(np.prod(t.dims)) for t in graph.initializer)
    assert abs(params - YOLOV8N_PARAMS) / YOLOV8N_PARAMS < 0.05, params
    ops = [n.op_type for n in graph.node]
    assert ops.count("MaxPool") == 3  # SPPF
    assert ops.count("Resize") == 2  # FPN upsamples
    assert ops.count("Softmax") == 1  # DFL


def test_decoding_matches_ultralytics_dist2bbox(image: np.ndarray) -> None:
    """output0 = DFL expectation + dist2bbox on the (1, 144, 8400) head output, xywh
    scaled by stride, classes through a sigmoid: checked against a numpy rewrite."""
    model = build_yolov8n(seed=3)
    (head,) = [
        n.output[0]
        for n in model.graph.node
        if n.op_type == "Concat" and helper.get_attribute_value(n.attribute[0]) == 2
    ]
    model.graph.output.append(helper.make_empty_tensor_value_info(head))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    tensor, _, _ = letterbox(image, 640)
    out, pred = session.run(["output0", head], {"images": tensor})
    assert pred.shape == (1, 144, 8400)

    logits = pred[0, :64].reshape(4, 16, -1).astype(np.float64)
    prob = np.exp(logits - logits.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    lt_rb = (prob * np.arange(16)[None, :, None]).sum(axis=1)  # (4, A)
    anchors, strides = [], []
    for stride in (8, 16, 32):
        n = 640 // stride
        ys, xs = np.mgrid[0:n, 0:n] + 0.5
        anchors.append(np.stack([xs.ravel(), ys.ravel()]))
        strides.append(np.full(n * n, stride))
    anchor, stride = np.concatenate(anchors, axis=1), np.concatenate(strides)
    x1y1, x2y2 = anchor - lt_rb[:2], anchor + lt_rb[2:]
    xywh = np.concatenate([(x1y1 + x2y2) / 2, x2y2 - x1y1]) * stride
    np.testing.assert_allclose(out[0, :4], xywh, rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(out[0, 4:], 1 / (1 + np.exp(-pred[0, 64:])), rtol=1e-5, atol=1e-6)


def test_input_size_must_be_a_multiple_of_32() -> None:
    with pytest.raises(ValueError, match="multiple of 32"):
        build_yolov8n(input_size=600)
