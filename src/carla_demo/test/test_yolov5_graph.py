"""A YOLOv5 checkpoint's network written as ONNX (``yolov5_graph``): the graph computes what
YOLOv5's own forward computes, on a small checkpoint of every layer kind written by the test
and checked against a numpy forward of YOLOv5's modules (BatchNorm unfolded, the Detect
head's decoding as ``models/yolo.py`` writes it); wrong files are refused by name, and
reading one runs no code from it. The HPRM paper's own ``yolov5n.pt`` on a real photograph:
test_yolo."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import onnxruntime as ort
import pytest

from carla_demo.yolov5_graph import build_yolov5, model_bytes

from .torch_files import Module, Parameter, nn_module, write_checkpoint, write_exploit

RNG = np.random.default_rng(5)
SIZE = 64  # the input's side: levels of 8x8, 4x4 and 2x2 cells
ANCHORS = np.array([[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119],
                    [116, 90, 156, 198, 373, 326]], np.float32).reshape(3, 3, 2)  # fmt: skip
STRIDES = np.array([8, 16, 32], np.float32)


# --- a checkpoint of every layer kind, and YOLOv5's forward of it in numpy -------------


def _conv2d(c1, c2, k, s, p, bias=False):
    w = (RNG.standard_normal((c2, c1, k, k)) / np.sqrt(c1 * k * k)).astype(np.float16)
    b = Parameter(RNG.standard_normal(c2).astype(np.float32) * 0.1) if bias else None
    return nn_module("torch.nn.modules.conv.Conv2d", parameters={"weight": Parameter(w), "bias": b},
                     in_channels=c1, out_channels=c2, kernel_size=(k, k), stride=(s, s),
                     padding=(p, p), groups=1)  # fmt: skip


def _conv(c1, c2, k=1, s=1, p=None, **layer):
    bn = nn_module(
        "torch.nn.modules.batchnorm.BatchNorm2d", eps=0.001,
        parameters={"weight": Parameter(RNG.uniform(0.5, 1.5, c2).astype(np.float32)),
                    "bias": Parameter(RNG.standard_normal(c2).astype(np.float32) * 0.1)},
        buffers={"running_mean": RNG.standard_normal(c2).astype(np.float32) * 0.1,
                 "running_var": RNG.uniform(0.5, 2.0, c2).astype(np.float32),
                 "num_batches_tracked": np.array(7, np.int64)},
    )  # fmt: skip
    act = nn_module("torch.nn.modules.activation.SiLU", inplace=True)
    conv = _conv2d(c1, c2, k, s, k // 2 if p is None else p)
    return nn_module("models.common.Conv", {"conv": conv, "bn": bn, "act": act}, **layer)


def _sequential(kind, items):
    return nn_module(kind, {str(i): m for i, m in enumerate(items)})


def _c3(c1, c2, shortcut, **layer):
    c = c2 // 2
    block = nn_module("models.common.Bottleneck", {"cv1": _conv(c, c), "cv2": _conv(c, c, 3)},
                      add=shortcut)  # fmt: skip
    return nn_module("models.common.C3", {
        "cv1": _conv(c1, c), "cv2": _conv(c1, c), "cv3": _conv(2 * c, c2),
        "m": _sequential("torch.nn.modules.container.Sequential", [block]),
    }, **layer)  # fmt: skip


def _layers():
    pool = nn_module("torch.nn.modules.pooling.MaxPool2d", kernel_size=5, stride=1, padding=2)
    sppf = nn_module("models.common.SPPF", {"cv1": _conv(16, 8), "cv2": _conv(32, 16), "m": pool},
                     f=-1)  # fmt: skip
    heads = [_conv2d(16, 255, 1, 1, 0, bias=True) for _ in range(3)]
    detect = nn_module(
        "models.yolo.Detect", {"m": _sequential("torch.nn.modules.container.ModuleList", heads)},
        buffers={"anchors": ANCHORS / STRIDES[:, None, None]}, nc=80, no=85, nl=3, na=3,
        stride=STRIDES, f=[4, 9, 6],
    )  # fmt: skip
    upsample = nn_module("torch.nn.modules.upsampling.Upsample", scale_factor=2.0,
                         mode="nearest", f=-1)  # fmt: skip
    return [
        _conv(3, 8, 6, 2, 2, f=-1),  # /2, as YOLOv5's first layer
        _conv(8, 16, 3, 2, f=-1),  # /4
        _c3(16, 16, True, f=-1),
        _conv(16, 16, 3, 2, f=-1),  # /8
        sppf,  # 4: P3
        _conv(16, 16, 3, 2, f=-1),  # 5: /16
        _conv(16, 16, 3, 2, f=-1),  # 6: P5, /32
        upsample,
        nn_module("models.common.Concat", d=1, f=[-1, 5]),
        _c3(32, 16, False, f=-1),  # 9: P4
        detect,
    ]


def _checkpoint(path, layers, nc=80):
    model = nn_module("models.yolo.Model", {"model": _sequential(
        "torch.nn.modules.container.Sequential", layers)}, nc=nc, names=[str(i) for i in range(nc)],
        yaml={"nc": nc})  # fmt: skip
    write_checkpoint(path, {"epoch": -1, "model": model, "ema": None, "optimizer": None})


def _p(module, name):
    value = module.state["_parameters"][name]
    return None if value is None else value.array.astype(np.float32)


def _np_conv2d(x, m):
    w, (s, _), (p, _) = _p(m, "weight"), m.state["stride"], m.state["padding"]
    k = w.shape[2]
    x = np.pad(x, ((0, 0), (p, p), (p, p)))
    win = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(1, 2))[:, ::s, ::s]
    y = np.einsum("chwij,ocij->ohw", win, w)
    b = _p(m, "bias")
    return y if b is None else y + b[:, None, None]


def _np_conv(x, m):
    mods = m.state["_modules"]
    bn = mods["bn"].state
    y = _np_conv2d(x, mods["conv"])
    mean, var = bn["_buffers"]["running_mean"], bn["_buffers"]["running_var"]
    y = (y - mean[:, None, None]) / np.sqrt(var + bn["eps"])[:, None, None]
    y = y * _p(mods["bn"], "weight")[:, None, None] + _p(mods["bn"], "bias")[:, None, None]
    return y / (1 + np.exp(-y))


def _np_pool(x, k):
    x = np.pad(x, ((0, 0), (k // 2, k // 2), (k // 2, k // 2)), constant_values=-np.inf)
    return np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(1, 2)).max(axis=(3, 4))


def _np_forward(layers, image):
    """YOLOv5's Model.forward at inference: (N, 85) rows of xywh, obj, 80 class probs."""
    ys = []
    x = image
    for layer in layers:
        kind, f, mods = layer.kind.rsplit(".", 1)[1], layer.state["f"], layer.state["_modules"]
        x = [ys[j] for j in f] if isinstance(f, list) else (x if f == -1 else ys[f])
        if kind == "Conv":
            x = _np_conv(x, layer)
        elif kind == "C3":
            y = _np_conv(x, mods["cv1"])
            for b in mods["m"].state["_modules"].values():
                bm = b.state["_modules"]
                z = _np_conv(_np_conv(y, bm["cv1"]), bm["cv2"])
                y = y + z if b.state["add"] else z
            x = _np_conv(np.concatenate([y, _np_conv(x, mods["cv2"])]), mods["cv3"])
        elif kind == "SPPF":
            y0 = _np_conv(x, mods["cv1"])
            y1 = _np_pool(y0, 5)
            y2 = _np_pool(y1, 5)
            x = _np_conv(np.concatenate([y0, y1, y2, _np_pool(y2, 5)]), mods["cv2"])
        elif kind == "Upsample":
            x = x.repeat(2, axis=1).repeat(2, axis=2)
        elif kind == "Concat":
            x = np.concatenate(x)
        elif kind == "Detect":
            z = []
            for i, conv in enumerate(mods["m"].state["_modules"].values()):
                _, ny, nx = x[i].shape
                y = _np_conv2d(x[i], conv).reshape(3, 85, ny, nx).transpose(0, 2, 3, 1)
                y = 1 / (1 + np.exp(-y))
                yv, xv = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
                grid = np.stack((xv, yv), 2) - 0.5
                anchor_grid = (layer.state["_buffers"]["anchors"][i] * STRIDES[i])[:, None, None]
                xy = (y[..., :2] * 2 + grid) * STRIDES[i]
                wh = (y[..., 2:4] * 2) ** 2 * anchor_grid
                z.append(np.concatenate([xy, wh, y[..., 4:]], -1).reshape(-1, 85))
            x = np.concatenate(z)
        ys.append(x)
    return x


