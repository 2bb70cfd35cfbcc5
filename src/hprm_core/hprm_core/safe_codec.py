"""The pickle-free encoding of ``serialization``'s ``mode="safe"``.

Why a second encoding: unpickling is code execution, so a link that must
not trust its peer cannot use pickle at all, not even "restricted". Safe mode
encodes plain data only: None, bool, int, float, str, bytes, list, tuple,
dict with msgpack; numpy arrays of plain dtypes as dtype + shape + raw
buffer; pyarrow tables and arrays as Arrow IPC streams. Large buffers go out
of band exactly as in pickle mode (the ``sink``). Decoding never calls
pickle and checks every descriptor (dtype, shape, length, format) before
building anything from it.
"""

from __future__ import annotations

import pickle
from typing import Any, Protocol

import msgpack
import numpy as np

from hprm_core.errors import SerializationError

_EXT_NDARRAY = 1
_EXT_BYTES = 2
_EXT_ARROW = 3
_EXT_TUPLE = 4
_SAFE_FORMATS = frozenset("bBhHiIlLqQfdc?") | {"e"}


class Sink(Protocol):
    """Where out-of-band buffers go (serialization's ``_Sink``)."""

    threshold: int
    keep: list[Any]

    def add(self, raw: memoryview) -> int: ...


def _flat(buf: Any) -> memoryview:
    mv = buf.raw() if isinstance(buf, pickle.PickleBuffer) else memoryview(buf)
    return mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")


def describe_type(obj: Any) -> str:
    t = type(obj)
    return f"a {t.__module__}.{t.__qualname__}" if t.__module__ != "builtins" else f"a {t.__name__}"


def pack(obj: Any, sink: Sink) -> bytes:
    try:
        return msgpack.packb(_walk(obj, sink, "obj"), use_bin_type=True)
    except SerializationError:
        raise
    except (OverflowError, ValueError, TypeError) as e:
        raise SerializationError(f"safe mode cannot encode the value: {e}") from e


def _oob_or_inline(mv: memoryview, sink: Sink) -> int | bytes:
    return sink.add(mv) if mv.nbytes >= sink.threshold else mv.tobytes()


def _walk(x: Any, sink: Sink, path: str) -> Any:
    t = type(x)
    if x is None or t is bool or t is int or t is float or t is str:
        if t is int and not -(1 << 63) <= x < (1 << 64):
            raise SerializationError(f"safe mode: {path} is an int too large for 64 bits")
        return x
    if t is bytes:
        if len(x) < sink.threshold:
            return x
        return msgpack.ExtType(_EXT_BYTES, msgpack.packb(["b", sink.add(memoryview(x))]))
    if t is bytearray:
        return msgpack.ExtType(_EXT_BYTES, msgpack.packb(["ba", _oob_or_inline(_flat(x), sink)]))
    if t is memoryview:
        if x.format not in _SAFE_FORMATS:
            raise SerializationError(f"safe mode: {path} is a memoryview of format {x.format!r}")
        data = _flat(x) if x.contiguous else memoryview(x.tobytes())
        body = ["mv", _oob_or_inline(data, sink), x.format, list(x.shape)]
        return msgpack.ExtType(_EXT_BYTES, msgpack.packb(body))
    if t is list:
        return [_walk(v, sink, f"{path}[{i}]") for i, v in enumerate(x)]
    if t is tuple:
        inner = [_walk(v, sink, f"{path}[{i}]") for i, v in enumerate(x)]
        return msgpack.ExtType(_EXT_TUPLE, msgpack.packb(inner, use_bin_type=True))
    if t is dict:
        return {_walk(k, sink, f"{path} key"): _walk(v, sink, f"{path}[{k!r}]")
                for k, v in x.items()}  # fmt: skip
    if t is np.ndarray or isinstance(x, np.generic):
        arr = np.asarray(x)
        if arr.dtype.hasobject or arr.dtype.fields is not None or arr.dtype.subdtype is not None:
            raise SerializationError(
                f"safe mode: {path} is a numpy array of dtype {arr.dtype}; only plain "
                "numeric/bool/bytes dtypes are allowed"
            )
        data = np.ascontiguousarray(arr)
        body = [arr.dtype.str, list(arr.shape), _oob_or_inline(_flat(data.reshape(-1)), sink),
                t is not np.ndarray]  # fmt: skip
        return msgpack.ExtType(_EXT_NDARRAY, msgpack.packb(body, use_bin_type=True))
    mod = t.__module__ or ""
    if mod.startswith("pyarrow"):
        return _arrow_ext(x, sink, path)
    raise SerializationError(
        f"safe mode cannot serialize {path}: {describe_type(x)} (allowed: None, bool, int, float, "
        "str, bytes, bytearray, memoryview, list, tuple, dict, numpy arrays, pyarrow "
        "tables/arrays; use mode='pickle' between trusted peers)"
    )


