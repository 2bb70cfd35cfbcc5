"""Adaptive serialization: small values in-band, large buffers out of band.

Why
---
Plain pickle copies every byte of a large array into its output stream and
again out of it on the other side. Pickle protocol 5 can instead hand each
large buffer (numpy / pyarrow / bytes-like / torch CPU tensors) to a callback
and leave only a few bytes of metadata in the stream (paper section IV-C2:
49x faster serialization, 20x faster deserialization for 5 MB). Here each
such buffer becomes an *out-of-band item*:

- a :class:`~hprm_core.object_store.Ref` into the shared-memory object store
  when a store is given (same host): no copy at all if the buffer already lies
  in the store (built with ``Store.alloc_array``, or received and being
  forwarded: ``ArenaMap.ref_of``), else one copy (``Store.put``);
- the raw buffer itself (a ``memoryview`` of the caller's object, no copy)
  when no store is given: the transport streams it after the header (across
  hosts).

Buffers smaller than ``threshold`` (64 KiB by default) stay in the stream, so
small messages cost one ``pickle.dumps``. Recursion through dict / list /
tuple / dataclasses / user classes is pickle's own.

Wire form: :meth:`Serialized.pack_header` gives one ``bytes``::

    "HPSZ" version:u8 mode:u8 reserved:u16 n_items:u32 payload_len:u64
    n_items x (kind:u8, then a 40-byte Ref for kind 1, or length:u64 for kind 2)
    payload (pickle or msgpack bytes)

and :func:`deserialize` takes that header plus a ``resolve(item) -> buffer``
callback (:func:`make_resolver` builds the usual one). Every malformed,
truncated or inconsistent input raises :class:`SerializationError`, never
anything worse.

Trust
-----
Unpickling is arbitrary code execution: accept ``mode="pickle"`` only from
authenticated peers of the same federation. For untrusted links, ``mode="safe"``
encodes plain data (None, bool, int, float, str, bytes, list, tuple, dict) with
msgpack, numpy arrays of plain dtypes as dtype + shape + raw buffer (out of band
like above), and pyarrow tables / arrays as Arrow IPC streams.
``deserialize(..., mode="safe")`` refuses pickle headers and never calls pickle.

Lifetime
--------
Every :class:`Ref` item carries one hold of the sender's own (see
``object_store``). The transport calls :meth:`Serialized.share` once per
receiver, sends, then :meth:`Serialized.release` (or uses ``with``; an
unreleased ``Serialized`` releases when collected). Raw items point into the
caller's objects, which the ``Serialized`` keeps alive until released. On the
receiving side each Ref item is resolved once (one view, one release token);
received arrays are read-only views of the sender's memory, so copy them to
modify.

Example::

    s = serialize({"img": img, "id": 7}, store=store)  # img: 5 MB ndarray
    with s:
        s.share("peer-b")  # the transport, once per receiver
        header = s.pack_header()  # ~150 bytes: 40-byte Ref + pickle metadata
    obj = deserialize(header, make_resolver(arenas=amap, owner="peer-a"))
"""

from __future__ import annotations

import functools
import io
import logging
import pickle
import struct
import sys
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from hprm_core import safe_codec
from hprm_core.errors import HprmError, SerializationError
from hprm_core.object_store import ArenaMap, Ref, Store
from hprm_core.safe_codec import describe_type

__all__ = [
    "DEFAULT_THRESHOLD",
    "ITEM_RAW",
    "ITEM_REF",
    "Item",
    "PlainPickler",
    "SerializationError",
    "Serialized",
    "deserialize",
    "load_pickle_extensions",
    "make_resolver",
    "parse_header",
    "serialize",
]

DEFAULT_THRESHOLD = 65536
ITEM_REF = 1
ITEM_RAW = 2
_MODES = {"pickle": 0, "safe": 1}
_MODE_NAMES = {v: k for k, v in _MODES.items()}
_HEAD = struct.Struct("<4sBBHIQ")  # magic, version, mode, reserved, n_items, payload_len
_MAGIC = b"HPSZ"
_VERSION = 1
_RAWLEN = struct.Struct("<Q")
_HEAD_ONE_REF = struct.Struct("<4sBBHIQB5Q")  # _HEAD, then kind 1 and a Ref: one read
_MAX_ITEMS = 1 << 20

