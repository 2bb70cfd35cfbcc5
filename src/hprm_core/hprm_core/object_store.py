"""Shared-memory object store: producer-owned arenas that cannot leak.

Why
---
Large payloads (camera frames, point clouds, tensors) must not travel through
a socket. Python's ``multiprocessing.shared_memory`` creates a named segment per
message and the first write faults in every page, which is what made it slow in
the HPRM paper (Fig. 2), and a crashed process leaves the name in ``/dev/shm``
forever. Here each *producing* process owns a few big arenas instead:

- an arena is an anonymous ``memfd`` (named ``hprm-arena-...`` for ``/proc``
  only), sealed against shrinking, mapped once (pre-faulted with
  ``MAP_POPULATE`` by default) and reused for many objects, so writing an object
  is one ``memcpy`` into warm memory, or no copy at all when the producer builds
  the object in place (:meth:`Store.alloc_array`, "zero-copy produce");
- the arena's fd is passed once per peer over a Unix socket with ``SCM_RIGHTS``
  (:func:`send_arena_fds` / :func:`recv_arena_fds`); consumers map it read-only
  (:class:`ArenaMap`). Because there is no name, the kernel frees the memory when
  the last process holding an fd or a mapping exits, even after ``SIGKILL``, and
  nothing ever appears in ``/dev/shm``;
- an object is a 64-byte aligned block of an arena (first-fit free list with
  coalescing), named by a :class:`Ref` (arena, offset, length, generation,
  block): 40 bytes on the wire, whatever the payload size.

Each block starts with a 64-byte header (magic, generation, capacity) that the
producer rewrites when the block is freed, so a consumer given a stale or
forged reference gets a :class:`StaleRefError` naming arena, offset and
generation instead of someone else's data.

The lifetime rule
-----------------
A block is returned to its arena's free list exactly when **both** hold:

1. *no holds*: every hold has been released. Holds are counted per peer:
   ``store.share(ref, peer, n)`` adds ``n`` holds for ``peer`` (the transport
   calls it once per receiver it sends the reference to), ``store.release(ref,
   peer)`` removes one (the transport calls it when the peer's release token
   arrives), ``store.release_all_for(peer)`` removes all of a dead peer's holds.
   ``store.put(...)`` and ``ref_of(..., hold=True)`` return a reference carrying
   one hold of the caller's own (peer ``None``), dropped with
   ``store.release(ref)`` once the reference has been shared;
2. *no pins*: no Python object of the producer points into the block. The array
   or memoryview returned by :meth:`Store.alloc_array` / :meth:`Store.alloc_buffer`
   (and every view derived from it) pins its block until the last one is
   garbage collected.

On the consumer side every :meth:`ArenaMap.view` / :meth:`ArenaMap.array` (one
per received reference) returns a read-only object whose lifetime is tracked:
when user code drops the last Python reference to it (or to anything derived
from it), one release token ``(owner, ref)`` is queued for the transport
(:meth:`ArenaMap.take_releases`), which sends it back to the producer. So a
received array stays valid for as long as user code holds it, however long the
producer has "finished" with it: the producer cannot reuse the block before the
token came back. A consumer that forwards a received object re-sends the same
reference (zero-copy forward, :meth:`ArenaMap.ref_of`); its own view stays
pinned by ``ArenaMap.share`` until the downstream peer releases it.

Garbage-collection callbacks never touch allocator state: they only append to
a queue that the next store operation drains under the lock, so a finalizer
running at an arbitrary point (any thread, in the middle of an allocation)
cannot corrupt anything.

When the store is full, ``on_full`` decides: ``"grow"`` adds an arena (logged)
up to ``max_bytes`` and then raises; ``"block"`` waits up to ``block_timeout``
seconds for releases (backpressure) and then raises; ``"error"`` raises
:class:`StoreFullError` at once. Never silent corruption, never unbounded growth.

Example::

    store = Store(arena_bytes=64 << 20)
    img = store.alloc_array((480, 640, 3), np.uint8)  # zero-copy produce
    img[:] = 7
    ref = store.ref_of(img, hold=True)  # 40-byte reference, no copy
    store.share(ref, "peer-a")  # one receiver will release it
    store.release(ref)  # drop the caller's own hold

    amap = ArenaMap()  # in the consumer, after recv_arena_fds(...)
    amap.attach(info.arena_id, info.fd, info.size, owner="producer")
    arr = amap.array(ref, np.uint8, (480, 640, 3))  # read-only, zero-copy
    del arr  # queues Release("producer", ref)
    amap.take_releases()
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import fcntl
import itertools
import logging
import math
import mmap
import os
import pickle
import secrets
import socket
import struct
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from hprm_core.errors import HprmError

__all__ = [
    "ALIGN",
    "DEFAULT_ARENA_BYTES",
    "ArenaInfo",
    "ArenaMap",
    "ObjectStoreError",
    "Ref",
    "Release",
    "StaleRefError",
    "Store",
    "StoreFullError",
    "recv_arena_fds",
    "send_arena_fds",
]

log = logging.getLogger("hprm.object_store")

ALIGN = 64  # block alignment: cache line, and enough for every numpy dtype
HEADER = 64  # per-block header, keeps the data 64-byte aligned
DEFAULT_ARENA_BYTES = 64 << 20
DEFAULT_MAX_BYTES = 1 << 30
ARENA_PREFIX = "hprm-arena-"

_REF = struct.Struct("<QQQQQ")  # arena_id, offset, length, generation, block
_HDR = struct.Struct("<8sQQQ")  # magic, generation, capacity, reserved
_MAGIC = b"HPRMBLK1"
_FREED = b"HPRMFREE"
_PAGE = mmap.PAGESIZE
_REQUIRED_SEALS = fcntl.F_SEAL_SHRINK


class ObjectStoreError(HprmError):
    """Misuse of the object store, or a reference it cannot honour."""


class StaleRefError(ObjectStoreError):
    """A reference to a block that was freed, reused, never existed, or lies in
    an arena this process does not have."""


class StoreFullError(ObjectStoreError):
    """No room for an allocation under the store's ``on_full`` policy."""


