"""The YOLOv8n graph, layer for layer, built with ``onnx.helper`` (no model file to download).

ultralytics/cfg/models/v8/yolov8.yaml at scale n (depth 0.33, width 0.25, max channels
1024), with BatchNorm folded into the convolutions as ultralytics' own export does. Its
weights are drawn from a seeded generator the way a freshly initialised network's are
(``_GraphBuilder``: activations keep their spread 60 layers down): the detector then costs
what a real one costs, and its output keeps the layout of ``yolo export format=onnx``, so a
real ``yolov8n.onnx`` replaces it by path (``yolo.Detector``). Kept apart from the detector,
which only runs a graph: this module makes one.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import onnx

from .onnx_graph import Graph
from .weights import seeded_rng

__all__ = ["NUM_CLASSES", "STRIDES", "build_yolov8n", "check_input_size", "model_bytes"]

NUM_CLASSES = 80  # COCO (yolo.COCO_NAMES)
REG_MAX = 16  # DFL bins per box side
STRIDES = (8, 16, 32)

# Per-channel mean and variance of the input images (natural images, pixels in [0, 1]).
_IMAGE_MEAN, _IMAGE_VAR = 0.45, 0.07


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


class _GraphBuilder(Graph):
    """A `Graph` whose weights start the way a freshly initialised network does, BatchNorm
    included: each Conv's pre-activation is centred and of unit variance per channel. Plain
    He-normal would not do: without BN's centering, SiLU (slope 1/2 near 0) lets activations decay
    layer after layer and they are all but gone 60 layers down. The builder therefore
    tracks every tensor's per-channel mean and variance (assuming independent inputs) and
    folds BN's normalisation into each Conv's weights and bias. Data-free: the network is
    a function of the seed alone.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        super().__init__()
        self.rng = rng
        self.stats: dict[str, _Stats] = {
            "images": (np.full(3, _IMAGE_MEAN), np.full(3, _IMAGE_VAR))
        }

    def _track(self, out: str, mean: np.ndarray, var: np.ndarray) -> str:
        self.stats[out] = (mean, var)
        return out

    def channels(self, x: str) -> int:
        return len(self.stats[x][0])

    def random_conv2d(
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
        y = self.conv2d(x, w, bias, s, k // 2, name)
        return self._track(y, np.zeros(c2), np.ones(c2))

    def conv(self, x: str, c1: int, c2: int, k: int, s: int, name: str) -> str:
        """ultralytics Conv: Conv2d(bias=False) + BN (folded) + SiLU."""
        y = self.silu(self.random_conv2d(x, c1, c2, k, s, f"{name}.conv"), name)
        return self._track(y, np.full(c2, _SILU_MEAN), np.full(c2, _SILU_VAR))

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
            pooled = self.maxpool(parts[-1], k, name)
            # A max of 25 neighbours has a larger mean, a smaller variance: ignored.
            parts.append(self._track(pooled, *self.stats[parts[-1]]))
        return self.conv(self.concat(parts, name), 4 * c, c2, 1, 1, f"{name}.cv2")

    def upsample(self, x: str, name: str) -> str:
        return self._track(super().upsample(x, name), *self.stats[x])

    def concat(self, xs: list[str], name: str, axis: int = 1) -> str:
        y = super().concat(xs, name, axis)
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
            box = self.random_conv2d(
                box, c2, 4 * REG_MAX, 1, 1, f"{name}.cv2.{i}.2", np.ones(4 * REG_MAX)
            )
            cls = self.conv(x, ch, c3, 3, 1, f"{name}.cv3.{i}.0")
            cls = self.conv(cls, c3, c3, 3, 1, f"{name}.cv3.{i}.1")
            # ultralytics' bias_init: a prior of ~5 objects per 640 image per class, so
            # that an untrained head scores every anchor near zero.
            prior = math.log(5 / NUM_CLASSES / (640 / stride) ** 2)
            cls = self.random_conv2d(
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

    n_anchors = sum((input_size // s) ** 2 for s in STRIDES)
    meta = {"stride": "32", "imgsz": f"[{input_size}, {input_size}]", "random_weights": "1"}
    doc = f"YOLOv8n architecture, SEEDED RANDOM WEIGHTS (seed {seed})"
    return g.model(out, "yolov8n", input_size, n_anchors, 4 + NUM_CLASSES, doc, meta)


@functools.lru_cache(maxsize=4)
def model_bytes(seed: int, input_size: int) -> bytes:
    return _build_graph(seed, input_size).SerializeToString()


def check_input_size(input_size: int) -> None:
    if input_size <= 0 or input_size % max(STRIDES):
        raise ValueError(f"input_size must be a positive multiple of {max(STRIDES)}: {input_size}")


def build_yolov8n(seed: int = 0, input_size: int = 640) -> onnx.ModelProto:
    """The YOLOv8n graph with weights drawn from ``seeded_rng(seed, "yolov8n")``: input
    "images" (1, 3, S, S) float32 RGB in [0, 1], output "output0" (1, 84, anchors) = cx, cy,
    w, h in input pixels + 80 class scores. A fresh copy each call (cached bytes)."""
    check_input_size(input_size)
    return onnx.load_from_string(model_bytes(seed, input_size))