# msgpack extension codes (safe mode)


class Item(NamedTuple):
    """One out-of-band item of a received header: ``kind`` is ``ITEM_REF``
    (``ref`` set) or ``ITEM_RAW`` (``raw_index``-th streamed buffer of
    ``length`` bytes); ``index`` is its position among all items."""

    index: int
    kind: int
    length: int
    ref: Ref | None
    raw_index: int


@dataclass(eq=False)
class Serialized:
    """The result of :func:`serialize`: ``payload`` (pickle or msgpack bytes)
    and ``items``, the out-of-band buffers in order, each a :class:`Ref` or a
    raw ``memoryview`` to stream. Release it when sent (``with`` does)."""

    mode: str
    payload: bytes
    items: list[Ref | memoryview]
    _holds: list[tuple[Store | ArenaMap, Ref]] = field(default_factory=list, repr=False)
    _keep: list[Any] = field(default_factory=list, repr=False)

    def __del__(self) -> None:
        # Dropped unreleased (an error between serializing and sending): the holds go
        # back. Garbage collection may run this in any thread: only queue. Not a
        # weakref.finalize: creating one costs ~10 us cold, on every large message.
        holds = getattr(self, "_holds", None)  # None: __init__ failed half-way
        if holds:
            _release_holds(holds)

    @property
    def refs(self) -> list[Ref]:
        """The store references among the items, in order."""
        return [x for x in self.items if isinstance(x, Ref)]

    @property
    def raw(self) -> list[memoryview]:
        """The buffers to stream after the header, in order."""
        return [x for x in self.items if not isinstance(x, Ref)]

    @property
    def arena_ids(self) -> set[int]:
        """Arenas the receiver must have mapped (send their fds first)."""
        return {r.arena_id for r in self.refs}

    @property
    def nbytes_out_of_band(self) -> int:
        return sum(x.length if isinstance(x, Ref) else x.nbytes for x in self.items)

    def pack_header(self) -> bytes:
        """The wire form (see the module docstring); raw items not included."""
        parts = [_HEAD.pack(_MAGIC, _VERSION, _MODES[self.mode], 0, len(self.items),
                            len(self.payload))]  # fmt: skip
        for x in self.items:
            if isinstance(x, Ref):
                parts.append(b"\x01" + x.pack())
            else:
                parts.append(b"\x02" + _RAWLEN.pack(x.nbytes))
        parts.append(self.payload)
        return b"".join(parts)

    def share(self, peer: Hashable, n: int = 1) -> None:
        """Record that this message (its every Ref) goes to ``peer`` ``n``
        times; each resolved Ref comes back as one release token."""
        for holder, ref in self._holds:
            holder.share(ref, peer, n)

    def release(self) -> None:
        """Drop the sender's own holds and the raw buffers. Idempotent."""
        holds, self._holds[:] = list(self._holds), []
        for holder, ref in holds:
            holder.release(ref)
        self._keep.clear()

    def __enter__(self) -> Serialized:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _release_holds(holds: list[tuple[Store | ArenaMap, Ref]]) -> None:
    # Garbage collection: never take a lock here, defer to the holder's queue.
    for holder, ref in holds:
        holder._defer_release(ref)
    holds.clear()


# --------------------------------------------------------------------------- serialize