def _round_up(n: int, to: int) -> int:
    return (n + to - 1) // to * to


@dataclass(frozen=True, slots=True)
class Ref:
    """Where an object lies: ``length`` bytes at ``offset`` of arena
    ``arena_id``, inside the block whose data starts at ``block`` (equal to
    ``offset`` unless the reference names part of a block) and was allocated
    with ``generation``.

    >>> r = Ref(arena_id=7, offset=64, length=10, generation=3)
    >>> Ref.unpack(r.pack()) == r, len(r.pack()), r.block
    (True, 40, 64)
    """

    arena_id: int
    offset: int
    length: int
    generation: int
    block: int = -1

    SIZE = _REF.size

    def __post_init__(self) -> None:
        if self.block == -1:
            object.__setattr__(self, "block", self.offset)

    def pack(self) -> bytes:
        """The fixed 40-byte little-endian wire form."""
        return _REF.pack(self.arena_id, self.offset, self.length, self.generation, self.block)

    @classmethod
    def unpack(cls, buf: bytes | bytearray | memoryview) -> Ref:
        """Inverse of :meth:`pack`; a wrong size or impossible field is an
        :class:`ObjectStoreError`."""
        if len(buf) != _REF.size:
            raise ObjectStoreError(f"a packed Ref is {_REF.size} bytes, got {len(buf)}")
        a, off, n, gen, block = _REF.unpack(buf)
        if gen == 0 or block > off:
            raise ObjectStoreError(
                f"malformed Ref (arena {a:#x}, offset {off}, block {block}, generation {gen})"
            )
        return cls(a, off, n, gen, block)

    def describe(self) -> str:
        return (
            f"arena {self.arena_id:#x} offset {self.offset} length {self.length} "
            f"generation {self.generation}"
        )


class ArenaInfo(NamedTuple):
    """An arena as passed between processes: its id, memfd and size in bytes."""

    arena_id: int
    fd: int
    size: int


class Release(NamedTuple):
    """A release token: the consumer dropped its last view of ``ref``, which it
    received from ``owner`` (the peer to send the token to)."""

    owner: Hashable
    ref: Ref


class _Lease:
    """Base object of every array/memoryview the store hands out. numpy reads
    ``__array_interface__`` (raw address, shape, dtype, read-only flag) and
    keeps the lease as the array's base, so the lease lives exactly as long as
    some Python object points into the block. ``_mv`` is a slice of the arena's
    mmap: while it exists the mapping cannot be closed under the user's feet."""

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
    arr = np.frombuffer(mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv, np.uint8)
    return arr.__array_interface__["data"][0], arr.nbytes


def _base_address(mm: mmap.mmap) -> int:
    return np.frombuffer(mm, np.uint8, count=1).__array_interface__["data"][0]


# --------------------------------------------------------------------------- producer side


@dataclass(eq=False, slots=True)
class _Block:
    arena: _Arena
    data: int  # offset of the first data byte; the header is the 64 bytes before
    capacity: int
    generation: int
    holds: dict[Hashable, int] = field(default_factory=dict)
    pins: int = 0

    def ref(self, offset: int | None = None, length: int | None = None) -> Ref:
        off = self.data if offset is None else offset
        n = self.capacity if length is None else length
        return Ref(self.arena.arena_id, off, n, self.generation, self.data)


