"""Torch checkpoints read without torch, and without running code from the file.

A ``.pt``/``.pth`` in torch's zip format is a pickle (``data.pkl``) whose tensors point at raw
storages stored beside it. Unpickling it with ``pickle`` or ``torch.load`` (before
``weights_only``) imports and calls whatever the file names, so a checkpoint from the
internet is a program. This reader resolves only torch's tensor and parameter rebuild
functions, its storage types and two plain containers; every other class the file names
(a model's ``nn.Module`` subclasses, gym spaces in Roach's kwargs) becomes an inert
`Pickled` object that keeps what the pickle hands it and does nothing. Tensors come back as
numpy arrays. The demo's two models both load through it: Roach's policy reads a state dict
(``policy``), YOLOv5's detector walks a pickled module tree (``yolov5_graph``).

Example::

    saved = load("yolov5n.pt")
    model = saved["model"]             # a Pickled: model.kind == "models.yolo.Model"
    layers = model.modules()["model"]  # its nn.Sequential, as a Pickled
"""

from __future__ import annotations

import os
import pickle
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CheckpointError", "Pickled", "load"]

_STORAGE_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


class CheckpointError(ValueError):
    """The file is not a torch checkpoint; ``reason`` says what was found instead, so that a
    model's loader can name the file once in its own message."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: not a torch checkpoint ({reason})")
        self.reason = reason


class Pickled:
    """Stands for any class a checkpoint names that is not a tensor: keeps the arguments
    and the state the pickle hands it and does nothing with them. ``kind`` is the class's
    dotted name in the file (``models.common.Conv``); for an ``nn.Module``, ``state`` is
    its ``__dict__`` and `modules`, `parameters`, `buffers` read its registries."""

    kind = "?"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.state: Any = None

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __repr__(self) -> str:
        return f"<Pickled {self.kind}>"

    def attr(self, name: str, default: Any = None) -> Any:
        """An attribute the module had when it was saved."""
        return self.state.get(name, default) if isinstance(self.state, dict) else default

    def modules(self) -> dict[str, Any]:
        return dict(self.attr("_modules") or {})

    def parameters(self) -> dict[str, Any]:
        return dict(self.attr("_parameters") or {})

    def buffers(self) -> dict[str, Any]:
        return dict(self.attr("_buffers") or {})


def load(path: str | os.PathLike[str]) -> Any:
    """What ``torch.save`` wrote to ``path``, tensors as numpy arrays, other classes as
    `Pickled`. Raises `CheckpointError` (a ``ValueError``) naming the file for anything
    that is not torch's zip format, ``FileNotFoundError`` if there is no file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such checkpoint")
    try:
        return _read(path)
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile,
            pickle.UnpicklingError, EOFError) as exc:  # fmt: skip
        raise CheckpointError(path, str(exc)) from None


def _read(path: Path) -> Any:
    with zipfile.ZipFile(path) as archive:
        pickled = next((n for n in archive.namelist() if n.endswith("/data.pkl")), None)
        if pickled is None:
            raise ValueError("no data.pkl inside: not torch's zip checkpoint format")
        root = pickled[: -len("data.pkl")]

        def storage(dtype: type, key: str) -> np.ndarray:
            return np.frombuffer(archive.read(f"{root}data/{key}"), dtype=dtype)

        def rebuild_tensor(
            data: np.ndarray, offset: int, size: tuple, stride: tuple, *_: Any
        ) -> np.ndarray:
            item = data.itemsize
            if not size:
                return data[offset : offset + 1].reshape(())
            return np.lib.stride_tricks.as_strided(
                data[offset:], shape=tuple(size), strides=tuple(s * item for s in stride)
            ).copy()

        def rebuild_parameter(data: np.ndarray, *_: Any) -> np.ndarray:
            return data  # an nn.Parameter is its tensor; requires_grad and hooks are training's

        safe = {
            ("torch._utils", "_rebuild_tensor_v2"): rebuild_tensor,
            ("torch._utils", "_rebuild_parameter"): rebuild_parameter,
            ("collections", "OrderedDict"): OrderedDict,
            ("builtins", "set"): set,
            ("__builtin__", "set"): set,  # protocol 2 pickles name builtins so
        }

        class Unpickler(pickle.Unpickler):
            def find_class(self, module: str, name: str) -> Any:
                if (module, name) in safe:
                    return safe[module, name]
                if module == "torch" and name in _STORAGE_DTYPES:
                    return _STORAGE_DTYPES[name]
                return type(name, (Pickled,), {"kind": f"{module}.{name}"})

            def persistent_load(self, pid: Any) -> np.ndarray:
                # ('storage', storage type, key, location, numel)
                _, dtype, key, _, _ = pid
                return storage(dtype, key)

        with archive.open(pickled) as stream:
            return Unpickler(stream).load()
