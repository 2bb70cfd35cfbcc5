"""CDR (XCDR1) encoding of ROS 2 messages, the way ROS 2 puts them on the wire.

Conventions, with sources:

* ROS 2 Humble middlewares serialize with plain CDR version 1 ("XCDR1"), little
  endian on little-endian hosts: a 4-byte encapsulation header
  ``00 01 00 00`` (``CDR_LE``; ``00 00`` is ``CDR_BE``) followed by the
  payload, every primitive aligned to its size relative to the payload start
  (OMG DDS-XTypes 1.3 section 7.4.3.5 "Encapsulation identifier"; OMG CORBA
  3.3 part 2, section 9.3 "CDR"). rmw_cyclonedds_cpp writes it in
  ``src/Serialization.cpp`` / ``src/serdes.hpp`` (``cycser``: header then
  payload); ``rmw_serialize()`` output and rosbag2 ``cdr`` storage use the same
  bytes.
* Strings are ``uint32`` length including the terminating NUL, then the bytes
  and NUL; sequences are a ``uint32`` count then elements; fixed arrays have
  no count (rosidl -> IDL mapping, ROS 2 design article "Interface definition
  and language mappings").
* The payload is padded with zeros to a multiple of 4 bytes on the wire
  (rmw_cyclonedds_cpp ``serdata_rmw::resize()`` pads the same way; libddsc
  pads RTPS submessages to 4). So a received sample may carry up to three zero
  bytes past the encoding; decoders must accept them, as rosbags does.

The codec itself is rosbags' (``Typestore.serialize_cdr`` /
``deserialize_cdr``), which generates per-type code and moves numeric arrays
as numpy buffers: no per-element Python loop, unlike cyclonedds' own IDL codec.
"""

from __future__ import annotations

import array
import struct
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import MalformedSampleError

if TYPE_CHECKING:
    from rosbags.typesys.store import Typestore

CDR_LE_HEADER = b"\x00\x01\x00\x00"
"""Encapsulation header of every sample this client writes (XCDR1, little endian)."""
CDR_BE_HEADER = b"\x00\x00\x00\x00"
"""Big-endian XCDR1 header; accepted on receive, never written."""


def encode(store: Typestore, message: object, ros_type: str, *, pad: bool = True) -> memoryview:
    """Serialize ``message`` to XCDR1 little-endian bytes, header included, zero-padded to 4
    as a sample on the wire (``pad=False``: unpadded, as ``rmw_serialize`` and so rclpy's
    ``serialize_message`` give them).

    The buffer is allocated once at its final size and filled by rosbags'
    generated serializer (what ``Typestore.serialize_cdr`` does, minus the
    padding it lacks).
    """
    msgdef = store.get_msgdef(ros_type)
    try:
        return _encode(msgdef, message, store, ros_type, pad)
    except (AttributeError, struct.error):
        if not _needs_codec_values(message):
            raise
    return _encode(msgdef, _with_codec_values(message), store, ros_type, pad)


def _encode(msgdef: Any, message: object, store: Typestore, ros_type: str, pad: bool) -> memoryview:
    size = 4 + msgdef.getsize_cdr(0, message, store)
    buf = bytearray(size + (-size % 4 if pad else 0))
    buf[:4] = CDR_LE_HEADER
    view = memoryview(buf)
    end = msgdef.serialize_cdr_le(view[4:], 0, message, store)
    if end + 4 != size:  # pragma: no cover - rosbags invariant
        raise AssertionError(f"{ros_type}: serialized {end + 4} bytes, expected {size}")
    return view


def _needs_codec_values(message: object) -> bool:
    """Whether ``message`` holds what rosbags cannot serialize as it is: an ``array.array``
    that node code assigned (as rclpy lets it; rosbags calls ``view(numpy.uint8)`` on a
    numeric sequence, which numpy arrays and HPRM's ``NumericSequence`` have), or a
    ``byte`` field, which HPRM's messages hold as rclpy's do, as ``bytes``."""
    if getattr(type(message), "_hprm_bytes", None):
        return True
    for value in getattr(message, "__dict__", {}).values():
        if isinstance(value, array.array) and not hasattr(value, "view"):
            return True
        nested = hasattr(value, "__dict__") and not isinstance(value, type)
        if nested and _needs_codec_values(value):
            return True
        if isinstance(value, list) and any(
            hasattr(v, "__dict__") and _needs_codec_values(v) for v in value
        ):
            return True
    return False


def _with_codec_values(message: object) -> object:
    """A shallow copy of ``message`` (nested messages copied too) as rosbags' serializer
    takes it: ``array.array`` values as numpy views of the same memory, ``byte`` fields as
    an int8 (a uint8 array for many); ``message`` itself is left as it is."""
    out = object.__new__(type(message))
    byte_fields = getattr(type(message), "_hprm_bytes", {})
    for name, value in vars(message).items():
        if name in byte_fields:
            if isinstance(value, (bytes, bytearray)):  # rosbags packs one byte as an int8
                value = (value[0] ^ 0x80) - 0x80
            else:
                value = _uint8s(value)
        elif isinstance(value, array.array):
            value = np.frombuffer(value, value.typecode)
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            value = _with_codec_values(value)
        elif isinstance(value, list):
            value = [_with_codec_values(v) if hasattr(v, "__dict__") else v for v in value]
        vars(out)[name] = value
    return out


def _uint8s(items: Any) -> np.ndarray[Any, Any]:
    joined = b"".join(items)
    if len(joined) != len(items):
        raise ValueError(f"a byte field holds {items!r}: each item must be one byte")
    return np.frombuffer(joined, np.uint8)


def pad4(cdr: bytes | bytearray | memoryview) -> bytes | bytearray | memoryview:
    """``cdr`` zero-padded to a multiple of 4 bytes (copies only when needed).

    libddsc sends the serialized size rounded up to 4 and reads the extra bytes
    from the sample buffer, so an unpadded buffer would leak whatever follows
    it in memory (rmw_cyclonedds_cpp pads for the same reason: the FIXME in
    ``serdata_rmw::resize()``).
    """
    n = len(cdr)
    if n % 4 == 0:
        return cdr
    return bytes(cdr) + bytes(-n % 4)


def decode(store: Typestore, raw: bytes | memoryview, ros_type: str) -> object:
    """Deserialize a sample; anything not a valid encoding raises MalformedSampleError.

    Numeric arrays in the result are numpy views into ``raw`` (no copy).
    """
    head = bytes(raw[:4])
    if len(head) < 4 or head[:2] not in (CDR_LE_HEADER[:2], CDR_BE_HEADER[:2]):
        raise MalformedSampleError(
            f"{ros_type}: unsupported encapsulation {head.hex(' ')!r} (want XCDR1 00 01 / 00 00)"
        )
    try:
        return store.deserialize_cdr(raw, ros_type)
    except MalformedSampleError:
        raise
    except Exception as exc:  # rosbags raises SerdeError, struct.error, IndexError...
        raise MalformedSampleError(f"{ros_type}: {exc}") from exc