class _Arena:
    """One memfd, mapped read-write once, with a first-fit free list of extents
    (header + data, multiples of ALIGN) that coalesces on free."""

    def __init__(self, arena_id: int, size: int, prefault: bool, name: str):
        self.arena_id = arena_id
        self.size = size
        self.fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, size)
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
            flags = mmap.MAP_SHARED | (mmap.MAP_POPULATE if prefault else 0)
            self.mm = mmap.mmap(self.fd, size, flags=flags)
        except BaseException:
            os.close(self.fd)
            raise
        self.mv = memoryview(self.mm)
        self.base = _base_address(self.mm)
        self.free_starts: list[int] = [0]
        self.free_sizes: dict[int, int] = {0: size}
        self.used: dict[int, _Block] = {}  # by data offset
        self.used_sorted: list[int] = []
        self.used_bytes = 0

    def alloc(self, extent: int) -> int | None:
        for i, start in enumerate(self.free_starts):
            size = self.free_sizes[start]
            if size >= extent:
                del self.free_sizes[start]
                if size == extent:
                    del self.free_starts[i]
                else:
                    self.free_starts[i] = start + extent
                    self.free_sizes[start + extent] = size - extent
                self.used_bytes += extent
                return start
        return None

    def free(self, start: int, extent: int) -> None:
        self.used_bytes -= extent
        i = bisect.bisect_left(self.free_starts, start)
        if i < len(self.free_starts) and self.free_starts[i] == start + extent:  # merge next
            nxt = self.free_starts.pop(i)
            extent += self.free_sizes.pop(nxt)
        if i > 0:  # merge previous
            prev = self.free_starts[i - 1]
            if prev + self.free_sizes[prev] == start:
                self.free_sizes[prev] += extent
                return
        self.free_starts.insert(i, start)
        self.free_sizes[start] = extent

    def largest_free(self) -> int:
        return max(self.free_sizes.values(), default=0)

    def block_at(self, off: int, n: int) -> _Block | None:
        i = bisect.bisect_right(self.used_sorted, off) - 1
        if i < 0:
            return None
        b = self.used[self.used_sorted[i]]
        return b if off + n <= b.data + b.capacity else None

    def close(self) -> None:
        self.mv.release()
        try:
            self.mm.close()
        except BufferError:
            # Arrays handed out still point into it: the mapping goes away when
            # the last of them is collected (each holds a slice of it).
            log.debug("arena %#x still has live views; unmapped when they die", self.arena_id)
        os.close(self.fd)


_POLICIES = ("grow", "block", "error")