class _Sink:
    """Where out-of-band buffers go while serializing. ``receivers``: the peers
    the value is being sent to now (the data plane's case): a buffer already in
    shared memory is then held for them directly, with no hold of the sender's
    own to take and drop around it (the value stays alive while it is sent)."""

    def __init__(
        self,
        store: Store | None,
        arenas: ArenaMap | None,
        threshold: int,
        receivers: Sequence[Hashable] = (),
    ):
        self.store, self.arenas, self.threshold = store, arenas, threshold
        self.receivers = receivers
        self.items: list[Ref | memoryview] = []
        self.holds: list[tuple[Store | ArenaMap, Ref]] = []  # the sender's own
        self.shared: list[tuple[Store | ArenaMap, Ref]] = []  # held for the receivers
        self.keep: list[Any] = []

    def add(self, raw: memoryview) -> int:
        ref = None
        peers = self.receivers
        own = not peers
        if self.arenas is not None:
            ref = self.arenas.ref_of(raw, hold=own, share_with=peers)  # zero-copy forward
            holder: Store | ArenaMap = self.arenas
        if ref is None and self.store is not None:
            holder = self.store
            ref = self.store.ref_of(raw, hold=own, share_with=peers)  # zero-copy produce
            if ref is None:
                ref = self.store.put(raw)  # a hold of our own: shared when sent
                own = True
        if ref is None:
            self.items.append(raw)
            self.keep.append(raw)
        else:
            (self.holds if own else self.shared).append((holder, ref))
            self.items.append(ref)
        return len(self.items) - 1

    def release(self) -> None:
        """Nothing was sent (an error, or another encoding takes over): every hold goes back."""
        for holder, ref in self.holds:
            holder.release(ref)
        for holder, ref in self.shared:
            for peer in self.receivers:
                holder.release(ref, peer)
        self.holds.clear()
        self.shared.clear()


class PlainPickler:
    """The data plane's fast path in pickle mode: one pass of C pickle.

    :func:`serialize`'s pickler calls Python (``persistent_id``) for each of
    the dozens of objects in a ROS message, and a value with a large buffer
    used to be pickled twice: once to learn it was large, once to send it.
    Here C pickle runs alone and only a buffer reaching the threshold calls
    back, which puts it out of band as :func:`serialize` would. What plain
    pickle cannot do well comes back as ``None`` for :func:`serialize` to
    do: an object it refuses (memoryview, Arrow tensor) or a large one it
    left in the stream (``bytes``, ``bytearray``, a non-contiguous array).
    One instance per sending thread: it is reused and not locked.

    >>> p = PlainPickler()
    >>> p.dumps({"id": 7}, threshold=1024)[:2]
    b'\\x80\\x05'
    >>> s = p.dumps({"img": np.zeros(4096, np.uint8)}, threshold=1024)
    >>> len(s.items), s.raw[0].nbytes
    (1, 4096)
    >>> p.dumps(bytes(4096), threshold=1024) is None
    True
    """

    __slots__ = ("_arenas", "_receivers", "_sink", "_store", "_threshold")

    def __init__(self) -> None:
        self._store: Store | None = None
        self._arenas: ArenaMap | None = None
        self._sink: _Sink | None = None
        self._threshold = 0
        self._receivers: Sequence[Hashable] = ()

    def dumps(
        self,
        obj: Any,
        threshold: int = DEFAULT_THRESHOLD,
        store: Store | None = None,
        arenas: ArenaMap | None = None,
        receivers: Sequence[Hashable] = (),
    ) -> bytes | Serialized | None:
        """``bytes`` for a small value with no large buffer (sent as they are),
        a :class:`Serialized` when its large buffers went out of band (into
        ``store``, or forwarded from ``arenas``, as :func:`serialize` puts
        them), ``None`` when :func:`serialize` must do it. ``receivers``: the
        peers it is sent to now; buffers already in shared memory are then held
        for them (what :meth:`Serialized.share` does for the rest)."""
        self._threshold, self._store, self._arenas = threshold, store, arenas
        self._receivers = receivers
        try:
            data = pickle.dumps(obj, protocol=5, buffer_callback=self)
        except BaseException as exc:
            if self._sink is not None:
                self._sink.release()  # no block stays held
                self._sink = None
            if isinstance(exc, Exception):
                return None  # serialize() says what cannot be pickled
            raise
        sink = self._sink
        if sink is None:  # the common case: nothing large
            return data if len(data) < threshold else None
        self._sink = None
        if len(data) >= threshold:
            sink.release()
            return None
        return Serialized("pickle", data, sink.items, sink.holds, sink.keep)

    def __call__(self, pb: pickle.PickleBuffer) -> bool:
        """pickle's buffer_callback (the instance itself: no bound method per call)."""
        raw = pb.raw()  # numpy only hands out contiguous buffers
        if raw.nbytes < self._threshold:
            return True  # in-band
        if self._sink is None:
            self._sink = _Sink(self._store, self._arenas, self._threshold, self._receivers)
        self._sink.add(raw)
        return False


