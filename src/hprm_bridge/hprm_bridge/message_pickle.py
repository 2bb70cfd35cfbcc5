"""How a message of `hprm_bridge.messages` crosses between federates: pickled flat.

A message is a tree (a JointState holds a Header, which holds a Time). Pickled as
objects, each node of the tree is a class looked up and a rebuild function called on
the receiving side, and its fields a dict built and copied. That costs little in a loop,
but a message crosses right after a model ran and evicted the caches, where every line
of Python runs several times slower. So each message class gets a pair of functions
generated for its layout, the way rclpy's message classes are generated code: one that
reads every leaf of the tree into one tuple (nested messages inline, a list of messages
as a list of tuples), and one that builds the tree back from it in straight-line code:
one rebuild call per message, whatever its depth. In-process, the caches evicted before
each call, the two ways interleaved: a JointState pickles in 77 us instead of 93 and
unpickles in 85 instead of 104, a PointCloud2 87 / 99 instead of 103 / 119 (warm: 4 / 8
against 7 / 9 us). In the CARLA demo (2-core VM, three interleaved pairs) a frame's
transport went 1.48-1.50 -> 1.44-1.48 ms.

Cold, a Python call costs microseconds whatever it does, so a message crosses in five:
``published``, ``reduce`` and the generated flat at the publish, the generated build and
``_rebuild_flat`` at the receiver, none at the send (``_Published`` is a tuple pickled by a
C reducer). The build sets each message's ``__dict__`` with ``object.__setattr__`` (its
class's ``__setattr__``, a name check for node code, is Python) and makes numeric
sequences with array's own constructor; a list of messages with scalar fields only
(PointCloud2's PointFields) is read and built inline, element by element. Timed in the
CARLA demo's processes (probes around the unpickle, two runs each way): a JointState's
decode 89-90 -> 62-67 us, a PointCloud2's 110-111 -> 81-83 us.

Numeric arrays are not pickled through numpy's own reduce (a dtype rebuilt from its
state, a Python call on loading): a small one goes as its bytes (the receiver gets its
own writable copy: an ``array.array`` for a sequence, as rclpy's, numpy for a
fixed-size array), a large contiguous one as a ``PickleBuffer`` that the data plane
puts out of band (a shared-memory reference, received as a numpy array), the field's
type known on both sides. Other lists (of strings, say) are pickled as they are.

By type name (``sensor_msgs/msg/Image``), not by module path: a receiving process
need not have the import finder installed, nor ROS 2 sourced, to rebuild it.

A message that does not fit its class's layout (a nested field holding another class,
an attribute added by hand) is pickled field by field instead, as it is: nothing is
lost. The tuple carries a digest of the layout, so two processes that disagree on a
type's definition get an error naming the type instead of fields in the wrong places.
"""

from __future__ import annotations

import array
import copy
import copyreg
import hashlib
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
from rosbags.interfaces import Nodetype

from hprm_bridge import pickle_extension  # noqa: F401  (_rebuild_flat's code: it says why)
from hprm_bridge.numeric_sequence import NumericSequence

_PACKED_BYTES = 1024  # numeric arrays up to this size are pickled as bytes
_LISTS = (Nodetype.ARRAY, Nodetype.SEQUENCE)


class _NotFlat(Exception):
    """This message does not fit its class's generated layout."""


def reduce(msg: Any, protocol: int) -> tuple[Any, ...]:
    """``__reduce_ex__`` of every message class."""
    cls = type(msg)
    flat = cls.__dict__.get("_hprm_flat") or _codec(cls)[0]
    try:
        return (_rebuild_flat, (cls._hprm_type, cls._hprm_layout, flat(msg, protocol)))
    except (_NotFlat, KeyError, AttributeError):  # a field missing, or not of its type
        return _reduce_fields(msg, protocol)


