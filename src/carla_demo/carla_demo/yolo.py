"""The demo's object detector: YOLOv8n, run by onnxruntime (or PyTorch on a GPU: ``torch_gpu``).

The latency A/B compares middlewares, so the detector must cost what a real one costs: the
graph below is ultralytics' YOLOv8n layer for layer (same convolutions, same FLOPs, same
output layout), and without a weights file it runs with seeded random weights (see
``weights``). Because the output layout is exactly that of ``yolo export format=onnx``, a
real ``yolov8n.onnx`` drops in by path and goes through the same post-processing.

ONNX rather than PyTorch keeps the install small (onnxruntime is a few tens of MB, torch is
gigabytes) and gives the same inference engine on CPU and GPU. The graph is built with
``onnx.helper`` so that no model file ever has to be downloaded.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

from . import torch_gpu
from .weights import seeded_rng, warn_random_weights

__all__ = [
    "BICYCLE",
    "BUS",
    "CAR",
    "COCO_NAMES",
    "MOTORCYCLE",
    "PERSON",
    "STOP_SIGN",
    "TRAFFIC_LIGHT",
    "TRUCK",
    "Detector",
    "build_yolov8n",
    "inference_device",
    "letterbox",
    "nms",
]

# COCO class ids the fusion rules look at.
PERSON = 0
BICYCLE = 1
CAR = 2
MOTORCYCLE = 3
BUS = 5
TRUCK = 7
TRAFFIC_LIGHT = 9
STOP_SIGN = 11

COCO_NAMES: tuple[str, ...] = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
    "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat",
    "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack",
    "umbrella", "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball",
    "kite", "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket",
    "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair",
    "couch", "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse",
    "remote", "keyboard", "cell phone", "microwave", "oven", "toaster", "sink",
    "refrigerator", "book", "clock", "vase", "scissors", "teddy bear", "hair drier",
    "toothbrush",
)  # fmt: skip

NUM_CLASSES = len(COCO_NAMES)
REG_MAX = 16  # DFL bins per box side
STRIDES = (8, 16, 32)
PAD_VALUE = 114  # ultralytics' letterbox gray
MAX_DET = 300
_MAX_NMS = 30_000  # candidates kept for NMS, as ultralytics
_OPSET = 17
_IR_VERSION = 8  # the IR that goes with opset 17: loadable by any onnxruntime >= 1.11

# Per-channel mean and variance of the input images (natural images, pixels in [0, 1]).
_IMAGE_MEAN, _IMAGE_VAR = 0.45, 0.07

_HOW_TO_FIX = (
    "Pass weights=PATH to a yolov8n.onnx exported by ultralytics "
    "(`yolo export model=yolov8n.pt format=onnx`)."
)


# --------------------------------------------------------------------------------------
# The YOLOv8n graph (ultralytics/cfg/models/v8/yolov8.yaml, scale n: depth 0.33, width
# 0.25, max channels 1024). BatchNorm is folded into the convolutions, as in ultralytics'
# own export (which fuses Conv+BN before exporting).
# --------------------------------------------------------------------------------------


def _silu_moments() -> tuple[float, float]:
    """Mean and variance of silu(z) for z ~ N(0, 1) (about 0.21 and 0.31), by
    Gauss-Hermite quadrature."""
    z, w = np.polynomial.hermite_e.hermegauss(80)
    w = w / w.sum()
    silu = z / (1 + np.exp(-z))
    mean = float(np.dot(w, silu))
    return mean, float(np.dot(w, silu**2)) - mean**2


_SILU_MEAN, _SILU_VAR = _silu_moments()

_Stats = tuple[np.ndarray, np.ndarray]  # per-channel mean and variance of a tensor


class _GraphBuilder:
    """Appends nodes and (learned) initializers; constants go in Constant nodes so that
    the initializers are exactly the model's parameters.

    Weights start the way a freshly initialised network does, BatchNorm included: each
    Conv's pre-activation is centred and of unit variance per channel. Plain He-normal
    would not do: without BN's centering, SiLU (slope 1/2 near 0) lets activations decay
    layer after layer and they are all but gone 60 layers down. The builder therefore
    tracks every tensor's per-channel mean and variance (assuming independent inputs) and
    folds BN's normalisation into each Conv's weights and bias. Data-free: the network is
    a function of the seed alone.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.stats: dict[str, _Stats] = {
            "images": (np.full(3, _IMAGE_MEAN), np.full(3, _IMAGE_VAR))
        }
        self._count = 0

    def _track(self, out: str, mean: np.ndarray, var: np.ndarray) -> str:
        self.stats[out] = (mean, var)
        return out

    def channels(self, x: str) -> int:
        return len(self.stats[x][0])

    def _name(self, prefix: str) -> str:
        self._count += 1
        return f"/{prefix}/out{self._count}"

    def node(self, op: str, inputs: list[str], prefix: str, n_out: int = 1, **attrs) -> list[str]:
        outputs = [self._name(prefix) for _ in range(n_out)]
        self.nodes.append(
            helper.make_node(op, inputs, outputs, name=f"/{prefix}/{op}{self._count}", **attrs)
        )
        return outputs

    def param(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def const(self, array: np.ndarray, prefix: str) -> str:
        (out,) = self.node("Constant", [], prefix, value=numpy_helper.from_array(array))
        return out

    def conv2d(
        self, x: str, c1: int, c2: int, k: int, s: int, name: str, bias: np.ndarray | None = None
    ) -> str:
        """A Conv2d. With `bias`: a plain one, PyTorch's default init (uniform within
        1/sqrt(fan_in)). Without: BN folded in (see the class doc), output (0, 1)."""
        assert self.channels(x) == c1, f"{name}: {self.channels(x)} channels in, not {c1}"
        fan_in = c1 * k * k
        if bias is None:
            w = self.rng.standard_normal((c2, c1, k, k))
            mean_in, var_in = self.stats[x]
            mean = w.sum(axis=(2, 3)) @ mean_in
            std = np.sqrt((w**2).sum(axis=(2, 3)) @ var_in)
            w /= std[:, None, None, None]
            bias = -mean / std
        else:
            bound = 1 / math.sqrt(fan_in)
            w = self.rng.uniform(-bound, bound, (c2, c1, k, k))
        inputs = [x, self.param(f"{name}.weight", w), self.param(f"{name}.bias", bias)]
        p = k // 2
        (y,) = self.node(
            "Conv", inputs, name, kernel_shape=[k, k], strides=[s, s], pads=[p, p, p, p]
        )
        return self._track(y, np.zeros(c2), np.ones(c2))

    def conv(self, x: str, c1: int, c2: int, k: int, s: int, name: str) -> str:
        """ultralytics Conv: Conv2d(bias=False) + BN (folded) + SiLU."""
        y = self.conv2d(x, c1, c2, k, s, f"{name}.conv")
        (sig,) = self.node("Sigmoid", [y], name)
        (out,) = self.node("Mul", [y, sig], name)
        return self._track(out, np.full(c2, _SILU_MEAN), np.full(c2, _SILU_VAR))

    def bottleneck(self, x: str, c: int, shortcut: bool, name: str) -> str:
        y = self.conv(x, c, c, 3, 1, f"{name}.cv1")
        y = self.conv(y, c, c, 3, 1, f"{name}.cv2")
        if shortcut:
            (mx, vx), (my, vy) = self.stats[x], self.stats[y]
            (y,) = self.node("Add", [x, y], name)
            self._track(y, mx + my, vx + vy)
        return y

    def c2f(self, x: str, c1: int, c2: int, n: int, shortcut: bool, name: str) -> str:
        """cv1 to 2c channels, split in two halves, n bottlenecks chained on the second
        half, every intermediate concatenated, cv2 back to c2."""
        c = c2 // 2
        y = self.conv(x, c1, 2 * c, 1, 1, f"{name}.cv1")
        split = self.const(np.array([c, c], dtype=np.int64), name)
        mean, var = self.stats[y]
        parts = [
            self._track(part, mean[i * c : (i + 1) * c], var[i * c : (i + 1) * c])
            for i, part in enumerate(self.node("Split", [y, split], name, n_out=2, axis=1))
        ]
        for i in range(n):
            parts.append(self.bottleneck(parts[-1], c, shortcut, f"{name}.m.{i}"))
        return self.conv(self.concat(parts, name), (2 + n) * c, c2, 1, 1, f"{name}.cv2")

    def sppf(self, x: str, c1: int, c2: int, k: int, name: str) -> str:
        c = c1 // 2
        parts = [self.conv(x, c1, c, 1, 1, f"{name}.cv1")]
        for _ in range(3):
            (pooled,) = self.node(
                "MaxPool", [parts[-1]], name, kernel_shape=[k, k], strides=[1, 1],
                pads=[k // 2] * 4,
            )  # fmt: skip
            # A max of 25 neighbours has a larger mean, a smaller variance: ignored.
            parts.append(self._track(pooled, *self.stats[parts[-1]]))
        return self.conv(self.concat(parts, name), 4 * c, c2, 1, 1, f"{name}.cv2")

    def upsample(self, x: str, name: str) -> str:
        scales = self.const(np.array([1, 1, 2, 2], dtype=np.float32), name)
        (y,) = self.node(
            "Resize", [x, "", scales], name, mode="nearest",
            coordinate_transformation_mode="asymmetric", nearest_mode="floor",
        )  # fmt: skip
        return self._track(y, *self.stats[x])

    def concat(self, xs: list[str], name: str) -> str:
        (y,) = self.node("Concat", xs, name, axis=1)
        mean = np.concatenate([self.stats[x][0] for x in xs])
        return self._track(y, mean, np.concatenate([self.stats[x][1] for x in xs]))

    def detect(self, feats: list[str], channels: list[int], input_size: int, name: str) -> str:
        """Decoupled head per scale (box: 4*REG_MAX DFL logits, cls: NUM_CLASSES logits),
        then DFL + dist2bbox decoding to xywh in input pixels and sigmoid class scores:
        output (1, 4 + NUM_CLASSES, anchors), ultralytics' export layout."""
        c2 = max(16, channels[0] // 4, 4 * REG_MAX)
        c3 = max(channels[0], min(NUM_CLASSES, 100))
        no = 4 * REG_MAX + NUM_CLASSES
        flat = self.const(np.array([1, no, -1], dtype=np.int64), name)
        levels = []
        for i, (x, ch, stride) in enumerate(zip(feats, channels, STRIDES, strict=True)):
            box = self.conv(x, ch, c2, 3, 1, f"{name}.cv2.{i}.0")
            box = self.conv(box, c2, c2, 3, 1, f"{name}.cv2.{i}.1")
            box = self.conv2d(box, c2, 4 * REG_MAX, 1, 1, f"{name}.cv2.{i}.2", np.ones(4 * REG_MAX))
            cls = self.conv(x, ch, c3, 3, 1, f"{name}.cv3.{i}.0")
            cls = self.conv(cls, c3, c3, 3, 1, f"{name}.cv3.{i}.1")
            # ultralytics' bias_init: a prior of ~5 objects per 640 image per class, so
            # that an untrained head scores every anchor near zero.
            prior = math.log(5 / NUM_CLASSES / (640 / stride) ** 2)
            cls = self.conv2d(
                cls, c3, NUM_CLASSES, 1, 1, f"{name}.cv3.{i}.2", np.full(NUM_CLASSES, prior)
            )
            (level,) = self.node("Concat", [box, cls], name, axis=1)
            (level,) = self.node("Reshape", [level, flat], name)
            levels.append(level)
        (pred,) = self.node("Concat", levels, name, axis=2)
        split = self.const(np.array([4 * REG_MAX, NUM_CLASSES], dtype=np.int64), name)
        box, cls = self.node("Split", [pred, split], name, n_out=2, axis=1)
        dist = self.dfl(box, f"{name}.dfl")

        anchors, strides = _anchors(input_size)
        halves = self.const(np.array([2, 2], dtype=np.int64), name)
        lt, rb = self.node("Split", [dist, halves], name, n_out=2, axis=1)
        anchors_t = self.const(anchors, name)
        (x1y1,) = self.node("Sub", [anchors_t, lt], name)
        (x2y2,) = self.node("Add", [anchors_t, rb], name)
        (total,) = self.node("Add", [x1y1, x2y2], name)
        (cxy,) = self.node("Div", [total, self.const(np.array(2, np.float32), name)], name)
        (wh,) = self.node("Sub", [x2y2, x1y1], name)
        (xywh,) = self.node("Concat", [cxy, wh], name, axis=1)
        (xywh,) = self.node("Mul", [xywh, self.const(strides, name)], name)
        (scores,) = self.node("Sigmoid", [cls], name)
        (out,) = self.node("Concat", [xywh, scores], name, axis=1)
        return out

    def dfl(self, box: str, name: str) -> str:
        """Distribution focal loss decoding: softmax over REG_MAX bins, expectation by a
        fixed 1x1 conv of weights 0..REG_MAX-1 (a parameter in ultralytics too)."""
        shape4 = self.const(np.array([1, 4, REG_MAX, -1], dtype=np.int64), name)
        (y,) = self.node("Reshape", [box, shape4], name)
        (y,) = self.node("Transpose", [y], name, perm=[0, 2, 1, 3])  # (1, 16, 4, A)
        (y,) = self.node("Softmax", [y], name, axis=1)
        bins = np.arange(REG_MAX, dtype=np.float32).reshape(1, REG_MAX, 1, 1)
        (y,) = self.node("Conv", [y, self.param(f"{name}.conv.weight", bins)], name)
        shape3 = self.const(np.array([1, 4, -1], dtype=np.int64), name)
        (y,) = self.node("Reshape", [y, shape3], name)
        return y


def _anchors(input_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Anchor centres (1, 2, A) and per-anchor strides (1, 1, A), cell centres in grid
    units, scales in order and each scale row-major: ultralytics' make_anchors."""
    points, strides = [], []
    for stride in STRIDES:
        n = input_size // stride
        sy, sx = np.meshgrid(np.arange(n) + 0.5, np.arange(n) + 0.5, indexing="ij")
        points.append(np.stack([sx.ravel(), sy.ravel()]))
        strides.append(np.full(n * n, stride))
    anchors = np.concatenate(points, axis=1)[None].astype(np.float32)
    return anchors, np.concatenate(strides)[None, None].astype(np.float32)


def _build_graph(seed: int, input_size: int) -> onnx.ModelProto:
    g = _GraphBuilder(seeded_rng(seed, "yolov8n"))
    # Backbone (yolov8.yaml layers 0-9): channels 16, 32, 64, 128, 256.
    x = g.conv("images", 3, 16, 3, 2, "model.0")  # P1/2
    x = g.conv(x, 16, 32, 3, 2, "model.1")  # P2/4
    x = g.c2f(x, 32, 32, 1, True, "model.2")
    x = g.conv(x, 32, 64, 3, 2, "model.3")  # P3/8
    p3 = g.c2f(x, 64, 64, 2, True, "model.4")
    x = g.conv(p3, 64, 128, 3, 2, "model.5")  # P4/16
    p4 = g.c2f(x, 128, 128, 2, True, "model.6")
    x = g.conv(p4, 128, 256, 3, 2, "model.7")  # P5/32
    x = g.c2f(x, 256, 256, 1, True, "model.8")
    p5 = g.sppf(x, 256, 256, 5, "model.9")
    # Head (layers 10-22): FPN top-down, then PAN bottom-up.
    x = g.concat([g.upsample(p5, "model.10"), p4], "model.11")
    h4 = g.c2f(x, 384, 128, 1, False, "model.12")
    x = g.concat([g.upsample(h4, "model.13"), p3], "model.14")
    out3 = g.c2f(x, 192, 64, 1, False, "model.15")  # P3/8 small
    x = g.concat([g.conv(out3, 64, 64, 3, 2, "model.16"), h4], "model.17")
    out4 = g.c2f(x, 192, 128, 1, False, "model.18")  # P4/16 medium
    x = g.concat([g.conv(out4, 128, 128, 3, 2, "model.19"), p5], "model.20")
    out5 = g.c2f(x, 384, 256, 1, False, "model.21")  # P5/32 large
    out = g.detect([out3, out4, out5], [64, 128, 256], input_size, "model.22")

    g.nodes.append(helper.make_node("Identity", [out], ["output0"], name="/output0"))
    n_anchors = sum((input_size // s) ** 2 for s in STRIDES)
    images = helper.make_tensor_value_info(
        "images", TensorProto.FLOAT, [1, 3, input_size, input_size]
    )
    output = helper.make_tensor_value_info(
        "output0", TensorProto.FLOAT, [1, 4 + NUM_CLASSES, n_anchors]
    )
    graph = helper.make_graph(g.nodes, "yolov8n", [images], [output], g.initializers)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", _OPSET)],
        producer_name="carla_demo.yolo",
        doc_string=f"YOLOv8n architecture, SEEDED RANDOM WEIGHTS (seed {seed})",
    )
    model.ir_version = _IR_VERSION
    meta = {"stride": "32", "imgsz": f"[{input_size}, {input_size}]", "random_weights": "1"}
    helper.set_model_props(model, meta)
    return model


@functools.lru_cache(maxsize=4)
def _model_bytes(seed: int, input_size: int) -> bytes:
    return _build_graph(seed, input_size).SerializeToString()


def _check_input_size(input_size: int) -> None:
    if input_size <= 0 or input_size % max(STRIDES):
        raise ValueError(f"input_size must be a positive multiple of {max(STRIDES)}: {input_size}")


def build_yolov8n(seed: int = 0, input_size: int = 640) -> onnx.ModelProto:
    """The YOLOv8n graph with weights drawn from ``seeded_rng(seed, "yolov8n")``: input
    "images" (1, 3, S, S) float32 RGB in [0, 1], output "output0" (1, 84, anchors) = cx, cy,
    w, h in input pixels + 80 class scores. A fresh copy each call (cached bytes)."""
    _check_input_size(input_size)
    return onnx.load_from_string(_model_bytes(seed, input_size))


# --------------------------------------------------------------------------------------
# Pre- and post-processing (numpy).
# --------------------------------------------------------------------------------------


def letterbox(image: np.ndarray, size: int) -> tuple[np.ndarray, float, tuple[int, int]]:
    """Resize `image` (H, W, 3 uint8 RGB) to fit a `size` square keeping its aspect, pad
    with gray 114, centred. Returns the network input (1, 3, size, size) float32 in [0, 1],
    the scale applied and the (pad_x, pad_y) offset of the image in the square."""
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"expected an HxWx3 uint8 RGB image, got {image.shape} {image.dtype}")
    h, w = image.shape[:2]
    scale = min(size / h, size / w)
    new_w, new_h = round(w * scale), round(h * scale)
    if (new_w, new_h) != (w, h):
        image = np.asarray(Image.fromarray(image).resize((new_w, new_h), Image.BILINEAR))
    pad_x, pad_y = round((size - new_w) / 2 - 0.1), round((size - new_h) / 2 - 0.1)
    canvas = np.full((size, size, 3), PAD_VALUE, dtype=np.uint8)
    canvas[pad_y : pad_y + new_h, pad_x : pad_x + new_w] = image
    tensor = np.empty((1, 3, size, size), dtype=np.float32)
    np.multiply(canvas.transpose(2, 0, 1), np.float32(1 / 255), out=tensor[0])
    return tensor, scale, (pad_x, pad_y)


def nms(
    boxes: np.ndarray,
    scores: np.ndarray,
    classes: np.ndarray,
    iou_threshold: float,
    *,
    max_det: int | None = None,
) -> np.ndarray:
    """Class-aware greedy non-maximum suppression. `boxes` (N, 4) x1, y1, x2, y2; a box is
    dropped when it overlaps a kept box of the same class with IoU > `iou_threshold`.
    Returns the kept indices (int64), best score first, at most `max_det` of them."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    scores = np.asarray(scores).reshape(-1)
    classes = np.asarray(classes).reshape(-1)
    if not len(boxes) == len(scores) == len(classes):
        raise ValueError(f"nms: {len(boxes)} boxes, {len(scores)} scores, {len(classes)} classes")
    x1, y1, x2, y2 = boxes.T
    areas = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    order = np.argsort(-scores, kind="stable")
    keep: list[int] = []
    limit = len(order) if max_det is None else max_det
    while order.size and len(keep) < limit:
        i, rest = order[0], order[1:]
        keep.append(int(i))
        iw = np.clip(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0, None)
        ih = np.clip(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0, None)
        inter = iw * ih
        iou = inter / np.maximum(areas[i] + areas[rest] - inter, 1e-12)
        order = rest[(iou <= iou_threshold) | (classes[rest] != classes[i])]
    return np.array(keep, dtype=np.int64)


def _postprocess(
    raw: np.ndarray,
    scale: float,
    pad: tuple[int, int],
    image_shape: tuple[int, ...],
    *,
    conf_threshold: float = 0.25,
    iou_threshold: float = 0.45,
    max_det: int = MAX_DET,
) -> np.ndarray:
    """Raw network output (1, 84, A) -> detections (N, 6) float32: x1, y1, x2, y2 in the
    original image's pixels, score, class id; best score first."""
    pred = raw[0]
    cls_scores = pred[4:]
    scores = cls_scores.max(axis=0)
    candidates = np.flatnonzero(scores > conf_threshold)
    if candidates.size > _MAX_NMS:
        candidates = candidates[np.argsort(-scores[candidates], kind="stable")[:_MAX_NMS]]
    if candidates.size == 0:
        return np.zeros((0, 6), dtype=np.float32)
    scores = scores[candidates]
    classes = cls_scores[:, candidates].argmax(axis=0)
    cx, cy, w, h = pred[:4, candidates].astype(np.float64)
    boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    keep = nms(boxes, scores, classes, iou_threshold, max_det=max_det)
    boxes = boxes[keep]
    boxes[:, [0, 2]] = (boxes[:, [0, 2]] - pad[0]) / scale
    boxes[:, [1, 3]] = (boxes[:, [1, 3]] - pad[1]) / scale
    height, width = image_shape[:2]
    boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, width)
    boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, height)
    out = np.empty((len(keep), 6), dtype=np.float32)
    out[:, :4] = boxes
    out[:, 4] = scores[keep]
    out[:, 5] = classes[keep]
    return out


# --------------------------------------------------------------------------------------
# The detector.
# --------------------------------------------------------------------------------------


def _providers() -> list[str]:
    available = ort.get_available_providers()
    providers = ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" in available:
        providers.insert(0, "CUDAExecutionProvider")
    return providers


def _on_torch() -> bool:
    return "CUDAExecutionProvider" not in _providers() and torch_gpu.unavailable() is None


def inference_device() -> str:
    """Where a `Detector` made now runs its network: for the A/B report's parameters."""
    if "CUDAExecutionProvider" in _providers():
        return "GPU (onnxruntime CUDA)"
    why = torch_gpu.unavailable()
    return "GPU (torch CUDA)" if why is None else f"CPU (onnxruntime; no GPU engine: {why})"


def _is_dim(dim: object, value: int) -> bool:
    """A static dim equal to `value`, or a symbolic (dynamic) one."""
    return not isinstance(dim, int) or dim == value


def _is_square(height: object, width: object) -> bool:
    """Static and equal, or both symbolic."""
    if isinstance(height, int) and isinstance(width, int):
        return height == width
    return not isinstance(height, int) and not isinstance(width, int)


class Detector:
    """YOLOv8n on onnxruntime (CUDA when available, else CPU).

    ``Detector()`` runs the real architecture with seeded random weights (and warns
    ``RandomWeightsWarning``); ``Detector(weights="yolov8n.onnx")`` runs an ultralytics
    export (`seed` is then unused, and the model's own static input size wins over
    `input_size`).
    ``detector(image)`` takes an HxWx3 uint8 RGB image and returns float32 (N, 6)
    detections: x1, y1, x2, y2 (original image pixels), score, COCO class id.
    """

    def __init__(
        self,
        weights: str | os.PathLike[str] | None = None,
        *,
        seed: int = 0,
        input_size: int = 640,
        conf_threshold: float = 0.25,
        iou_threshold: float = 0.45,
        threads: int | None = None,
    ) -> None:
        _check_input_size(input_size)
        self.conf_threshold = conf_threshold
        self.iou_threshold = iou_threshold
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            options.intra_op_num_threads = threads
        # onnxruntime's workers busy-wait for the next job by default: in a process beside
        # others (the middleware's, the policy's) they take the CPU those need to deliver
        # the frame. They sleep instead; one inference costs the same.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.weights: Path | None = None if weights is None else Path(weights)
        if self.weights is None:
            self._session = ort.InferenceSession(
                _model_bytes(seed, input_size), options, providers=_providers()
            )
            warn_random_weights("YOLOv8n detector", _HOW_TO_FIX)
        else:
            self._session = self._load(self.weights, options)
        # onnxruntime without its CUDA provider, on a machine whose PyTorch has a GPU: the same
        # graph on torch (torch_gpu says why).
        self._torch: torch_gpu.TorchRunner | None = None
        if _on_torch():
            model = onnx.load_from_string(_model_bytes(seed, input_size)) if self.weights is None \
                else onnx.load(self.weights)  # fmt: skip
            self._torch = torch_gpu.TorchRunner(model)
        inp = self._session.get_inputs()[0]
        self._input_name = inp.name
        self._output_name = self._session.get_outputs()[0].name
        self._half = inp.type == "tensor(float16)"
        size = inp.shape[2]
        self.input_size: int = size if isinstance(size, int) else input_size

    @property
    def random_weights(self) -> bool:
        return self.weights is None

    @property
    def device(self) -> str:
        """Where inference runs, for the logs and the A/B report."""
        if self._torch is not None:
            return f"cuda: {self._torch.device}"
        return f"{self._session.get_providers()[0]} (onnxruntime {ort.__version__})"

    @staticmethod
    def _load(path: Path, options: ort.SessionOptions) -> ort.InferenceSession:
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file (expected a YOLOv8 ONNX export)")
        try:
            session = ort.InferenceSession(str(path), options, providers=_providers())
        except Exception as exc:  # onnxruntime raises its own, non-exported, exception types
            raise ValueError(f"{path}: not an ONNX model: {exc}") from exc
        inputs, outputs = session.get_inputs(), session.get_outputs()
        in_shape = inputs[0].shape if len(inputs) == 1 else [i.shape for i in inputs]
        out_shape = outputs[0].shape if outputs else None
        input_ok = (
            len(inputs) == 1
            and len(in_shape) == 4
            and _is_dim(in_shape[0], 1)
            and in_shape[1] == 3
            and _is_square(in_shape[2], in_shape[3])
            and inputs[0].type in ("tensor(float)", "tensor(float16)")
        )
        if not input_ok:
            raise ValueError(
                f"{path}: expected one float input of shape (1, 3, S, S), "
                f"found {in_shape} ({', '.join(i.type for i in inputs)})"
            )
        output_ok = (
            out_shape is not None
            and len(out_shape) == 3
            and _is_dim(out_shape[0], 1)
            and out_shape[1] == 4 + NUM_CLASSES
        )
        if not output_ok:
            raise ValueError(
                f"{path}: expected output of shape (1, {4 + NUM_CLASSES}, N) (YOLOv8, "
                f"{NUM_CLASSES} COCO classes), found {out_shape}"
            )
        return session

    def preprocess(self, image: np.ndarray) -> tuple[np.ndarray, float, tuple[int, int]]:
        """`letterbox` at this detector's input size."""
        return letterbox(image, self.input_size)

    def infer(self, tensor: np.ndarray) -> np.ndarray:
        """The raw network output (1, 84, anchors) float32 for a letterboxed input."""
        if self._half:
            tensor = tensor.astype(np.float16)
        if self._torch is not None:
            return self._torch(tensor)
        (raw,) = self._session.run([self._output_name], {self._input_name: tensor})
        return raw.astype(np.float32, copy=False)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        tensor, scale, pad = self.preprocess(image)
        return _postprocess(
            self.infer(tensor),
            scale,
            pad,
            image.shape,
            conf_threshold=self.conf_threshold,
            iou_threshold=self.iou_threshold,
        )
