"""How a ported node's message class checks what its code assigns to a field, as rclpy's
generated setters do: the same ``AssertionError`` and words for a value of the wrong type
or out of range, numeric sequences kept as ``array.array`` (or numpy arrays, which cross
by shared-memory reference), ``byte`` fields as ``bytes``. A node that breaks a rule
fails the same ported as under rclpy, before anything is sent.

Used by :mod:`hprm_bridge.messages`, which builds the classes.
"""

from __future__ import annotations

import array
from collections import UserList, UserString
from collections.abc import Callable, Sequence, Set
from typing import Any

import numpy as np
from rosbags.interfaces import Nodetype

from hprm_bridge.numeric_sequence import NumericSequence

_BASE, _NAME, _ARRAY, _SEQUENCE = Nodetype.BASE, Nodetype.NAME, Nodetype.ARRAY, Nodetype.SEQUENCE

# numpy dtype name -> array.array typecode (rclpy keeps numeric sequences in array.array)
TYPECODES = dict(
    uint8="B", int8="b", uint16="H", int16="h", uint32="I", int32="i",
    uint64="Q", int64="q", float32="f", float64="d",
)  # fmt: skip


def sequence_repr(value: Any) -> str:
    """As rclpy prints a numeric sequence field: its items as a list."""
    if isinstance(value, (array.array, np.ndarray)):
        return repr(value.tolist())
    return repr(value)


_INT_RANGES = {
    f"{sign}int{bits}": (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if sign == ""
    else (0, 2**bits - 1)
    for sign in ("", "u")
    for bits in (8, 16, 32, 64)
}
_FLOATS = {"float32", "float64"}


class _Field:
    """A checked field of a message class: a descriptor with ``__set__`` and no ``__get__``,
    so that reading the field is the instance dict's lookup, in C, and only an assignment
    runs Python (the check). A message is built and read right after a model evicted the
    caches, where each Python call costs microseconds: a property's getter was one per
    read (``header.stamp.sec`` three). The subclasses inline their checks, one call per
    assignment; this one calls ``check``."""

    __slots__ = ("check", "field")

    def __init__(self, field: str, check: Callable[[Any], Any] | None = None) -> None:
        self.field = field
        self.check = check

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.field] = self.check(value)  # type: ignore[misc]


class _IntField(_Field):
    __slots__ = ("hi", "lo", "word")

    def __init__(self, field: str, base: str) -> None:
        super().__init__(field)
        self.lo, self.hi = _INT_RANGES[base]
        self.word = "an unsigned" if self.lo == 0 else "a signed"

    def __set__(self, obj: Any, value: Any) -> None:
        field = self.field
        assert isinstance(value, int), f"The '{field}' field must be of type 'int'"
        assert self.lo <= value <= self.hi, (
            f"The '{field}' field must be {self.word} integer in [{self.lo}, {self.hi}]"
        )
        obj.__dict__[field] = value


class _TypedField(_Field):
    __slots__ = ("want",)

    def __init__(self, field: str, want: type) -> None:
        super().__init__(field)
        self.want = want

    def __set__(self, obj: Any, value: Any) -> None:
        want = self.want
        assert isinstance(value, want), (
            f"The '{self.field}' field must be of type '{want.__name__}'"
        )
        obj.__dict__[self.field] = value


class _MessageField(_Field):
    __slots__ = ("cls", "resolve", "ros_type")

    def __init__(self, field: str, ros_type: str, resolve: Callable[[str], type]) -> None:
        super().__init__(field)
        self.ros_type, self.resolve, self.cls = ros_type, resolve, None

    def __set__(self, obj: Any, value: Any) -> None:
        cls = self.cls
        if cls is None:  # looked up at the first assignment: the class may not exist before
            cls = self.cls = self.resolve(self.ros_type)
        assert isinstance(value, cls), (
            f"The '{self.field}' field must be a sub message of type "
            f"'{self.ros_type.split('/')[-1]}'"
        )
        obj.__dict__[self.field] = value


def checked_field(field: str, desc: tuple[Any, Any], msg_cls: Any) -> _Field | None:
    """The descriptor that checks (and for numeric sequences converts) what is assigned
    to ``field``, as rclpy's generated setters do; None where rclpy takes anything.
    ``msg_cls``: the class of a nested message field, by name."""
    kind, rest = int(desc[0]), desc[1]
    if byte_field(desc) is not None:
        return _Field(field, _byte_check(field, kind, rest))
    if kind == _BASE:
        base = rest[0]
        if base in _INT_RANGES:
            return _IntField(field, base)
        if base in _FLOATS or base in ("bool", "string"):
            return _TypedField(field, {"bool": bool, "string": str}.get(base, float))
        return None
    if kind == _NAME:
        return _MessageField(field, rest, msg_cls)
    if kind in (_ARRAY, _SEQUENCE) and int(rest[0][0]) == _BASE:
        base, length = rest[0][1][0], rest[1]
        if base in TYPECODES:
            dtype, typecode = np.dtype(base), TYPECODES[base]
            if kind == _ARRAY:

                def check(v: Any) -> Any:
                    arr = _as_array(v, dtype, typecode, field)
                    assert arr.shape == (length,), (
                        f"The '{field}' field must be a set or sequence with length {length}"
                    )
                    return arr

            else:

                def check(v: Any) -> Any:
                    seq = _as_sequence(v, dtype, typecode, field)
                    assert not length or len(seq) <= length, (
                        f"The '{field}' field must be a set or sequence with length <= {length}"
                    )
                    return seq

            return _Field(field, check)
    return None


