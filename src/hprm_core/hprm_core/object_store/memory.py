"""Views into mapped memory that numpy and Python code can hold: how a
producer's block stays allocated while Python objects point into it (see the
package docstring for the lifetime rule; a consumer's views are plain
``np.frombuffer`` arrays, tracked in ``arena_map.py``)."""

from __future__ import annotations

import ctypes
import logging
import mmap
import pickle
from collections.abc import Iterable
from typing import Any

import numpy as np

from hprm_core.object_store.ref import (
    ObjectStoreError,
)

log = logging.getLogger("hprm.object_store")


class _Lease:
    """Base object of every writable array :meth:`Store.alloc_array` hands out
    (zero-copy produce). numpy reads ``__array_interface__`` (raw address,
    shape, dtype, read-only flag) and keeps the lease as the array's base, so
    the lease lives exactly as long as some Python object points into the block.
    ``_mv`` is a slice of the arena's mmap: while it exists the mapping cannot
    be closed under the user's feet."""

    __slots__ = ("__array_interface__", "__weakref__", "_mv")

    def __init__(self, mv: memoryview, addr: int, shape: tuple[int, ...], dtype, ro: bool):
        self._mv = mv
        self.__array_interface__ = {
            "version": 3,
            "shape": shape,
            "typestr": dtype.str,
            "descr": dtype.descr,
            "data": (addr, ro),
            "strides": None,
        }


def _as_dtype_shape(dtype: Any, shape: int | Iterable[int]) -> tuple[np.dtype, tuple[int, ...]]:
    dt = np.dtype(dtype)
    if dt.hasobject:
        raise ObjectStoreError(f"dtype {dt} holds Python objects and cannot live in shared memory")
    shp = (int(shape),) if isinstance(shape, int | np.integer) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shp):
        raise ObjectStoreError(f"negative dimension in shape {shp}")
    return dt, shp


def _span(obj: Any) -> tuple[int, int] | None:
    """(address, nbytes) of obj's memory when it is one contiguous, non-empty
    range; None otherwise (non-contiguous, not a buffer, empty)."""
    if isinstance(obj, np.ndarray):
        if not (obj.flags.c_contiguous or obj.flags.f_contiguous) or obj.nbytes == 0:
            return None
        return obj.__array_interface__["data"][0], obj.nbytes
    try:
        mv = obj.raw() if isinstance(obj, pickle.PickleBuffer) else memoryview(obj)
    except (TypeError, BufferError):
        return None
    if not mv.contiguous or mv.nbytes == 0:
        return None
    if not mv.readonly:  # the sender's case (a buffer of its own store): no numpy array
        try:  # made for it, 20 us less when run cold
            return ctypes.addressof(ctypes.c_char.from_buffer(mv)), mv.nbytes
        except (TypeError, ValueError, BufferError):
            pass  # a layout ctypes refuses: numpy's way below
    arr = np.frombuffer(mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv, np.uint8)
    return arr.__array_interface__["data"][0], arr.nbytes


def _base_address(mm: mmap.mmap) -> int:
    return np.frombuffer(mm, np.uint8, count=1).__array_interface__["data"][0]