class Store:
    """The producer's object store (see the module docstring for the rules).

    >>> with Store(arena_bytes=1 << 20) as s:
    ...     a = s.alloc_array((4, 4), np.float32)
    ...     s.ref_of(a).length
    64

    ``arena_bytes``: size of each arena (rounded up to a page). ``max_bytes``:
    cap on all arenas together when ``on_full="grow"`` (default 1 GiB, at
    least ``arena_bytes``); the "block" and "error" policies never grow past
    their first arena. ``prefault``: map with ``MAP_POPULATE`` so the first
    write does not page-fault. The first arena is created at once, so its fd
    can be sent to peers before any object exists; later arenas appear in
    :attr:`arenas` as they are added (the transport sends each one before the
    first reference into it, see :attr:`Serialized.arena_ids`).
    """

    def __init__(
        self,
        arena_bytes: int = DEFAULT_ARENA_BYTES,
        *,
        max_bytes: int | None = None,
        on_full: str = "grow",
        block_timeout: float = 5.0,
        prefault: bool = True,
    ):
        if on_full not in _POLICIES:
            raise ValueError(f"on_full must be one of {_POLICIES}, not {on_full!r}")
        if arena_bytes <= HEADER:
            raise ValueError(f"arena_bytes must exceed {HEADER}, got {arena_bytes}")
        self.arena_bytes = _round_up(arena_bytes, _PAGE)
        if on_full == "grow":
            cap = max(DEFAULT_MAX_BYTES, self.arena_bytes) if max_bytes is None else max_bytes
            if cap < self.arena_bytes:
                raise ValueError(f"max_bytes ({cap}) < arena_bytes ({self.arena_bytes})")
        else:
            cap = self.arena_bytes
        self.max_bytes = cap
        self.on_full = on_full
        self.block_timeout = block_timeout
        self.prefault = prefault
        self.store_id = secrets.randbits(31) | 1  # nonzero; arena ids are unique per host
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._arenas: dict[int, _Arena] = {}
        self._generation = itertools.count(1)
        # (arena_id, data offset, generation) of blocks whose pin was collected
        self._unpinned: collections.deque[tuple[int, int, int]] = collections.deque()
        self._deferred: collections.deque[Ref] = collections.deque()  # see _defer_release
        self._fds: list[int] = []
        self._closed = False
        # fds are closed even if the owner forgets close(); mappings die with GC.
        self._finalizer = weakref.finalize(self, _close_fds, self._fds)
        self._finalizer.atexit = False
        self._add_arena(self.arena_bytes)

    # ---- arenas

    @property
    def arenas(self) -> list[ArenaInfo]:
        """Every arena, in creation order, as (arena_id, fd, size)."""
        with self._lock:
            return [ArenaInfo(a.arena_id, a.fd, a.size) for a in self._arenas.values()]

    def owns(self, ref: Ref) -> bool:
        """Whether ``ref`` names one of this store's arenas."""
        return ref.arena_id in self._arenas

    def _add_arena(self, size: int) -> _Arena:
        index = len(self._arenas)
        arena_id = (self.store_id << 32) | index
        name = f"{ARENA_PREFIX}{os.getpid()}-{self.store_id:08x}-{index}"
        arena = _Arena(arena_id, size, self.prefault, name)
        self._arenas[arena_id] = arena
        self._fds.append(arena.fd)
        return arena

    def _total(self) -> int:
        return sum(a.size for a in self._arenas.values())

    # ---- allocation

    def _drain(self) -> None:
        """Apply pins dropped by garbage collection (lock held)."""
        while self._unpinned:
            arena_id, data, generation = self._unpinned.popleft()
            b = self._arenas[arena_id].used[data]
            assert b.generation == generation, "a pinned block was freed"
            b.pins -= 1
            self._maybe_free(b)
        while self._deferred:
            ref = self._deferred.popleft()
            try:
                self._release_locked(ref, None)
            except StaleRefError as e:
                log.error("deferred release failed: %s", e)

    def _defer_release(self, ref: Ref) -> None:
        """``release(ref)`` from a garbage-collection callback: only queue it
        (taking the lock there could deadlock); applied by the next operation."""
        self._deferred.append(ref)

    def _maybe_free(self, b: _Block) -> None:
        if b.pins or b.holds or b.arena.used.get(b.data) is not b:
            return
        arena = b.arena
        _HDR.pack_into(arena.mm, b.data - HEADER, _FREED, 0, 0, 0)
        del arena.used[b.data]
        arena.used_sorted.remove(b.data)
        arena.free(b.data - HEADER, HEADER + b.capacity)
        self._cond.notify_all()

    def _alloc(self, nbytes: int) -> _Block:
        if self._closed:
            raise ObjectStoreError("store is closed")
        capacity = _round_up(max(nbytes, 1), ALIGN)
        extent = HEADER + capacity
        deadline: float | None = None
        while True:
            if self._closed:
                raise ObjectStoreError("store was closed while waiting for room")
            self._drain()
            for arena in self._arenas.values():
                start = arena.alloc(extent)
                if start is not None:
                    return self._new_block(arena, start, capacity)
            total = self._total()
            if self.on_full == "grow":
                size = max(self.arena_bytes, _round_up(extent, _PAGE))
                if total + size <= self.max_bytes:
                    arena = self._add_arena(size)
                    log.warning(
                        "object store %#x full: added arena %#x of %d MiB (%d of %d MiB used)",
                        self.store_id, arena.arena_id, size >> 20,
                        (total + size) >> 20, self.max_bytes >> 20,
                    )  # fmt: skip
                    continue
                raise StoreFullError(
                    f"object store full: {nbytes} bytes requested, {total} of max_bytes="
                    f"{self.max_bytes} in {len(self._arenas)} arenas, largest free extent "
                    f"{self._largest_free()} bytes (on_full='grow')"
                )
            if extent > self.arena_bytes:
                raise StoreFullError(
                    f"an object of {nbytes} bytes can never fit in an arena of "
                    f"{self.arena_bytes} bytes (on_full={self.on_full!r}; use a larger "
                    f"arena_bytes or on_full='grow')"
                )
            if self.on_full == "error":
                raise StoreFullError(
                    f"object store full: {nbytes} bytes requested, largest free extent "
                    f"{self._largest_free()} of {total} bytes (on_full='error')"
                )
            now = time.monotonic()
            if deadline is None:
                deadline = now + self.block_timeout
            if now >= deadline:
                raise StoreFullError(
                    f"object store full: waited {self.block_timeout} s for releases, "
                    f"{nbytes} bytes requested, largest free extent {self._largest_free()} "
                    f"of {total} bytes (on_full='block')"
                )
            # Releases notify; pins dropped by GC are polled.
            self._cond.wait(min(deadline - now, 0.005))

    def _largest_free(self) -> int:
        return max((a.largest_free() for a in self._arenas.values()), default=0)

    def _new_block(self, arena: _Arena, start: int, capacity: int) -> _Block:
        gen = next(self._generation)
        data = start + HEADER
        _HDR.pack_into(arena.mm, start, _MAGIC, gen, capacity, 0)
        b = _Block(arena, data, capacity, gen)
        arena.used[data] = b
        bisect.insort(arena.used_sorted, data)
        return b

    def _pinned_array(self, b: _Block, dt: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        n = math.prod(shape) * dt.itemsize
        arena = b.arena
        lease = _Lease(arena.mv[b.data : b.data + n], arena.base + b.data, shape, dt, False)
        b.pins += 1
        # The key, not the block: nothing may keep the arena's mmap alive.
        fin = weakref.finalize(lease, self._unpinned.append, (arena.arena_id, b.data, b.generation))
        fin.atexit = False
        return np.asarray(lease)

    def alloc_array(self, shape: int | Iterable[int], dtype: Any = np.float64) -> np.ndarray:
        """A new writable C-ordered array living in an arena (zero-copy
        produce): fill it, then serialize or :meth:`ref_of` it; nothing is
        copied. Contents are uninitialised. The block stays allocated while the
        array (or any view of it) is alive, and while peers hold it.

        >>> with Store(1 << 20) as s:
        ...     a = s.alloc_array(3, np.int64)
        ...     a[:] = 1
        ...     int(a.sum()), a.ctypes.data % 64
        (3, 0)
        """
        dt, shp = _as_dtype_shape(dtype, shape)
        nbytes = math.prod(shp) * dt.itemsize
        with self._lock:
            b = self._alloc(nbytes)
            return self._pinned_array(b, dt, shp)

    def alloc_buffer(self, nbytes: int) -> memoryview:
        """A new writable ``memoryview`` (format ``B``) of ``nbytes`` in an
        arena; same rules as :meth:`alloc_array`."""
        return memoryview(self.alloc_array(int(nbytes), np.uint8))

    def put(self, buffer: Any) -> Ref:
        """Copy any buffer (bytes-like, numpy array, also non-contiguous) into
        a new block with one ``memcpy``; returns a reference carrying one hold
        of the caller's own, dropped with ``store.release(ref)``."""
        if isinstance(buffer, np.ndarray):
            src = buffer
        else:
            try:
                mv = memoryview(buffer)
            except TypeError:
                raise ObjectStoreError(
                    f"cannot put a {type(buffer).__name__}: not a buffer"
                ) from None
            src = np.frombuffer(mv.cast("B"), np.uint8) if mv.contiguous else np.asarray(mv)
        if src.dtype.hasobject:
            raise ObjectStoreError("cannot put an array of Python objects into shared memory")
        nbytes = src.nbytes
        with self._lock:
            b = self._alloc(nbytes)
            b.holds[None] = 1
            if nbytes:
                arena = b.arena
                dst = np.frombuffer(arena.mv[b.data : b.data + nbytes], np.uint8)
                if src.flags.c_contiguous:
                    np.copyto(dst, src.reshape(-1).view(np.uint8))
                else:  # one strided copy, no intermediate
                    np.copyto(dst.view(src.dtype).reshape(src.shape), src)
                del dst
            return b.ref(length=nbytes)

    # ---- references and holds

    def ref_of(self, obj: Any, *, hold: bool = False) -> Ref | None:
        """The reference of ``obj``'s memory when it lies inside one live block
        of this store (e.g. an array from :meth:`alloc_array`, or a slice of
        one), else None. Copies nothing. With ``hold=True`` the reference
        carries one hold of the caller's own, as :meth:`put`'s does; without,
        it is valid as long as ``obj`` is alive."""
        span = _span(obj)
        if span is None:
            return None
        addr, n = span
        with self._lock:
            for arena in self._arenas.values():
                if arena.base <= addr and addr + n <= arena.base + arena.size:
                    b = arena.block_at(addr - arena.base, n)
                    if b is None:
                        return None
                    if hold:
                        b.holds[None] = b.holds.get(None, 0) + 1
                    return b.ref(addr - arena.base, n)
        return None

    def _block(self, ref: Ref) -> _Block:
        arena = self._arenas.get(ref.arena_id)
        if arena is None:
            raise StaleRefError(f"{ref.describe()}: not an arena of store {self.store_id:#x}")
        b = arena.used.get(ref.block)
        if b is None or b.generation != ref.generation:
            now = "free" if b is None else f"reused (generation {b.generation})"
            raise StaleRefError(f"{ref.describe()}: stale reference, the block is {now}")
        return b

    def share(self, ref: Ref, peer: Hashable, n: int = 1) -> None:
        """Record that ``n`` more copies of ``ref`` went to ``peer``; each comes
        back as one :meth:`release` (or all at once, :meth:`release_all_for`)."""
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        with self._lock:
            self._drain()
            b = self._block(ref)
            b.holds[peer] = b.holds.get(peer, 0) + n

    def release(self, ref: Ref, peer: Hashable = None) -> None:
        """Drop one hold of ``peer`` (None: the caller's own hold from
        :meth:`put` / ``ref_of(hold=True)``). A release that matches no hold
        (stale reference, twice released) raises :class:`StaleRefError` and
        changes nothing."""
        with self._lock:
            self._drain()
            self._release_locked(ref, peer)

    def _release_locked(self, ref: Ref, peer: Hashable) -> None:
        b = self._block(ref)
        count = b.holds.get(peer, 0)
        if count <= 0:
            raise StaleRefError(f"{ref.describe()}: released by {peer!r}, which holds none")
        if count == 1:
            del b.holds[peer]
        else:
            b.holds[peer] = count - 1
        self._maybe_free(b)

    def release_all_for(self, peer: Hashable) -> int:
        """Drop every hold of ``peer`` (it died or disconnected); returns how
        many holds were dropped."""
        dropped = 0
        with self._lock:
            self._drain()
            for arena in self._arenas.values():
                for b in list(arena.used.values()):
                    count = b.holds.pop(peer, 0)
                    if count:
                        dropped += count
                        self._maybe_free(b)
        if dropped:
            log.info("released %d holds of dead peer %r", dropped, peer)
        return dropped

    def holds(self, ref: Ref) -> dict[Hashable, int]:
        """A copy of the per-peer holds of ``ref``'s block (for tests, stats)."""
        with self._lock:
            self._drain()
            return dict(self._block(ref).holds)

    def is_live(self, ref: Ref) -> bool:
        """Whether ``ref``'s block is still allocated with ``ref``'s generation."""
        with self._lock:
            self._drain()
            try:
                self._block(ref)
            except StaleRefError:
                return False
            return True

    def stats(self) -> dict[str, int]:
        """Arenas, bytes mapped, bytes in use (headers included), live blocks."""
        with self._lock:
            self._drain()
            arenas = list(self._arenas.values())
            return {
                "arenas": len(arenas),
                "bytes_total": sum(a.size for a in arenas),
                "bytes_used": sum(a.used_bytes for a in arenas),
                "blocks": sum(len(a.used) for a in arenas),
            }

    def close(self) -> None:
        """Close every fd and unmap every arena that no live array points into;
        an arena some array still points into is unmapped (and the fd Python's
        ``mmap`` keeps is closed) when the last such array is collected.
        Idempotent. Peers that mapped an arena keep it until they unmap it."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for arena in self._arenas.values():
                arena.close()
            self._arenas.clear()
            self._unpinned.clear()
            self._deferred.clear()
            self._fds.clear()
            self._finalizer.detach()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_fds(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()


# --------------------------------------------------------------------------- consumer side


class _Mapping:
    __slots__ = ("arena_id", "base", "fd", "mm", "mv", "owner", "size")

    def __init__(self, arena_id: int, fd: int, size: int, owner: Hashable, prefault: bool):
        st = os.fstat(fd)
        if st.st_size < size:
            raise ObjectStoreError(
                f"arena {arena_id:#x}: fd is {st.st_size} bytes, {size} were announced"
            )
        try:
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        except OSError:
            seals = 0
        if seals & _REQUIRED_SEALS != _REQUIRED_SEALS:
            raise ObjectStoreError(
                f"arena {arena_id:#x}: fd is not a memfd sealed against shrinking; a producer "
                "could truncate it and crash this process with SIGBUS"
            )
        flags = mmap.MAP_SHARED | (mmap.MAP_POPULATE if prefault else 0)
        self.mm = mmap.mmap(fd, size, flags=flags, prot=mmap.PROT_READ)
        self.mv = memoryview(self.mm)
        self.base = _base_address(self.mm)
        self.arena_id, self.fd, self.size, self.owner = arena_id, fd, size, owner


class ArenaMap:
    """The consumer's read-only view of other processes' arenas (see the
    module docstring for the rules).

    ``attach`` takes ownership of the fd. ``notify``, if given, is called
    (from any thread, possibly inside a garbage collection) after a release
    token is queued: make it tiny and non-blocking, e.g. a write to an eventfd
    that wakes the transport, which then calls :meth:`take_releases`.
    """

    def __init__(self, *, prefault: bool = False, notify: Callable[[], None] | None = None):
        self.prefault = prefault
        self._notify = notify
        self._lock = threading.Lock()
        self._maps: dict[int, _Mapping] = {}
        self._events: collections.deque[tuple[int, Release]] = collections.deque()
        self._releases: list[Release] = []
        # live leases: id -> (arena_id, start, end, ref, weakref to lease)
        self._live: dict[int, tuple[int, int, int, Ref, weakref.ref]] = {}
        self._lease_ids = itertools.count()
        # forward holds: block key -> {peer: [count, lease]}
        self._pins: dict[tuple[int, int, int], dict[Hashable, list[Any]]] = {}
        self._deferred: collections.deque[Ref] = collections.deque()
        self._closed = False

    # ---- arenas

    def attach(self, arena_id: int, fd: int, size: int, owner: Hashable = None) -> None:
        """Map arena ``arena_id`` read-only from ``fd`` (this map now owns the
        fd). ``owner`` is the default peer release tokens go to. Attaching an
        arena twice closes the second fd and keeps the first mapping."""
        with self._lock:
            if arena_id in self._maps:
                os.close(fd)
                return
            try:
                self._maps[arena_id] = _Mapping(arena_id, fd, size, owner, self.prefault)
            except BaseException:
                os.close(fd)
                raise

    def detach(self, arena_id: int) -> None:
        """Forget an arena and close its fd. Views still alive keep the memory
        mapped until they die; no new view can be made."""
        with self._lock:
            m = self._maps.pop(arena_id, None)
        if m is not None:
            _unmap(m)

    def detach_owner(self, owner: Hashable) -> None:
        """Detach every arena attached with ``owner`` (that peer is gone)."""
        with self._lock:
            ids = [i for i, m in self._maps.items() if m.owner == owner]
        for i in ids:
            self.detach(i)

    @property
    def arenas(self) -> list[ArenaInfo]:
        """Attached arenas with the fds this map holds (to forward them)."""
        with self._lock:
            return [ArenaInfo(m.arena_id, m.fd, m.size) for m in self._maps.values()]

    def address_range(self, arena_id: int) -> tuple[int, int]:
        """(start, end) virtual addresses of the arena's mapping here."""
        m = self._maps[arena_id]
        return m.base, m.base + m.size

    # ---- views

    def _check(self, ref: Ref) -> _Mapping:
        m = self._maps.get(ref.arena_id)
        if m is None:
            raise StaleRefError(f"{ref.describe()}: arena not attached in this process")
        if not (
            HEADER <= ref.block <= ref.offset
            and ref.block % ALIGN == 0
            and ref.offset + ref.length <= m.size
        ):
            raise StaleRefError(f"{ref.describe()}: outside the arena's {m.size} bytes")
        magic, gen, capacity, _ = _HDR.unpack_from(m.mm, ref.block - HEADER)
        if magic != _MAGIC or gen != ref.generation:
            state = "freed" if magic == _FREED else "not a block"
            if magic == _MAGIC:
                state = f"reused (generation {gen})"
            raise StaleRefError(f"{ref.describe()}: stale reference, the block is {state}")
        if ref.offset + ref.length > ref.block + capacity:
            raise StaleRefError(f"{ref.describe()}: past the end of its {capacity}-byte block")
        return m

    def _lease(self, ref: Ref, dt: np.dtype, shape: tuple[int, ...], owner: Hashable) -> _Lease:
        with self._lock:
            if self._closed:
                raise ObjectStoreError("arena map is closed")
            self._drain()
            m = self._check(ref)
            n = math.prod(shape) * dt.itemsize
            if n > ref.length:
                raise ObjectStoreError(
                    f"{ref.describe()}: {dt} {shape} needs {n} bytes, the reference has "
                    f"{ref.length}"
                )
            lease = _Lease(m.mv[ref.offset : ref.offset + n], m.base + ref.offset, shape, dt, True)
            lid = next(self._lease_ids)
            rel = Release(m.owner if owner is None else owner, ref)
            self._live[lid] = (ref.arena_id, ref.offset, ref.offset + ref.length, ref,
                               weakref.ref(lease))  # fmt: skip
            fin = weakref.finalize(lease, self._released, lid, rel)
            fin.atexit = False
            return lease

    def _released(self, lid: int, rel: Release) -> None:
        # Runs in garbage collection: only queue (deque.append is atomic).
        self._events.append((lid, rel))
        if self._notify is not None:
            try:
                self._notify()
            except Exception:
                log.exception("ArenaMap notify callback failed")

    def _drain(self) -> None:
        while self._deferred:
            ref = self._deferred.popleft()
            try:
                self._release_locked(ref, None)
            except StaleRefError as e:
                log.error("deferred release failed: %s", e)
        while self._events:
            lid, rel = self._events.popleft()
            self._live.pop(lid, None)
            self._releases.append(rel)

    def _defer_release(self, ref: Ref) -> None:
        """``release(ref)`` from a garbage-collection callback (queue only)."""
        self._deferred.append(ref)

    def array(
        self, ref: Ref, dtype: Any = np.uint8, shape: int | Iterable[int] | None = None,
        owner: Hashable = None,
    ) -> np.ndarray:  # fmt: skip
        """A read-only array over ``ref`` (zero-copy). ``shape`` defaults to
        as many ``dtype`` items as fit. When it (and everything derived from
        it) is collected, ``Release(owner, ref)`` is queued; ``owner``
        defaults to the owner given at :meth:`attach`. Call once per received
        reference: each call produces one release token."""
        dt = np.dtype(dtype)
        if shape is None:
            shape = ref.length // dt.itemsize if dt.itemsize else 0
        dt, shp = _as_dtype_shape(dt, shape)
        return np.asarray(self._lease(ref, dt, shp, owner))

    def view(self, ref: Ref, owner: Hashable = None) -> memoryview:
        """A read-only ``memoryview`` (format ``B``) over ``ref``; same rules
        as :meth:`array`."""
        return memoryview(self.array(ref, np.uint8, ref.length, owner))

    def drop(self, ref: Ref, owner: Hashable = None) -> None:
        """Queue the release of a reference that was received but will never
        be viewed (e.g. a message discarded unread)."""
        with self._lock:
            m = self._maps.get(ref.arena_id)
            if owner is None and m is not None:
                owner = m.owner
            self._releases.append(Release(owner, ref))

    def has_releases(self) -> bool:
        """Cheap, lock-free check before :meth:`take_releases` (called every tag)."""
        return bool(self._releases or self._events or self._deferred)

    def take_releases(self) -> list[Release]:
        """Release tokens queued since the last call, oldest first."""
        with self._lock:
            self._drain()
            out, self._releases = self._releases, []
            return out

    def live_views(self) -> int:
        """How many views handed out are still alive."""
        with self._lock:
            self._drain()
            return len(self._live)

    # ---- zero-copy forward

    def ref_of(self, obj: Any, *, hold: bool = False) -> Ref | None:
        """The reference of a received object's memory (or a part of it), so
        forwarding it re-sends the reference instead of the bytes; None when
        ``obj`` does not lie in a live view of this map. With ``hold=True``,
        the view stays pinned (as if ``obj`` were alive) until
        ``release(ref)``."""
        span = _span(obj)
        if span is None:
            return None
        addr, n = span
        with self._lock:
            self._drain()
            for arena_id, start, end, ref, wr in self._live.values():
                m = self._maps.get(arena_id)
                if m is None:
                    continue
                off = addr - m.base
                if start <= off and off + n <= end and wr() is not None:
                    out = Ref(arena_id, off, n, ref.generation, ref.block)
                    if hold:
                        self._pin(out, None, 1)
                    return out
        return None

    def _pin(self, ref: Ref, peer: Hashable, n: int) -> None:
        key = (ref.arena_id, ref.block, ref.generation)
        peers = self._pins.get(key)
        if peers is None:
            lease = None
            for arena_id, start, end, r, wr in self._live.values():
                if (arena_id, r.block, r.generation) == key:
                    lease = wr()
                    if lease is not None and start <= ref.offset and ref.offset + ref.length <= end:
                        break
                    lease = None
            if lease is None:
                raise StaleRefError(f"{ref.describe()}: no live view of it in this process")
            peers = self._pins[key] = {}
        else:
            lease = next(iter(peers.values()))[1]
        entry = peers.setdefault(peer, [0, lease])
        entry[0] += n

    def share(self, ref: Ref, peer: Hashable, n: int = 1) -> None:
        """Forwarding: ``n`` copies of a received reference went to ``peer``;
        this process keeps its view alive until ``peer`` releases them."""
        with self._lock:
            self._drain()
            self._pin(ref, peer, n)

    def release(self, ref: Ref, peer: Hashable = None) -> None:
        """Drop one forward hold of ``peer`` (None: the caller's own)."""
        with self._lock:
            self._release_locked(ref, peer)
            self._drain()

    def _release_locked(self, ref: Ref, peer: Hashable) -> None:
        key = (ref.arena_id, ref.block, ref.generation)
        entry = self._pins.get(key, {}).get(peer)
        if entry is None:
            raise StaleRefError(f"{ref.describe()}: released by {peer!r}, which holds none")
        entry[0] -= 1
        if entry[0] == 0:
            del self._pins[key][peer]
            if not self._pins[key]:
                del self._pins[key]

    def release_all_for(self, peer: Hashable) -> int:
        """Drop every forward hold of ``peer``; returns how many."""
        dropped = 0
        with self._lock:
            for key in list(self._pins):
                entry = self._pins[key].pop(peer, None)
                if entry is not None:
                    dropped += entry[0]
                if not self._pins[key]:
                    del self._pins[key]
        return dropped

    def close(self) -> None:
        """Detach every arena and drop forward holds. Views still alive keep
        their memory mapped until they die."""
        with self._lock:
            self._closed = True
            maps, self._maps = list(self._maps.values()), {}
            self._pins.clear()
        for m in maps:
            _unmap(m)

    def __enter__(self) -> ArenaMap:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _unmap(m: _Mapping) -> None:
    m.mv.release()
    with contextlib.suppress(BufferError):
        m.mm.close()  # else live views hold slices; the mapping dies with the last of them
    os.close(m.fd)


# --------------------------------------------------------------------------- fd passing

_FDMSG = struct.Struct("<4sI")  # magic, count
_FDENT = struct.Struct("<QQ")  # arena_id, size
_FDMAGIC = b"HPAF"
_MAX_FDS = 250  # SCM_MAX_FD is 253 per message


def send_arena_fds(sock: socket.socket, arenas: Iterable[ArenaInfo]) -> None:
    """Send arena fds (and their ids and sizes) over a connected Unix socket
    with ``SCM_RIGHTS``; the peer calls :func:`recv_arena_fds`. The kernel
    duplicates the fds into the peer, so each side closes its own. Sends one
    message per 250 arenas; the socket must be blocking.

    >>> a, b = socket.socketpair()
    >>> with Store(1 << 20) as s:
    ...     send_arena_fds(a, s.arenas)
    ...     got = recv_arena_fds(b)
    ...     [(i.arena_id, i.size) for i in got] == [(i.arena_id, i.size) for i in s.arenas]
    True
    >>> for i in got: os.close(i.fd)
    >>> a.close(); b.close()
    """
    items = list(arenas)
    for i in range(0, max(len(items), 1), _MAX_FDS):
        chunk = items[i : i + _MAX_FDS]
        body = _FDMSG.pack(_FDMAGIC, len(chunk)) + b"".join(
            _FDENT.pack(a.arena_id, a.size) for a in chunk
        )
        sent = socket.send_fds(sock, [body], [a.fd for a in chunk])
        if sent < len(body):
            sock.sendall(body[sent:])
        if not chunk:
            break


def recv_arena_fds(sock: socket.socket) -> list[ArenaInfo]:
    """Receive one message of :func:`send_arena_fds` (call it once per message
    sent, i.e. once per 250 arenas). On a stream socket it consumes exactly
    that message's bytes, so it can sit between the transport's own frames.
    The caller owns the returned fds (hand them to :meth:`ArenaMap.attach`)."""
    stream = sock.type == socket.SOCK_STREAM
    first = _FDMSG.size if stream else _FDMSG.size + _MAX_FDS * _FDENT.size
    data, fds, _flags, _addr = socket.recv_fds(sock, first, _MAX_FDS)
    try:
        if not data:
            raise ObjectStoreError("peer closed the socket before sending arena fds")
        if stream and len(data) < _FDMSG.size:
            data += _recv_exact(sock, _FDMSG.size - len(data))
        magic, count = _FDMSG.unpack_from(data)
        if magic != _FDMAGIC or count > _MAX_FDS:
            raise ObjectStoreError(f"not an arena-fd message (magic {magic!r}, count {count})")
        if stream:
            data += _recv_exact(sock, count * _FDENT.size)
        if len(data) != _FDMSG.size + count * _FDENT.size or len(fds) != count:
            raise ObjectStoreError(
                f"arena-fd message announces {count} arenas, carries {len(fds)} fds and "
                f"{len(data) - _FDMSG.size} bytes of descriptors"
            )
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    out = []
    for k in range(count):
        arena_id, size = _FDENT.unpack_from(data, _FDMSG.size + k * _FDENT.size)
        out.append(ArenaInfo(arena_id, fds[k], size))
    return out


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ObjectStoreError("peer closed the socket in the middle of an arena-fd message")
        buf += chunk
    return bytes(buf)