def byte_field(desc: tuple[Any, Any]) -> int | None:
    """The kind of a ``byte`` field (one byte, or an array or sequence of them); None for
    any other. rclpy holds its bytes as ``bytes`` objects of length 1 (a list of them for
    many), where the codec holds ints: :func:`adopt` and the CDR encoder convert."""
    kind, rest = int(desc[0]), desc[1]
    if kind == _BASE:
        return kind if rest[0] == "byte" else None
    if kind in (_ARRAY, _SEQUENCE) and int(rest[0][0]) == _BASE and rest[0][1][0] == "byte":
        return kind
    return None


def _byte_check(field: str, kind: int, rest: Any) -> Callable[[Any], Any]:
    """rclpy's setter checks for a byte field (the value is kept as given)."""
    if kind == _BASE:

        def one(v: Any) -> Any:
            assert isinstance(v, (bytes, bytearray)) and len(v) == 1, (
                f"The '{field}' field must be of type 'bytes' or 'ByteString' with length 1"
            )
            return v

        return one
    n = rest[1]
    length = (f" with length {n}" if kind == _ARRAY else f" with length <= {n}") if n else ""

    def many(v: Any) -> Any:
        assert (
            isinstance(v, (Sequence, Set, UserList))
            and not isinstance(v, (str, UserString))
            and (not n or (len(v) == n if kind == _ARRAY else len(v) <= n))
            and all(isinstance(x, bytes) for x in v)
        ), f"The '{field}' field must be a set or sequence{length} and each value of type 'bytes'"
        return v

    return many


def _as_sequence(value: Any, dtype: np.dtype[Any], typecode: str, field: str) -> Any:
    """A numeric sequence field's value: an ``array.array`` as in rclpy (the one given, or
    a :class:`NumericSequence` made from the items), except that a numpy array is kept as
    a 1-D numpy array, not copied (rclpy refuses numpy arrays: HPRM takes them so that a
    loaned or large array crosses by shared-memory reference)."""
    if isinstance(value, array.array):
        if value.typecode == typecode:
            return value
        raise AssertionError(f"The '{field}' array.array() must have the type code of '{typecode}'")
    if isinstance(value, np.ndarray):
        arr = value if value.dtype == dtype else value.astype(dtype)
        return arr.reshape(-1) if arr.ndim != 1 else arr
    if isinstance(value, (bytes, bytearray)) and typecode == "B":
        seq = NumericSequence(typecode)
        seq.frombytes(value)  # what array.array(typecode, value) does, checks passed
        return seq
    return NumericSequence(typecode, _checked_items(value, dtype, field))


def _as_array(value: Any, dtype: np.dtype[Any], typecode: str, field: str) -> np.ndarray[Any, Any]:
    """A fixed-size numeric array field's value: a 1-D numpy array of ``dtype``, as in rclpy
    (a numpy array or an ``array.array`` of the item type is kept, not copied).
    ``typecode``: the dtype's ``array.array`` code, worked out once per field
    (numpy's ``dtype.name`` runs Python code: 65 us cold, on a message's path)."""
    if isinstance(value, np.ndarray):
        arr = value if value.dtype == dtype else value.astype(dtype)
        return arr.reshape(-1) if arr.ndim != 1 else arr
    if isinstance(value, array.array):
        if value.typecode == typecode:
            return np.frombuffer(value, dtype)
        raise AssertionError(f"The '{field}' array.array() must have the type code of '{typecode}'")
    return np.array(_checked_items(value, dtype, field), dtype=dtype)


def _checked_items(value: Any, dtype: np.dtype[Any], field: str) -> list[Any]:
    """``value``'s items, checked as rclpy's setters check them (type, then range)."""
    want: type = int if dtype.kind in "iu" else float
    items = (
        list(value)
        if isinstance(value, (list, tuple, set, frozenset, range, bytes, bytearray))
        else None
    )
    if items is None or not all(isinstance(v, want) for v in items):
        raise AssertionError(
            f"The '{field}' field must be a set or sequence and each value of type "
            f"'{want.__name__}'"
        )
    if want is int:
        info = np.iinfo(dtype)
        if not all(info.min <= v <= info.max for v in items):
            word = "unsigned integer" if info.min == 0 else "integer"
            raise AssertionError(
                f"The '{field}' field must be a set or sequence and each value of type 'int' "
                f"and each {word} in [{info.min}, {info.max}]"
            )
    return items