# --- the tests --------------------------------------------------------------------------


def test_the_graph_computes_what_yolov5s_forward_computes(tmp_path):
    layers = _layers()
    _checkpoint(tmp_path / "small.pt", layers)
    image = RNG.uniform(0, 1, (1, 3, SIZE, SIZE)).astype(np.float32)
    session = ort.InferenceSession(model_bytes(tmp_path / "small.pt", SIZE),
                                   providers=["CPUExecutionProvider"])  # fmt: skip
    (out,) = session.run(None, {"images": image})
    ref = _np_forward(layers, image[0].astype(np.float64))  # (252, 85)
    want = np.concatenate([ref[:, :4], ref[:, 5:] * ref[:, 4:5]], 1).T[None]  # scores: obj * cls
    assert out.shape == (1, 84, 3 * (8 * 8 + 4 * 4 + 2 * 2)) == want.shape
    np.testing.assert_allclose(out, want, rtol=2e-3, atol=2e-3)
    assert out[0, 2:4].std() > 1 and out[0, 4:].std() > 1e-3  # nothing vanished


def test_files_that_are_not_yolov5_checkpoints_are_refused_by_name(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"none.pt: no such checkpoint"):
        build_yolov5(tmp_path / "none.pt")
    (tmp_path / "text.pt").write_text("weights")
    with pytest.raises(ValueError, match=r"text.pt: not a torch checkpoint \(File is not a zip"):
        build_yolov5(tmp_path / "text.pt")
    write_checkpoint(tmp_path / "roach.pth", {"policy_state_dict": {"w": np.zeros(3, np.float32)}})
    with pytest.raises(ValueError, match=r"roach.pth: not a YOLOv5 checkpoint"):
        build_yolov5(tmp_path / "roach.pth")
    _checkpoint(tmp_path / "voc.pt", _layers(), nc=20)
    with pytest.raises(ValueError, match=r"voc.pt: 20 classes, not COCO's 80"):
        build_yolov5(tmp_path / "voc.pt")
    focus = nn_module("models.common.Focus", f=-1)
    _checkpoint(tmp_path / "v5_5.pt", [focus, *_layers()[1:]])
    with pytest.raises(ValueError, match=r"v5_5.pt: model.0 is a models.common.Focus, which"):
        build_yolov5(tmp_path / "v5_5.pt")
    broken = _layers()
    del broken[1].state["_modules"]["bn"]
    _checkpoint(tmp_path / "broken.pt", broken)
    with pytest.raises(ValueError, match=r"broken.pt: model.1 \(models.common.Conv\) is not as"):
        build_yolov5(tmp_path / "broken.pt")
    _checkpoint(tmp_path / "headless.pt", _layers()[:-1])
    with pytest.raises(ValueError, match=r"headless.pt: its last layer is not a Detect head"):
        build_yolov5(tmp_path / "headless.pt")
    with pytest.raises(ValueError, match="input_size must be a positive multiple of 32"):
        build_yolov5(tmp_path / "small.pt", input_size=600)