class _Published(tuple):  # type: ignore[type-arg]
    """A message as it was when published: its reduced form, taken then. rclpy serializes
    in ``publish()``, so node code may change the message right after (set the next
    value, publish it again) and each call still sends what it held; HPRM sends a node's
    messages as its callback ends, so it takes their contents at the call the same way.
    Large numeric arrays (over 1 KB) are referenced, not copied, as a loan is.

    The reduced form itself, ``(rebuild, args)``, as a tuple of its own class: made by
    tuple's C constructor and pickled by a C reducer (``tuple``, in copyreg's table), so
    that a publish and its send run no Python call of this class (they run cold, right
    after a model)."""

    __slots__ = ()

    def message(self) -> Any:
        """The message as it was published (what a receiver rebuilds)."""
        rebuild, args = self
        return rebuild(*args)


copyreg.pickle(_Published, tuple)  # pickled as the plain (rebuild, args) it holds


def published(value: Any) -> Any:
    """What a publisher queues for ``value``: a message of this module's classes as it is
    now (see ``_Published``); anything else as it is."""
    if type(value).__reduce_ex__ is reduce:
        return _Published(reduce(value, 5))
    return value


def received(value: Any) -> Any:
    """What a receiver of ``published(value)``'s value gets: the message as it was then."""
    return value.message() if type(value) is _Published else value


def copied(value: Any) -> Any:
    """What another node of the process receives of ``published(value)``'s value: the
    message as published, its own (anything else, a service call's tuple say, a deep copy,
    as the network would give)."""
    got = received(value)
    return copy.deepcopy(got) if got is value else got


def _rebuild_flat(ros_type: str, layout: int, values: tuple[Any, ...]) -> Any:
    entry = _builders.get(ros_type)  # the common case: no import, no class lookup
    if entry is None:
        from hprm_bridge.messages import message_class

        cls = message_class(ros_type)
        entry = _builders[ros_type] = (_codec(cls)[1], cls._hprm_layout)
    if layout != entry[1]:
        raise pickle.UnpicklingError(
            f"{ros_type}: the sender's definition of this type differs from this process's "
            "(another .msg file, or another version of its package)"
        )
    return entry[0](values)


_builders: dict[str, tuple[Callable[..., Any], int]] = {}  # ros_type -> (build, layout)


def _pack(a: Any, protocol: int) -> Any:
    """A numeric array field (numpy or ``array.array``) as it is pickled: bytes, an
    out-of-band buffer, or itself."""
    if len(a) * a.itemsize <= _PACKED_BYTES:
        return a.tobytes()
    if protocol >= 5 and (type(a) is not np.ndarray or a.flags.c_contiguous):
        return pickle.PickleBuffer(a)
    return a


def _unpack(v: Any, dtype: np.dtype[Any], typecode: str | None = None) -> Any:
    """Bytes (pickled in band) are copied, so the field is writable and the receiver's
    own: a numeric sequence (``typecode`` given) as rclpy's ``array.array``, a fixed-size
    array as numpy. A buffer handed out of band (shared memory: read-only; the data plane
    hands it over as a uint8 array) is viewed as it is, a numpy array."""
    if type(v) is bytes:
        return np.frombuffer(bytearray(v), dtype) if typecode is None else _sequence(typecode, v)
    if type(v) is np.ndarray:
        return v if v.dtype == dtype else v.view(dtype)
    if isinstance(v, array.array):  # pickled whole (protocol < 5)
        return v
    return np.frombuffer(v, dtype)


def received_array(a: Any, dtype: np.dtype[Any], typecode: str | None) -> Any:
    """A numeric array field decoded as a view of a received buffer, as this module
    unpickles one: up to ``_PACKED_BYTES`` a copy of its own (``array.array`` for a
    sequence), larger the view as it is."""
    if type(a) is np.ndarray and a.nbytes <= _PACKED_BYTES:
        return _unpack(a.tobytes(), dtype, typecode)
    return a


def _sequence(typecode: str, raw: bytes) -> NumericSequence:
    seq = NumericSequence(typecode)
    seq.frombytes(raw)
    return seq