def _to_sink(sink: _Sink, pb: pickle.PickleBuffer) -> bool:
    raw = pb.raw()  # numpy only hands out contiguous buffers
    if raw.nbytes < sink.threshold:
        return True  # in-band
    sink.add(raw)
    return False


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, sink: _Sink):
        # The callback must not be a bound method: pickler -> method -> pickler
        # would be a reference cycle, and the pickler's memo (which holds the
        # pickled objects) would then keep store blocks pinned until the cyclic
        # garbage collector happens to run.
        super().__init__(file, protocol=5, buffer_callback=functools.partial(_to_sink, sink))
        self._threshold = sink.threshold

    def persistent_id(self, obj: Any) -> Any:
        # bytes skip reducer_override in the C pickler; only this hook sees them.
        t = type(obj)
        if (t is bytes or t is bytearray) and len(obj) >= self._threshold:
            return ("b" if t is bytes else "ba", pickle.PickleBuffer(obj))
        return None

    def reducer_override(self, obj: Any) -> Any:
        t = type(obj)
        if t is np.ndarray:
            if (
                not (obj.flags.c_contiguous or obj.flags.f_contiguous)
                and obj.nbytes >= self._threshold
                and not obj.dtype.hasobject
            ):
                return np.ascontiguousarray(obj).__reduce_ex__(5)
            return NotImplemented
        if t is memoryview:
            if not obj.contiguous:
                obj = memoryview(obj.tobytes()).cast(obj.format, obj.shape)
            return _rebuild_memoryview, (pickle.PickleBuffer(obj), obj.format, obj.shape)
        if t.__name__ == "Tensor" and t.__module__ == "pyarrow.lib":
            # pyarrow cannot pickle tensors; its numpy view can, out of band
            return _rebuild_arrow_tensor, (obj.to_numpy(), obj.dim_names or None)
        if "torch" in sys.modules:
            torch = sys.modules["torch"]
            if (
                isinstance(obj, torch.Tensor)
                and obj.device.type == "cpu"
                and not obj.is_sparse
                and obj.numel() * obj.element_size() >= self._threshold
            ):
                arr = obj.detach().contiguous().numpy()
                return _rebuild_torch, (arr, obj.requires_grad)
        return NotImplemented


def _rebuild_memoryview(buf: Any, fmt: str, shape: tuple[int, ...]) -> memoryview:
    mv = memoryview(buf)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv.cast(fmt, shape) if (fmt, shape) != ("B", (mv.nbytes,)) else mv


def _rebuild_arrow_tensor(arr: np.ndarray, dim_names: list[str] | None) -> Any:
    import pyarrow as pa

    return pa.Tensor.from_numpy(arr, dim_names=dim_names)