def test_reading_a_checkpoint_runs_no_code_from_it(tmp_path):
    marker = tmp_path / "ran"
    write_exploit(tmp_path / "evil.pt", "model", marker)
    with pytest.raises(ValueError, match=r"evil.pt: not a YOLOv5 checkpoint"):
        build_yolov5(tmp_path / "evil.pt")
    assert not marker.exists()


def test_the_written_checkpoint_holds_what_a_module_tree_holds(tmp_path):
    """The test's own writer, read back: classes by name, parameters, buffers, OrderedDicts."""
    from carla_demo import torch_checkpoint

    conv = _conv(3, 4, 3)
    write_checkpoint(tmp_path / "c.pt", {"model": conv, "extra": Module("a.b.C", x=1)})
    saved = torch_checkpoint.load(tmp_path / "c.pt")
    read = saved["model"]
    assert read.kind == "models.common.Conv" and saved["extra"].attr("x") == 1
    weight = read.modules()["conv"].parameters()["weight"]
    assert weight.dtype == np.float16 and weight.shape == (4, 3, 3, 3)
    want = conv.state["_modules"]["conv"].state["_parameters"]["weight"].array
    assert np.array_equal(weight, want)
    assert isinstance(read.state["_modules"], OrderedDict)
    assert read.modules()["bn"].buffers()["num_batches_tracked"] == 7