def _codec(cls: type) -> tuple[Callable[..., Any], Callable[..., Any]]:
    d = cls.__dict__
    return (d["_hprm_flat"], d["_hprm_build"]) if "_hprm_build" in d else _make_codec(cls)


def _flat_list(items: list[Any], cls: type, flat: Callable[..., Any], protocol: int) -> list[Any]:
    """A list of messages of ``cls``, each flat (a message of another class: _NotFlat)."""
    out = []
    for m in items:
        if type(m) is not cls:
            raise _NotFlat
        out.append(flat(m, protocol))
    return out


def _scalars_only(cls: type) -> bool:
    """Whether every field of ``cls`` is pickled as it is (no nested message, no numeric
    array): its flat tuple is then its fields in order."""
    for field, desc in cls._hprm_fields:  # type: ignore[attr-defined]
        message = desc[0] == Nodetype.NAME
        messages = desc[0] in _LISTS and desc[1][0][0] == Nodetype.NAME
        if message or messages or field in cls._hprm_arrays:  # type: ignore[attr-defined]
            return False
    return True


def _make_codec(cls: type) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Generates ``cls``'s flatten and build functions (once per class and process)."""
    from hprm_bridge.messages import message_class

    # The build function calls only C: object.__setattr__ sets a message's __dict__ past
    # its class's own __setattr__ (a name check, a Python call per message), and a
    # sequence is its typed NumericSequence made by array's own __new__ (NumericSequence's
    # is Python). Each Python call a message's rebuild makes costs microseconds cold.
    names: dict[str, Any] = {"_NotFlat": _NotFlat, "_pack": _pack, "_unpack": _unpack,
                             "_flat_list": _flat_list, "_new": object.__new__,
                             "_sd": object.__setattr__, "_anew": array.array.__new__,
                             "_fb": np.frombuffer}  # fmt: skip
    reads: list[str] = []  # the flatten function's body
    leaves: list[str] = []  # its tuple's items
    builds: list[str] = []  # the build function's body, innermost message first
    layout: list[str] = []

    def walk(c: type, var: str) -> None:
        """Code for the message in local ``m{var}`` (class ``c``): its leaves are read
        into ``leaves``; it is built into ``m{var}``."""
        names[f"C{var}"] = c
        reads.append(f"d{var} = m{var}.__dict__")
        reads.append(f"if len(d{var}) != {len(c._hprm_fields)}: raise _NotFlat")
        items = []
        for i, (field, desc) in enumerate(c._hprm_fields):
            layout.append(f"{c._hprm_type}.{field}:{desc!r}")
            if desc[0] == Nodetype.NAME:
                sub = f"{var}_{i}"
                reads.append(f"m{sub} = d{var}[{field!r}]")
                reads.append(f"if type(m{sub}) is not C{sub}: raise _NotFlat")
                names[f"C{sub}"] = message_class(desc[1])
                walk(names[f"C{sub}"], sub)
                items.append(f"{field!r}: m{sub}")
            elif desc[0] in _LISTS and desc[1][0][0] == Nodetype.NAME:
                elem = message_class(desc[1][0][1])
                names[f"E{var}_{i}"] = elem
                names[f"F{var}_{i}"], names[f"B{var}_{i}"] = _codec(elem)
                layout[-1] += f" [{elem._hprm_layout}]"
                x = f"v[{len(leaves)}]"
                if _scalars_only(elem):  # each element read and built here: no call per one
                    n, efields = len(elem._hprm_fields), elem._hprm_fields
                    got = ", ".join(f"list(de[{f!r}])" if fd[0] in _LISTS else f"de[{f!r}]"
                                    for f, fd in efields)  # fmt: skip
                    reads.append(f"f{var}_{i} = []")
                    reads.append(f"for e in d{var}[{field!r}]:")
                    reads.append(f"    if type(e) is not E{var}_{i}: raise _NotFlat")
                    reads.append("    de = e.__dict__")
                    reads.append(f"    if len(de) != {n}: raise _NotFlat")
                    reads.append(f"    f{var}_{i}.append(({got},))")
                    leaves.append(f"f{var}_{i}")
                    put = ", ".join(f"{f!r}: x[{j}]" for j, (f, _) in enumerate(efields))
                    builds.append(f"l{var}_{i} = []")
                    builds.append(f"for x in {x}:")
                    builds.append(f"    e = _new(E{var}_{i}); _sd(e, '__dict__', {{{put}}})")
                    builds.append(f"    l{var}_{i}.append(e)")
                    items.append(f"{field!r}: l{var}_{i}")
                else:
                    items.append(f"{field!r}: [B{var}_{i}(x) for x in {x}]")
                    leaves.append(
                        f"_flat_list(d{var}[{field!r}], E{var}_{i}, F{var}_{i}, protocol)"
                    )
            elif field in c._hprm_arrays:  # _pack and _unpack, their common case inline
                a, x, dt = f"a{var}_{i}", f"v[{len(leaves)}]", f"D{var}_{i}"
                names[dt] = c._hprm_arrays[field]
                code = c._hprm_sequences.get(field)
                if code is None:  # a fixed-size array: numpy
                    small = f"_fb(bytearray({x}), {dt})"
                    big = f"_unpack({x}, {dt})"
                else:  # a sequence: array.array, or numpy where out of band
                    names[f"S{var}_{i}"] = type(NumericSequence(code))
                    small = f"_anew(S{var}_{i}, {code!r}, {x})"
                    big = f"_unpack({x}, {dt}, {code!r})"
                items.append(f"{field!r}: {small} if type({x}) is bytes else {big}")
                reads.append(f"{a} = d{var}[{field!r}]")
                leaves.append(
                    f"{a}.tobytes() if len({a}) * {a}.itemsize <= {_PACKED_BYTES} "
                    f"else _pack({a}, protocol)"
                )
            elif desc[0] in _LISTS:  # a list of strings (or bools): a copy, taken now
                items.append(f"{field!r}: v[{len(leaves)}]")
                leaves.append(f"list(d{var}[{field!r}])")
            else:
                items.append(f"{field!r}: v[{len(leaves)}]")
                leaves.append(f"d{var}[{field!r}]")
        builds.append(f"m{var} = _new(C{var}); _sd(m{var}, '__dict__', {{{', '.join(items)}}})")

    walk(cls, "0")
    indent = "\n    "
    leaf_tuple = f"({', '.join(leaves)}{',' if len(leaves) == 1 else ''})"
    source = (
        f"def flat(m0, protocol):{indent}{indent.join(reads)}{indent}return {leaf_tuple}\n"
        f"def build(v):{indent}{indent.join(builds)}{indent}return m0\n"
    )
    exec(compile(source, f"<hprm message codec {cls._hprm_type}>", "exec"), names)
    digest = hashlib.blake2b("\n".join(layout).encode(), digest_size=8).digest()
    cls._hprm_layout = int.from_bytes(digest, "little")  # type: ignore[attr-defined]
    cls._hprm_flat, cls._hprm_build = names["flat"], names["build"]  # type: ignore[attr-defined]
    return names["flat"], names["build"]


def _reduce_fields(msg: Any, protocol: int) -> tuple[Any, ...]:
    """A message that does not fit its layout, field by field (its dict as it is)."""
    d = msg.__dict__
    out = {
        f: _pack(d[f], protocol)
        for f in type(msg)._hprm_arrays
        if isinstance(d.get(f), (np.ndarray, array.array))
    }
    return (_rebuild_fields, (type(msg)._hprm_type, {**d, **out}))


def _rebuild_fields(ros_type: str, values: dict[str, Any]) -> Any:
    from hprm_bridge.messages import message_class

    cls = message_class(ros_type)
    for f, dtype in cls._hprm_arrays.items():
        if f in values:
            values[f] = _unpack(values[f], dtype, cls._hprm_sequences.get(f))
    msg = object.__new__(cls)
    msg.__dict__.update(values)
    return msg
