"""The detector: seeded, loadable from a file (an ONNX export, or the HPRM paper's own
YOLOv5 checkpoint finding real objects), says where it runs, and its pre- and
post-processing map boxes back to the original image (real onnxruntime, no mocks; the
graphs themselves: test_yolo_graph, test_yolov5_graph)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from carla_demo import torch_gpu, yolo
from carla_demo.weights import RandomWeightsWarning
from carla_demo.yolo import CAR, STOP_SIGN, Detector, build_yolov8n, letterbox, nms


def quiet_detector(**kwargs) -> Detector:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RandomWeightsWarning)
        return Detector(**kwargs)


@pytest.fixture(scope="module")
def seeded() -> Detector:
    return quiet_detector(seed=0)


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("weights") / "yolov8n.onnx"
    onnx.save(build_yolov8n(seed=0), path)
    return path


def raw(detector: Detector, image: np.ndarray) -> np.ndarray:
    return detector.infer(detector.preprocess(image)[0])


# --- the detector on the graph --------------------------------------------------------


def test_output_shape_and_value_ranges(seeded: Detector, image: np.ndarray) -> None:
    out = raw(seeded, image)
    assert out.shape == (1, 84, 8400)
    assert out.dtype == np.float32
    assert np.isfinite(out).all()
    scores = out[0, 4:]
    assert ((scores >= 0) & (scores <= 1)).all()
    assert (out[0, 2:4] >= 0).all()  # widths and heights
    # Activations neither vanished nor exploded: box sizes vary across anchors.
    assert out[0, 2:4].std() > 1.0


def test_smaller_input_size() -> None:
    detector = quiet_detector(input_size=320)
    tensor, _, _ = detector.preprocess(np.zeros((100, 200, 3), np.uint8))
    assert tensor.shape == (1, 3, 320, 320)
    assert detector.infer(tensor).shape == (1, 84, 40 * 40 + 20 * 20 + 10 * 10)


# --- where inference runs -----------------------------------------------------------


def test_inference_device_says_where_and_why(seeded: Detector) -> None:
    """The A/B report names the detector's engine; a CPU run says why no GPU was used."""
    device = yolo.inference_device()
    why = torch_gpu.unavailable()
    if "CUDAExecutionProvider" in ort.get_available_providers() or why is None:
        assert device.startswith("GPU")
    else:
        assert device == f"CPU (onnxruntime; no GPU engine: {why})"
        assert seeded.device.startswith("CPUExecutionProvider (onnxruntime ")


@pytest.mark.skipif(
    torch_gpu.unavailable() is not None or "CUDAExecutionProvider" in ort.get_available_providers(),
    reason=f"the torch engine runs only without onnxruntime CUDA: {torch_gpu.unavailable()}",
)
def test_torch_gpu_runs_the_same_graph(
    seeded: Detector, model_file: Path, image: np.ndarray
) -> None:
    """On a GPU with PyTorch and no onnxruntime CUDA, the detector runs the same ONNX graph
    on torch: its output is onnxruntime's on the CPU up to float rounding (TF32 convolutions),
    and repeatable call to call (the HPRM variants must reproduce the floor's controls)."""
    assert seeded.device.startswith("cuda: ")
    tensor = seeded.preprocess(image)[0]
    cpu = ort.InferenceSession(model_file.read_bytes(), providers=["CPUExecutionProvider"])
    (expected,) = cpu.run(None, {"images": tensor})
    gpu = seeded.infer(tensor)
    assert gpu.dtype == np.float32 and gpu.shape == expected.shape
    assert np.abs(gpu - expected).max() <= 1e-2 * np.abs(expected).max()
    np.testing.assert_array_equal(gpu, seeded.infer(tensor))
    loaded = Detector(weights=model_file)  # a weights file takes the same engine
    assert loaded.device == seeded.device
    np.testing.assert_array_equal(loaded.infer(tensor), gpu)


# --- seeding, weights file ----------------------------------------------------------


