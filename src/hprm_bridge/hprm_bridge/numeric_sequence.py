"""The value of a numeric sequence field (``float64[]``, ``uint8[]``...) in a message.

rclpy's generated classes keep these in an ``array.array``, and node code relies on
it: the action tutorial grows its feedback with ``partial_sequence.append(x)``,
cv_bridge fills an Image with ``data.frombytes(...)``. So HPRM's messages do too,
with this subclass, which adds only what the two codecs a message meets read from
a numpy array: rosbags' CDR serializer calls ``view(numpy.uint8)`` on a sequence,
and the federate pickler reads ``nbytes``. An ``array.array`` assigned by node code
is kept as it is (rclpy keeps it too: ``msg.data is a``).

Where a sequence's data lives in shared memory (a large one received from another
federate, a loaned array, a numpy array assigned by node code) the field holds a
numpy array instead, so that it is not copied: it reads the same (indexing,
``len``, iteration, the buffer protocol) but cannot grow in place.

Example::

    >>> from hprm_bridge.numeric_sequence import NumericSequence
    >>> s = NumericSequence("d", [0.0, 1.0])
    >>> s.append(1.0); s
    array('d', [0.0, 1.0, 1.0])
    >>> s.view("uint8").size
    24
"""

from __future__ import annotations

import array
from typing import Any

import numpy as np

__all__ = ["NumericSequence"]


class NumericSequence(array.array):  # type: ignore[type-arg]
    """An ``array.array`` that numpy-reading codecs can also read.

    Each type code has its own subclass (``NumericSequence("d", ...)`` makes one of it),
    which builds without the code as well: code that makes a field's value anew from
    its type, ``type(msg.position)([1.0, 2.0])`` (rosidl_runtime_py's
    ``set_message_fields``), gets a sequence of the field's items.
    """

    __slots__ = ()
    _code: str | None = None  # the type code of a typed subclass

    def __new__(cls, *args: Any) -> NumericSequence:
        if cls._code is None:  # NumericSequence(code, ...): an instance of code's class
            if not args or not isinstance(args[0], str):
                raise TypeError("NumericSequence(typecode[, initializer])")
            cls = _TYPED.get(args[0]) or _typed(args[0])
        elif not args or not isinstance(args[0], str):
            args = (cls._code, *args)
        return array.array.__new__(cls, *args)

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return (NumericSequence, (self.typecode, self.tobytes()))

    def view(self, dtype: Any) -> np.ndarray[Any, Any]:
        """The items' memory as a numpy array of ``dtype`` (no copy)."""
        return np.frombuffer(self, dtype)

    @property
    def nbytes(self) -> int:
        return len(self) * self.itemsize

    def __repr__(self) -> str:  # array.array's (a subclass's repr names the subclass)
        items = f", {self.tolist()!r}" if len(self) else ""
        return f"array({self.typecode!r}{items})"


_TYPED: dict[str, type[NumericSequence]] = {}


def _typed(code: str) -> type[NumericSequence]:
    cls = _TYPED.get(code)
    if cls is None:
        cls = _TYPED[code] = type(
            "NumericSequence", (NumericSequence,), {"__slots__": (), "_code": code}
        )
    return cls
