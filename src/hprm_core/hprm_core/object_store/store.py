"""The producer's side: arenas it owns (memfds with a first-fit free list)
and the :class:`Store` that places objects in them and frees each block
once no receiver holds it and no Python object of the producer pins it."""

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
import secrets
import threading
import time
import weakref
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hprm_core.object_store.memory import (
    _as_dtype_shape,
    _base_address,
    _Lease,
    _span,
)
from hprm_core.object_store.ref import (
    _FREED,
    _HDR,
    _MAGIC,
    _PAGE,
    ALIGN,
    ARENA_PREFIX,
    DEFAULT_ARENA_BYTES,
    DEFAULT_MAX_BYTES,
    HEADER,
    ArenaInfo,
    ObjectStoreError,
    Ref,
    StaleRefError,
    StoreFullError,
    _round_up,
)

log = logging.getLogger("hprm.object_store")


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
        # Pins of all blocks, counted down only as _drain applies them: never less than
        # the pins alive, so zero means no Python object points into this store.
        self._pins = 0
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
            self._pins -= 1
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
        self._pins += 1
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

    def ref_of(
        self, obj: Any, *, hold: bool = False, share_with: Sequence[Hashable] = ()
    ) -> Ref | None:
        """The reference of ``obj``'s memory when it lies inside one live block
        of this store (e.g. an array from :meth:`alloc_array`, or a slice of
        one), else None. Copies nothing. With ``hold=True`` the reference
        carries one hold of the caller's own, as :meth:`put`'s does; without,
        it is valid as long as ``obj`` is alive. ``share_with``: peers it goes
        to now, one copy each, recorded as :meth:`share` would (a sender about
        to send ``obj`` needs no hold of its own in between: one lock, not three)."""
        if not self._pins:  # nothing was made in place: the data plane's usual case
            return None
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
                    holds = b.holds
                    if hold:
                        holds[None] = holds.get(None, 0) + 1
                    for peer in share_with:
                        holds[peer] = holds.get(peer, 0) + 1
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

    def held_arenas(self) -> dict[Hashable, set[int]]:
        """For each peer holding blocks, the arenas they lie in: what that peer
        must have mapped before this store may close (``DataPlane.close``)."""
        out: dict[Hashable, set[int]] = {}
        with self._lock:
            self._drain()
            for arena in self._arenas.values():
                for b in arena.used.values():
                    for peer in b.holds:
                        out.setdefault(peer, set()).add(arena.arena_id)
        return out

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