def test_seeded_determinism(seeded: Detector, image: np.ndarray) -> None:
    other = quiet_detector(seed=0)
    np.testing.assert_array_equal(raw(seeded, image), raw(other, image))
    first, second = seeded(image), other(image)
    assert first.dtype == np.float32 and first.shape[1] == 6
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(raw(seeded, image), raw(quiet_detector(seed=1), image))


def test_random_weights_warn(image: np.ndarray) -> None:
    with pytest.warns(RandomWeightsWarning, match="weights=PATH"):
        detector = Detector(seed=0)
    assert detector.random_weights


def test_weights_file_round_trip(seeded: Detector, model_file: Path, image: np.ndarray) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RandomWeightsWarning)
        loaded = Detector(weights=model_file)
    assert not loaded.random_weights
    assert loaded.input_size == 640
    np.testing.assert_array_equal(raw(loaded, image), raw(seeded, image))
    np.testing.assert_array_equal(loaded(image), seeded(image))


def test_dynamic_axes_export_loads(seeded: Detector, tmp_path: Path, image: np.ndarray) -> None:
    """`yolo export ... dynamic=True` names its axes instead of fixing them."""
    model = build_yolov8n(seed=0)
    axes = {
        model.graph.input[0].name: ["batch", None, "height", "width"],
        model.graph.output[0].name: ["batch", None, "anchors"],
    }
    for value in (model.graph.input[0], model.graph.output[0]):
        for dim, name in zip(value.type.tensor_type.shape.dim, axes[value.name], strict=True):
            if name:
                dim.dim_param = name
    path = tmp_path / "dynamic.onnx"
    onnx.save(model, path)
    loaded = Detector(weights=str(path))
    assert loaded.input_size == 640
    np.testing.assert_array_equal(raw(loaded, image), raw(seeded, image))


def test_missing_weights_file(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "yolov8n.onnx"
    with pytest.raises(FileNotFoundError, match=re.escape(str(path))):
        Detector(weights=path)


def test_not_an_onnx_file(tmp_path: Path) -> None:
    path = tmp_path / "yolov8n.onnx"
    path.write_text("definitely not a protobuf\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}: not an ONNX model: ")):
        Detector(weights=path)


def tiny_model(path: Path, in_shape: list[int], out_shape: list[int]) -> Path:
    """A one-node model (Reshape) with the given input and output shapes."""
    shape = numpy_helper.from_array(np.array(out_shape, dtype=np.int64), "shape")
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["images", "shape"], ["output0"])],
        "tiny",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, in_shape)],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, out_shape)],
        [shape],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def test_wrong_output_shape(tmp_path: Path) -> None:
    path = tiny_model(tmp_path / "tiny.onnx", [1, 3, 32, 32], [1, 6, 512])
    with pytest.raises(ValueError) as info:
        Detector(weights=path)
    message = str(info.value)
    assert str(path) in message
    assert "(1, 84, N)" in message and "[1, 6, 512]" in message


def test_wrong_input_shape(tmp_path: Path) -> None:
    path = tiny_model(tmp_path / "gray.onnx", [1, 1, 64, 42], [1, 84, 32])
    with pytest.raises(ValueError) as info:
        Detector(weights=path)
    message = str(info.value)
    assert str(path) in message
    assert "(1, 3, S, S)" in message and "[1, 1, 64, 42]" in message


def _papers_weights() -> Path:
    """The HPRM paper's yolov5n.pt: $HPRM_YOLOV5_WEIGHTS, or ../shared/models beside the
    repository (where CI has it); never part of the repository (AGPL-3.0 weights)."""
    beside = Path(__file__).resolve().parents[4] / "shared/models/yolov5n.pt"
    path = Path(os.environ.get("HPRM_YOLOV5_WEIGHTS") or beside)
    if not path.is_file():
        pytest.skip(f"no yolov5n.pt at {path} (set HPRM_YOLOV5_WEIGHTS): real detections unchecked")
    return path


