"""The YOLOv5 graph of a checkpoint: the HPRM paper's own detector weights, run as ONNX.

The paper's CARLA demo ran ``yolov5n.pt`` from the YOLOv5 repository: a pickled
``models.yolo.Model``, modules and all, that only ``torch.load`` with that repository's code
on the path would rebuild. Here the file is read by `torch_checkpoint.load` (no code from
it runs) and its module tree walked layer by layer (``Conv``, ``C3``, ``SPPF``, ``Upsample``,
``Concat``, ``Detect``: every layer of yolov5n/s/m/l/x since v6.0), writing each as ONNX
with BatchNorm folded into the convolutions. The head's anchor-based output is decoded in
the graph into the layout of a YOLOv8 export, (1, 4 + 80, N): box centre and size in input
pixels, then each class's score (objectness times the class's probability), so the detector
post-processes both generations the same way.

Example::

    model = build_yolov5("yolov5n.pt", input_size=640)   # an onnx.ModelProto
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from . import torch_checkpoint
from .onnx_graph import Graph
from .torch_checkpoint import Pickled

__all__ = ["build_yolov5", "model_bytes"]

_NUM_CLASSES = 80  # COCO: the detector's class ids and the fusion rules assume them
_LAYERS = ("Conv", "C3", "SPPF", "Upsample", "Concat", "Detect")  # YOLOv5 since v6.0


class _Writer(Graph):
    """Writes one checkpoint's layers; every output of the model's Sequential is kept, as
    YOLOv5's forward keeps them, for the layers that take an earlier one (``f``)."""

    def conv(self, conv: Pickled, x: str, name: str) -> str:
        """YOLOv5's Conv: Conv2d (no bias) + BatchNorm2d (folded) + SiLU."""
        parts = conv.modules()
        c, bn = parts["conv"], parts["bn"]
        weight = _float(c.parameters()["weight"])
        b = bn.parameters()
        scale = _float(b["weight"]) / np.sqrt(_float(bn.buffers()["running_var"]) + bn.attr("eps"))
        bias = _float(b["bias"]) - _float(bn.buffers()["running_mean"]) * scale
        own_bias = c.parameters().get("bias")
        if own_bias is not None:
            bias = bias + _float(own_bias) * scale
        y = self.conv2d(
            x, weight * scale[:, None, None, None], bias, _one(c.attr("stride")),
            _one(c.attr("padding")), f"{name}.conv", c.attr("groups", 1),
        )  # fmt: skip
        act = parts.get("act")
        if act is None or not act.kind.endswith("SiLU"):
            raise ValueError(f"{name}: activation {act!r}, not SiLU")
        return self.silu(y, name)

    def bottleneck(self, block: Pickled, x: str, name: str) -> str:
        m = block.modules()
        y = self.conv(m["cv2"], self.conv(m["cv1"], x, f"{name}.cv1"), f"{name}.cv2")
        if block.attr("add"):
            (y,) = self.node("Add", [x, y], name)
        return y

    def c3(self, block: Pickled, x: str, name: str) -> str:
        """cv1 then the bottlenecks on one branch, cv2 on the other, cv3 on both."""
        m = block.modules()
        y = self.conv(m["cv1"], x, f"{name}.cv1")
        for i, b in m["m"].modules().items():
            y = self.bottleneck(b, y, f"{name}.m.{i}")
        both = self.concat([y, self.conv(m["cv2"], x, f"{name}.cv2")], name)
        return self.conv(m["cv3"], both, f"{name}.cv3")

    def sppf(self, block: Pickled, x: str, name: str) -> str:
        m = block.modules()
        parts = [self.conv(m["cv1"], x, f"{name}.cv1")]
        for _ in range(3):
            parts.append(self.maxpool(parts[-1], _one(m["m"].attr("kernel_size")), name))
        return self.conv(m["cv2"], self.concat(parts, name), f"{name}.cv2")

    def detect(self, head: Pickled, xs: list[str], input_size: int, name: str) -> tuple[str, int]:
        """Per level: the 1x1 conv, sigmoid, then (YOLOv5's Detect.forward at inference)
        xy = (2 s - 0.5 + cell) * stride, wh = (2 s)^2 * anchor, scores = obj * cls;
        the levels' anchors concatenated in the (1, 4 + nc, N) layout. Returns it and N."""
        na, no, nc = head.attr("na"), head.attr("no"), head.attr("nc")
        strides = [float(s) for s in _float(head.attr("stride")).reshape(-1)]
        anchors = _float(head.buffers()["anchors"]).reshape(len(xs), na, 2)
        split = self.const(np.array([2, 2, 1, nc], dtype=np.int64), name)
        levels = []
        for i, (x, conv, stride) in enumerate(zip(xs, head.modules()["m"].modules().values(),
                                                  strides, strict=True)):  # fmt: skip
            n = input_size // round(stride)
            raw = self.conv2d(
                x, _float(conv.parameters()["weight"]), _float(conv.parameters()["bias"]),
                1, 0, f"{name}.m.{i}",
            )  # fmt: skip
            shape = self.const(np.array([1, na, no, n * n], dtype=np.int64), name)
            (s,) = self.node("Reshape", [raw, shape], name)
            (s,) = self.node("Sigmoid", [s], name)
            xy, wh, obj, cls = self.node("Split", [s, split], name, n_out=4, axis=2)
            gy, gx = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
            cells = np.stack([gx.ravel(), gy.ravel()])[None, None]  # (1, 1, 2, n*n)
            (xy,) = self.node("Mul", [xy, self.const(np.float32(2 * stride), name)], name)
            offset = ((cells - 0.5) * stride).astype(np.float32)
            (xy,) = self.node("Add", [xy, self.const(offset, name)], name)
            (wh,) = self.node("Mul", [wh, wh], name)
            size = (4 * anchors[i] * stride).astype(np.float32)[None, :, :, None]  # (1, na, 2, 1)
            (wh,) = self.node("Mul", [wh, self.const(size, name)], name)
            (scores,) = self.node("Mul", [cls, obj], name)
            level = self.concat([xy, wh, scores], name, axis=2)  # (1, na, 4 + nc, n*n)
            (level,) = self.node("Transpose", [level], name, perm=[0, 2, 1, 3])
            flat = self.const(np.array([1, 4 + nc, -1], dtype=np.int64), name)
            (level,) = self.node("Reshape", [level, flat], name)
            levels.append(level)
        return self.concat(levels, name, axis=2), na * sum((input_size // round(s)) ** 2
                                                           for s in strides)  # fmt: skip


def _float(array: Any) -> np.ndarray:
    return np.asarray(array, dtype=np.float32)


def _one(value: Any) -> int:
    """torch stores a square kernel's size, stride and padding as a pair (or an int)."""
    values = value if isinstance(value, tuple | list) else (value,)
    if len(set(values)) != 1:
        raise ValueError(f"not square: {value}")
    return int(values[0])


def _model(path: Path) -> Pickled:
    saved = torch_checkpoint.load(path)
    model = (saved.get("ema") or saved.get("model")) if isinstance(saved, dict) else None
    if not isinstance(model, Pickled) or "model" not in model.modules():
        raise ValueError(f"{path}: not a YOLOv5 checkpoint (no 'model' with its layers)")
    if model.attr("nc") != _NUM_CLASSES:
        raise ValueError(f"{path}: {model.attr('nc')} classes, not COCO's {_NUM_CLASSES}")
    return model


def _build(path: Path, input_size: int) -> onnx.ModelProto:
    model = _model(path)
    w = _Writer()
    outputs: list[str] = []
    x, n_anchors, head = "images", 0, None
    for i, layer in enumerate(model.modules()["model"].modules().values()):
        kind, f, name = layer.kind.rsplit(".", 1)[-1], layer.attr("f", -1), f"model.{i}"
        if kind not in _LAYERS:
            raise ValueError(f"{path}: {name} is a {layer.kind}, which this reader does not know")
        scaling = (layer.attr("scale_factor"), layer.attr("mode"))
        if kind == "Upsample" and scaling != (2.0, "nearest"):
            raise ValueError(f"{path}: {name}: only a nearest 2x Upsample is supported")
        try:
            inputs = [x if j == -1 else outputs[j] for j in ([f] if isinstance(f, int) else f)]
            if kind == "Conv":
                x = w.conv(layer, inputs[0], name)
            elif kind == "C3":
                x = w.c3(layer, inputs[0], name)
            elif kind == "SPPF":
                x = w.sppf(layer, inputs[0], name)
            elif kind == "Upsample":
                x = w.upsample(inputs[0], name)
            elif kind == "Concat":
                x = w.concat(inputs, name, axis=layer.attr("d", 1))
            else:
                x, n_anchors = head = w.detect(layer, inputs, input_size, name)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(
                f"{path}: {name} ({layer.kind}) is not as YOLOv5 writes one: {exc!r}"
            ) from None
        outputs.append(x)
    if head is None or head[0] != x:
        raise ValueError(f"{path}: its last layer is not a Detect head")
    props = {"stride": "32", "imgsz": f"[{input_size}, {input_size}]", "weights": path.name}
    doc = f"YOLOv5 from {path.name} (BatchNorm folded, output in YOLOv8's export layout)"
    return w.model(x, "yolov5", input_size, n_anchors, 4 + _NUM_CLASSES, doc, props)


def model_bytes(path: str | os.PathLike[str], input_size: int) -> bytes:
    """`build_yolov5`'s model serialized (what onnxruntime takes)."""
    return build_yolov5(path, input_size).SerializeToString()


def build_yolov5(path: str | os.PathLike[str], input_size: int = 640) -> onnx.ModelProto:
    """The checkpoint's network as ONNX: input "images" (1, 3, S, S) float32 RGB in [0, 1],
    output "output0" (1, 84, anchors), cx, cy, w, h in input pixels + 80 class scores.
    ``ValueError`` naming the file if it is not a YOLOv5 checkpoint of COCO's classes,
    ``FileNotFoundError`` if there is none."""
    if input_size <= 0 or input_size % 32:
        raise ValueError(f"input_size must be a positive multiple of 32: {input_size}")
    return _build(Path(path), input_size)