def _rebuild_torch(arr: np.ndarray, requires_grad: bool) -> Any:
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # received arrays are read-only views
        t = torch.from_numpy(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def serialize(
    obj: Any,
    *,
    store: Store | None = None,
    arenas: ArenaMap | None = None,
    threshold: int = DEFAULT_THRESHOLD,
    mode: str = "pickle",
) -> Serialized:
    """Serialize ``obj``; buffers of ``threshold`` bytes or more go out of
    band: into ``store`` (zero-copy when they already lie in it, or in a view
    of ``arenas`` being forwarded), else as raw buffers to stream.

    >>> s = serialize({"a": np.arange(10_000.0), "b": [1, "x"]})
    >>> len(s.items), s.raw[0].nbytes, len(s.payload) < 200
    (1, 80000, True)
    >>> deserialize(s.pack_header(), make_resolver(raw=s.raw))["a"][-1]
    np.float64(9999.0)
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {sorted(_MODES)}, not {mode!r}")
    sink = _Sink(store, arenas, threshold)
    try:
        if mode == "pickle":
            f = io.BytesIO()
            try:
                _Pickler(f, sink).dump(obj)
            except SerializationError:
                raise
            except Exception as e:
                raise SerializationError(f"cannot pickle {describe_type(obj)}: {e}") from e
            payload = f.getvalue()
        else:
            payload = safe_codec.pack(obj, sink)
    except BaseException:
        sink.release()
        raise
    return Serialized(mode, payload, sink.items, sink.holds, sink.keep)


# --------------------------------------------------------------------------- deserialize

PICKLE_EXTENSIONS = "hprm.pickle_extensions"  # the entry point group
_extensions_loaded = False


def load_pickle_extensions() -> None:
    """Import what installed packages declare under the ``hprm.pickle_extensions``
    entry point group: modules that register, with ``copyreg``, the extension codes
    their classes pickle with (pickle's short form for a global). A receiver must know
    a code before a payload using it arrives, whether or not it imported the sender's
    package; the data plane calls this once as a federate starts. Idempotent."""
    global _extensions_loaded
    if _extensions_loaded:
        return
    _extensions_loaded = True
    from importlib import metadata

    for ep in metadata.entry_points(group=PICKLE_EXTENSIONS):
        try:
            ep.load()
        except Exception as exc:  # a broken plugin costs its own messages, not the rest
            logging.getLogger("hprm.serialization").warning(
                "pickle extension %s (%s) did not load: %s", ep.name, ep.value, exc
            )


def make_resolver(
    arenas: ArenaMap | None = None,
    raw: Sequence[Any] = (),
    owner: Hashable = None,
) -> Callable[[Item], Any]:
    """The usual ``resolve`` for :func:`deserialize`: Ref items become
    read-only views of ``arenas`` (release tokens go to ``owner``, default the
    arena's owner), raw items are taken from ``raw`` in order."""

    def resolve(item: Item) -> Any:
        if item.kind == ITEM_REF:
            if arenas is None:
                raise SerializationError(f"item {item.index} is a store reference, no ArenaMap")
            return arenas.view(item.ref, owner)
        if item.raw_index >= len(raw):
            raise SerializationError(
                f"item {item.index} is streamed buffer #{item.raw_index}, only {len(raw)} came"
            )
        return raw[item.raw_index]

    return resolve


def parse_header(header: bytes | bytearray | memoryview) -> tuple[str, list[Item], memoryview]:
    """(mode, items, payload) of a packed header; SerializationError if it is
    not one (wrong magic or version, truncated, trailing bytes, unknown item
    kind, malformed Ref)."""
    mv = memoryview(header).cast("B")
    if len(mv) > _HEAD_ONE_REF.size:  # the common case: one shared-memory reference
        f = _HEAD_ONE_REF.unpack_from(mv)
        if (f[:2] == (_MAGIC, _VERSION) and f[2] in _MODE_NAMES and f[4] == 1
                and f[6] == ITEM_REF and len(mv) - _HEAD_ONE_REF.size == f[5]
                and not Ref.malformed(fields := f[7:])):  # fmt: skip
            ref = Ref._make(fields)
            return _MODE_NAMES[f[2]], [Item(0, ITEM_REF, ref.length, ref, -1)], \
                mv[_HEAD_ONE_REF.size :]  # fmt: skip
    if len(mv) < _HEAD.size:
        raise SerializationError(f"truncated header: {len(mv)} bytes, at least {_HEAD.size}")
    magic, version, mode, _, n, plen = _HEAD.unpack_from(mv)
    if magic != _MAGIC:
        raise SerializationError(f"not an HPRM serialized header (magic {bytes(magic)!r})")
    if version != _VERSION:
        raise SerializationError(f"header version {version}, this runtime reads {_VERSION}")
    if mode not in _MODE_NAMES:
        raise SerializationError(f"unknown serialization mode {mode} in header")
    if n > _MAX_ITEMS:
        raise SerializationError(f"header announces {n} out-of-band items (max {_MAX_ITEMS})")
    pos, items, raw_i = _HEAD.size, [], 0
    for i in range(n):
        if pos >= len(mv):
            raise SerializationError(f"truncated header: item {i} of {n} missing")
        kind = mv[pos]
        pos += 1
        if kind == ITEM_REF:
            if pos + Ref.SIZE > len(mv):
                raise SerializationError(f"truncated header: item {i} Ref cut short")
            try:
                ref = Ref.unpack(mv[pos : pos + Ref.SIZE])
            except HprmError as e:
                raise SerializationError(f"item {i}: {e}") from e
            items.append(Item(i, ITEM_REF, ref.length, ref, -1))
            pos += Ref.SIZE
        elif kind == ITEM_RAW:
            if pos + _RAWLEN.size > len(mv):
                raise SerializationError(f"truncated header: item {i} length cut short")
            (length,) = _RAWLEN.unpack_from(mv, pos)
            items.append(Item(i, ITEM_RAW, length, None, raw_i))
            raw_i += 1
            pos += _RAWLEN.size
        else:
            raise SerializationError(f"unknown out-of-band item kind {kind} (item {i} of {n})")
    if len(mv) - pos != plen:
        raise SerializationError(
            f"header payload is {len(mv) - pos} bytes, {plen} announced "
            f"({'truncated' if len(mv) - pos < plen else 'trailing bytes'})"
        )
    return _MODE_NAMES[mode], items, mv[pos:]


def deserialize(
    header: bytes | bytearray | memoryview,
    resolve: Callable[[Item], Any] | None = None,
    *,
    mode: str = "pickle",
) -> Any:
    """Rebuild the object of :meth:`Serialized.pack_header`. ``resolve(item)``
    returns each out-of-band item's buffer (see :func:`make_resolver`).
    ``mode="pickle"`` (trusted peers) accepts pickle and safe headers;
    ``mode="safe"`` refuses pickle headers and never calls pickle."""
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {sorted(_MODES)}, not {mode!r}")
    kind, items, payload = parse_header(header)
    if kind == "pickle" and mode == "safe":
        raise SerializationError(
            "refused a pickle payload on a safe-mode link (pickle can run arbitrary code)"
        )
    if items and resolve is None:
        raise SerializationError(f"header has {len(items)} out-of-band items and no resolver")
    buffers = []
    for item in items:
        try:
            buf = resolve(item)
        except SerializationError:
            raise
        except HprmError as e:
            raise SerializationError(f"out-of-band item {item.index}: {e}") from e
        n = buf.nbytes if type(buf) is np.ndarray else memoryview(buf).nbytes
        if n != item.length:
            raise SerializationError(
                f"out-of-band item {item.index}: buffer of {n} bytes, {item.length} announced"
            )
        buffers.append(buf)
    if kind == "safe":
        return safe_codec.unpack(payload, buffers)
    try:  # plain C unpickling: the payloads of PlainPickler, nearly every message
        return pickle.loads(payload, buffers=buffers)
    except pickle.UnpicklingError:
        pass  # persistent ids (serialize()'s large bytes), or corrupt: _Unpickler says which
    except Exception as e:
        raise _unpickling_error(e) from e
    try:
        return _Unpickler(io.BytesIO(payload), buffers=buffers).load()
    except SerializationError:
        raise
    except Exception as e:
        raise _unpickling_error(e) from e


def _unpickling_error(e: Exception) -> SerializationError:
    why = f"corrupt pickle payload: {type(e).__name__}: {e}"
    if "extension code" in str(e):
        why += (" (a class pickled with a copyreg extension code this process does not know: "
                "is the sender's package installed here? see load_pickle_extensions)")  # fmt: skip
    return SerializationError(why)


class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid: Any) -> Any:
        if isinstance(pid, tuple) and len(pid) == 2:
            kind, buf = pid
            if kind == "b":
                return bytes(buf)
            if kind == "ba":
                return bytearray(buf)
        raise SerializationError(f"unknown persistent id in pickle payload: {pid!r:.80}")