def test_the_papers_yolov5n_finds_grace_hopper_and_her_tie(recwarn) -> None:
    """Real weights on a real photograph (matplotlib's sample of Grace Hopper, 512x600): a
    person filling the frame and a tie below her chin, where the tie is."""
    from matplotlib import cbook
    from PIL import Image

    photo = np.asarray(Image.open(cbook.get_sample_data("grace_hopper.jpg")).convert("RGB"))
    detector = Detector(_papers_weights())
    assert not detector.random_weights and detector.model == "YOLOv5 checkpoint yolov5n.pt"
    assert not [w for w in recwarn if issubclass(w.category, RandomWeightsWarning)]
    found = {yolo.COCO_NAMES[int(c)]: (box, score) for *box, score, c in detector(photo)[::-1]}
    assert {"person", "tie"} <= set(found), found  # (best of each class kept)
    (x1, y1, x2, y2), _ = found["person"]
    assert (x2 - x1) * (y2 - y1) > 0.6 * 512 * 600, found["person"]
    (x1, y1, x2, y2), _ = found["tie"]
    assert 180 < x1 < x2 < 340 and 380 < y1 < y2 <= 600, found["tie"]


def test_a_file_that_is_no_yolov5_checkpoint_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "yolov8n.pt").write_bytes(b"\x80\x02}q\x00.")  # a bare pickle, not torch's zip
    with pytest.raises(ValueError, match=r"yolov8n.pt: not a torch checkpoint"):
        Detector(tmp_path / "yolov8n.pt")
    with pytest.raises(FileNotFoundError, match=r"absent.pt: no such checkpoint"):
        Detector(tmp_path / "absent.pt")


# --- pre- and post-processing ---------------------------------------------------------


def test_letterbox_geometry() -> None:
    image = np.zeros((600, 960, 3), np.uint8)
    image[300:, :] = 255  # bottom half white
    tensor, scale, pad = letterbox(image, 640)
    assert tensor.shape == (1, 3, 640, 640) and tensor.dtype == np.float32
    assert scale == pytest.approx(2 / 3)
    assert pad == (0, 120)  # 960x600 -> 640x400, centred vertically
    gray = 114 / 255
    np.testing.assert_allclose(tensor[0, :, :120], gray, atol=1e-6)
    np.testing.assert_allclose(tensor[0, :, 520:], gray, atol=1e-6)
    assert tensor[0, :, 125:315].max() == 0.0  # top half black
    assert tensor[0, :, 325:515].min() == 1.0  # bottom half white
    # A portrait image pads left and right.
    tensor, scale, pad = letterbox(np.zeros((640, 320, 3), np.uint8), 320)
    assert (scale, pad) == (0.5, (80, 0))


def test_letterbox_rejects_non_rgb_uint8() -> None:
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        letterbox(np.zeros((10, 10), np.uint8), 64)
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        letterbox(np.zeros((10, 10, 3), np.float32), 64)


def test_nms_is_class_aware() -> None:
    boxes = np.array(
        [
            [0, 0, 100, 100],  # 0: best car
            [5, 5, 105, 105],  # 1: car overlapping 0 (IoU ~0.82): suppressed
            [5, 5, 105, 105],  # 2: stop sign at the same place: kept
            [200, 200, 260, 260],  # 3: far away car: kept
            [0, 0, 100, 60],  # 4: car, IoU 0.6 with 0 -> kept at 0.7, dropped at 0.5
        ],
        dtype=np.float32,
    )
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    classes = np.array([CAR, CAR, STOP_SIGN, CAR, CAR])
    np.testing.assert_array_equal(nms(boxes, scores, classes, 0.7), [0, 2, 3, 4])
    np.testing.assert_array_equal(nms(boxes, scores, classes, 0.5), [0, 2, 3])
    np.testing.assert_array_equal(nms(boxes, scores, classes, 0.5, max_det=2), [0, 2])
    # Order follows the scores, not the input.
    np.testing.assert_array_equal(nms(boxes[::-1], scores[::-1], classes[::-1], 0.5), [4, 2, 1])
    assert nms(np.zeros((0, 4)), np.zeros(0), np.zeros(0), 0.5).shape == (0,)