def _arrow_ext(x: Any, sink: Sink, path: str) -> msgpack.ExtType:
    import pyarrow as pa

    if isinstance(x, pa.Table):
        kind, table = "table", x
    elif isinstance(x, pa.RecordBatch):
        kind, table = "batch", pa.Table.from_batches([x])
    elif isinstance(x, pa.Array):
        kind, table = "array", pa.table({"a": x})
    else:
        raise SerializationError(
            f"safe mode cannot serialize {path}: {describe_type(x)} (pyarrow: Table, RecordBatch, "
            "Array only)"
        )
    out = pa.BufferOutputStream()
    with pa.ipc.new_stream(out, table.schema) as w:
        w.write_table(table)
    buf = out.getvalue()
    sink.keep.append(buf)
    return msgpack.ExtType(_EXT_ARROW, msgpack.packb([kind, _oob_or_inline(memoryview(buf), sink)]))


def unpack(payload: memoryview, buffers: list[Any]) -> Any:
    def data(x: Any) -> Any:
        if isinstance(x, bytes):
            return x
        if type(x) is int and 0 <= x < len(buffers):
            return buffers[x]
        raise SerializationError(f"safe payload refers to out-of-band item {x!r:.40}")

    def hook(code: int, body: bytes) -> Any:
        if code == _EXT_TUPLE:
            return tuple(msgpack.unpackb(body, ext_hook=hook, raw=False, strict_map_key=False))
        v = msgpack.unpackb(body, raw=False)
        if not isinstance(v, list):
            raise SerializationError(f"malformed msgpack extension {code}")
        if code == _EXT_NDARRAY and len(v) == 4:
            return _safe_array(v[0], v[1], data(v[2]), v[3])
        if code == _EXT_BYTES and len(v) == 2:
            buf = data(v[1])
            if v[0] == "b":
                return bytes(buf)
            if v[0] == "ba":
                return bytearray(buf)
        if code == _EXT_BYTES and len(v) == 4 and v[0] == "mv":
            return _safe_memoryview(data(v[1]), v[2], v[3])
        if code == _EXT_ARROW and len(v) == 2:
            return _safe_arrow(v[0], data(v[1]))
        raise SerializationError(f"unknown or malformed msgpack extension type {code}")

    try:
        return msgpack.unpackb(payload, ext_hook=hook, raw=False, strict_map_key=False)
    except SerializationError:
        raise
    except Exception as e:
        raise SerializationError(f"corrupt safe payload: {type(e).__name__}: {e}") from e


def _safe_array(dtype: Any, shape: Any, buf: Any, scalar: Any) -> Any:
    if not isinstance(dtype, str) or not isinstance(shape, list):
        raise SerializationError("malformed array descriptor in safe payload")
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise SerializationError(f"bad dtype {dtype!r:.40} in safe payload") from e
    if dt.hasobject or dt.fields is not None:
        raise SerializationError(f"refused dtype {dt} in safe payload")
    if not all(type(s) is int and s >= 0 for s in shape):
        raise SerializationError(f"bad shape {shape!r:.60} in safe payload")
    count = int(np.prod(shape, dtype=np.int64))
    if count * dt.itemsize != memoryview(buf).nbytes:
        raise SerializationError(
            f"array {dt} {tuple(shape)} needs {count * dt.itemsize} bytes, got "
            f"{memoryview(buf).nbytes}"
        )
    arr = np.frombuffer(buf, dt, count).reshape(shape)
    return arr[()] if scalar else arr


def _safe_memoryview(buf: Any, fmt: Any, shape: Any) -> memoryview:
    mv = _flat(buf)
    if fmt not in _SAFE_FORMATS or not isinstance(shape, list):
        raise SerializationError(f"refused memoryview format {fmt!r:.20} in safe payload")
    try:
        return mv.cast(fmt, shape) if (fmt, shape) != ("B", [mv.nbytes]) else mv
    except (TypeError, ValueError) as e:
        raise SerializationError(f"bad memoryview shape {shape!r:.40} in safe payload") from e


def _safe_arrow(kind: Any, buf: Any) -> Any:
    import pyarrow as pa

    try:
        table = pa.ipc.open_stream(pa.py_buffer(buf)).read_all()
        table.validate(full=True)
    except (pa.ArrowException, ValueError) as e:
        raise SerializationError(f"corrupt Arrow IPC stream in safe payload: {e}") from e
    if kind == "table":
        return table
    if kind == "batch":
        batches = table.to_batches()
        return batches[0] if len(batches) == 1 else table.combine_chunks().to_batches()[0]
    if kind == "array" and table.num_columns == 1:
        col = table.column(0)
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    raise SerializationError(f"unknown Arrow payload kind {kind!r:.20}")
