"""The demo's object detector: YOLO run by onnxruntime (or PyTorch on a GPU: ``torch_gpu``).

The latency A/B compares middlewares, so the detector must cost what a real one costs: the
graph (``yolo_graph``) is ultralytics' YOLOv8n layer for layer (same convolutions, same FLOPs, same
output layout), and without a weights file it runs with seeded random weights (see
``weights``). Because the output layout is exactly that of ``yolo export format=onnx``, a
real ``yolov8n.onnx`` drops in by path and goes through the same post-processing; so does a
YOLOv5 checkpoint (``yolov5n.pt``, the HPRM paper's own detector), whose network
``yolov5_graph`` writes as ONNX in that same output layout, running no code from the file.

ONNX rather than PyTorch keeps the install small (onnxruntime is a few tens of MB, torch is
gigabytes) and gives the same inference engine on CPU and GPU. This module runs a graph
(pre-processing, the session, post-processing); ``yolo_graph`` makes one.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx

# onnxruntime >= 1.29 collects telemetry on Linux too: at import it writes a device id under
# ~/.cache, a session file into $TMPDIR that it never removes, and starts an uploader. A
# robot's detector does none of that unless its user asks (ORT_DISABLE_TELEMETRY=0).
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
import onnxruntime as ort  # after the line above, which it reads at import
from PIL import Image

from . import torch_gpu, yolov5_graph
from .weights import warn_random_weights
from .yolo_graph import NUM_CLASSES, build_yolov8n, check_input_size, model_bytes

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

PAD_VALUE = 114  # ultralytics' letterbox gray
MAX_DET = 300
_MAX_NMS = 30_000  # candidates kept for NMS, as ultralytics

_HOW_TO_FIX = (
    "Pass weights=PATH to a YOLOv5 checkpoint (yolov5n.pt, the HPRM paper's) or to a "
    "yolov8n.onnx exported by ultralytics (`yolo export model=yolov8n.pt format=onnx`)."
)
# weights files read as YOLOv5 checkpoints (torch's format); any other is an ONNX model
CHECKPOINT_SUFFIXES = (".pt", ".pth")


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
    """YOLO on onnxruntime (CUDA when available, else CPU).

    ``Detector()`` runs YOLOv8n's architecture with seeded random weights (and warns
    ``RandomWeightsWarning``); ``Detector(weights="yolov5n.pt")`` runs a YOLOv5 checkpoint
    at `input_size`; ``Detector(weights="yolov8n.onnx")`` runs an ultralytics export (the
    model's own static input size wins over `input_size`). `seed` is for random weights
    only.
    ``model`` says which network runs, for the logs.
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
        check_input_size(input_size)
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
        graph: bytes | None = None  # the model written here, or None: the ONNX file's
        if self.weights is None:
            graph = model_bytes(seed, input_size)
            warn_random_weights("YOLOv8n detector", _HOW_TO_FIX)
            self.model = f"YOLOv8n, seeded random weights (seed {seed})"
        elif self.weights.suffix in CHECKPOINT_SUFFIXES:
            graph = yolov5_graph.model_bytes(os.fspath(self.weights), input_size)
            self.model = f"YOLOv5 checkpoint {self.weights.name}"
        else:
            self.model = f"ONNX model {self.weights.name}"
        if graph is None:
            self._session = self._load(self.weights, options)
        else:
            self._session = ort.InferenceSession(graph, options, providers=_providers())
        # onnxruntime without its CUDA provider, on a machine whose PyTorch has a GPU: the same
        # graph on torch (torch_gpu says why).
        self._torch: torch_gpu.TorchRunner | None = None
        if _on_torch():
            model = onnx.load(self.weights) if graph is None else onnx.load_from_string(graph)
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
            raise FileNotFoundError(
                f"{path}: no such file (expected a YOLOv8 ONNX export, or a YOLOv5 "
                f"checkpoint named {' or '.join('*' + s for s in CHECKPOINT_SUFFIXES)})"
            )
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