def crafted_raw(entries: list[tuple[tuple[float, float, float, float], int, float]]) -> np.ndarray:
    """A (1, 84, 8400) raw output, near-zero scores but for `entries`: ((x1, y1, x2, y2)
    in letterboxed pixels, class id, score) at anchors 0, 1, ..."""
    raw = np.zeros((1, 84, 8400), np.float32)
    raw[0, 4:] = 1e-3
    raw[0, :4] = [[320], [320], [10], [10]]
    for anchor, ((x1, y1, x2, y2), cls, score) in enumerate(entries):
        raw[0, :4, anchor] = [(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1]
        raw[0, 4 + cls, anchor] = score
    return raw


def test_postprocess_maps_boxes_back_to_the_image() -> None:
    scale, pad, shape = 2 / 3, (0, 120), (600, 960, 3)

    def to_letterbox(x1: float, y1: float, x2: float, y2: float) -> tuple[float, ...]:
        return (x1 * scale, y1 * scale + pad[1], x2 * scale, y2 * scale + pad[1])

    stop = (100.0, 200.0, 300.0, 400.0)
    raw = crafted_raw(
        [
            (to_letterbox(*stop), STOP_SIGN, 0.9),
            (to_letterbox(110, 205, 305, 410), STOP_SIGN, 0.8),  # duplicate: suppressed
            (to_letterbox(*stop), CAR, 0.7),  # other class: kept
            (to_letterbox(500, 100, 600, 200), CAR, 0.1),  # below conf_threshold
            (to_letterbox(900, -50, 1000, 50), CAR, 0.6),  # clipped to the image
        ]
    )
    out = yolo._postprocess(raw, scale, pad, shape, conf_threshold=0.25, iou_threshold=0.45)
    assert out.dtype == np.float32
    expected = [
        [*stop, 0.9, STOP_SIGN],
        [*stop, 0.7, CAR],
        [900, 0, 960, 50, 0.6, CAR],
    ]
    np.testing.assert_allclose(out, expected, atol=1e-3)


def test_postprocess_empty_and_capped() -> None:
    empty = yolo._postprocess(crafted_raw([]), 1.0, (0, 0), (640, 640, 3))
    assert empty.shape == (0, 6) and empty.dtype == np.float32
    # 400 disjoint boxes: capped at 300, best first.
    entries = [
        ((x * 32.0, y * 32.0, x * 32.0 + 16, y * 32.0 + 16), CAR, 0.3 + i / 1000)
        for i, (y, x) in enumerate(np.ndindex(20, 20))
    ]
    out = yolo._postprocess(crafted_raw(entries), 1.0, (0, 0), (640, 640, 3))
    assert out.shape == (300, 6)
    assert (np.diff(out[:, 4]) <= 0).all()
    assert out[0, 4] == pytest.approx(0.699)


def test_detector_call_end_to_end(seeded: Detector, image: np.ndarray) -> None:
    out = seeded(image)
    assert out.ndim == 2 and out.shape[1] == 6 and out.dtype == np.float32
    assert len(out) <= yolo.MAX_DET
    if len(out):
        assert (out[:, [0, 2]] <= 960).all() and (out[:, [1, 3]] <= 600).all()
        assert (out[:, :4] >= 0).all() and (out[:, 4] > seeded.conf_threshold).all()


def test_coco_constants() -> None:
    assert len(yolo.COCO_NAMES) == 80
    constants = ("PERSON", "BICYCLE", "CAR", "MOTORCYCLE", "BUS", "TRUCK", "TRAFFIC_LIGHT")
    for constant in (*constants, "STOP_SIGN"):
        class_id = getattr(yolo, constant)
        assert yolo.COCO_NAMES[class_id] == constant.lower().replace("_", " ")


def test_importing_the_detector_leaves_no_telemetry_files(tmp_path: Path) -> None:
    """onnxruntime >= 1.29 writes a session file into $TMPDIR and a device id under
    ~/.cache at import unless telemetry is off; the detector turns it off."""
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORT_")}
    env.update(HOME=str(home), TMPDIR=str(tmp), XDG_CACHE_HOME=str(home / ".cache"))
    r = subprocess.run([sys.executable, "-c", "import carla_demo.yolo"], env=env,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert list(tmp.iterdir()) == []
    assert not (home / ".cache" / "Microsoft").exists()
