"""Torch checkpoints written without torch, for the tests of ``carla_demo.torch_checkpoint``'s
readers: ``data.pkl`` names the functions and classes that ``torch.save``'s would (fake
modules stand in for them while pickling), and the storages lie beside it, as torch's zip
format lays them out."""

from __future__ import annotations

import io
import os
import pickle
import sys
import types
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

_STORAGES = {np.float32: "FloatStorage", np.float16: "HalfStorage", np.int64: "LongStorage"}


class _Storage:
    """A tensor's storage: pickled as torch does, by a persistent id naming its file."""

    def __init__(self, pid: tuple) -> None:
        self.pid = pid


class Module:
    """An object of class ``kind`` (``models.common.Conv``) as pickle saves one: its class
    by name, then ``state`` (an ``nn.Module``'s ``__dict__``)."""

    def __init__(self, kind: str, **state: Any) -> None:
        self.kind, self.state = kind, state


class Parameter:
    """An ``nn.Parameter``: torch pickles it through ``torch._utils._rebuild_parameter``."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array


def nn_module(kind: str, modules=(), parameters=(), buffers=(), **attrs: Any) -> Module:
    """``kind`` with the registries an ``nn.Module``'s ``__dict__`` has."""
    return Module(
        kind, training=False, _parameters=OrderedDict(parameters), _buffers=OrderedDict(buffers),
        _modules=OrderedDict(modules), **attrs,
    )  # fmt: skip


def write_exploit(path: Path, key: str, marker: Path) -> None:
    """A checkpoint whose ``key`` is an object that, unpickled by ``pickle``, runs
    ``touch marker``: a reader that runs no code from the file leaves no marker."""

    class Exploit:
        def __reduce__(self) -> tuple:
            return (os.system, (f"touch {marker}",))

    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps({key: Exploit()}, protocol=2))


def write_checkpoint(path: Path, saved: Any) -> None:
    """``saved`` (dicts, lists, numbers, strings, numpy arrays as tensors, `Module` and
    `Parameter` objects) as ``torch.save(saved, path)`` would write it."""
    fakes: dict[str, types.ModuleType] = {}
    named: dict[str, Any] = {}

    def name(kind: str, obj: Any = None) -> Any:
        """``obj`` (or a new class) registered as ``kind`` in a fake module."""
        if kind not in named:
            module, _, attr = kind.rpartition(".")
            obj = obj or type(attr, (), {})
            obj.__module__, obj.__qualname__ = module, attr
            parts = module.split(".")
            for i in range(len(parts)):  # the module and its parents, importable by name
                dotted = ".".join(parts[: i + 1])
                sys.modules[dotted] = fakes.setdefault(dotted, types.ModuleType(dotted))
            setattr(fakes[module], attr, obj)
            named[kind] = obj
        return named[kind]

    def never(*_: Any) -> None:
        raise AssertionError("never called while writing")

    storages: dict[str, np.ndarray] = {}

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj: Any) -> Any:
            return obj.pid if isinstance(obj, _Storage) else None

        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, Module):
                return name(obj.kind), (), obj.state
            if isinstance(obj, Parameter):
                rebuild = name("torch._utils._rebuild_parameter", lambda *_: never())
                return rebuild, (obj.array, False, OrderedDict())
            if isinstance(obj, np.ndarray):
                array = np.ascontiguousarray(obj)
                key = str(len(storages))
                storages[key] = array
                dtype = name(f"torch.{_STORAGES[array.dtype.type]}")
                stride = tuple(s // array.itemsize for s in array.strides)
                rebuild = name("torch._utils._rebuild_tensor_v2", lambda *_: never())
                storage = _Storage(("storage", dtype, key, "cpu", array.size))
                return rebuild, (storage, 0, array.shape, stride, False, OrderedDict())
            return NotImplemented

    saved_modules = sys.modules.copy()  # the fakes go in while pickling, then out
    buffer = io.BytesIO()
    try:
        Pickler(buffer, protocol=2).dump(saved)
    finally:
        sys.modules.clear()
        sys.modules.update(saved_modules)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", buffer.getvalue())
        for key, array in storages.items():
            archive.writestr(f"archive/data/{key}", array.tobytes())
