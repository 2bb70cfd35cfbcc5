"""The consumer's side: arenas of other processes mapped read-only, and
the views it hands out, each returning a release token to the producer
when user code drops it (:class:`ArenaMap`)."""

from __future__ import annotations

import collections
import contextlib
import fcntl
import itertools
import logging
import math
import mmap
import os
import threading
import weakref
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from hprm_core.object_store.memory import (
    _as_dtype_shape,
    _base_address,
    _span,
)
from hprm_core.object_store.ref import (
    _FREED,
    _HDR,
    _MAGIC,
    _REQUIRED_SEALS,
    ALIGN,
    HEADER,
    ArenaInfo,
    ObjectStoreError,
    Ref,
    Release,
    StaleRefError,
)

log = logging.getLogger("hprm.object_store")
_BYTE = np.dtype(np.uint8)


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


class _ViewRef(weakref.ref):
    """The weak reference to a handed-out view's base array, carrying what its
    death releases. One object per received reference, no ``weakref.finalize``
    (its registry and closure cost more than the view itself when a message
    arrives with cold caches)."""

    __slots__ = ("lid", "release")  # the view's range is release.ref's


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
        self._events: collections.deque[_ViewRef] = collections.deque()
        self._releases: list[Release] = []
        # live views: id -> weak reference to the view's base array
        self._live: dict[int, _ViewRef] = {}
        self._on_dead = self._released  # one bound method for every view
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

    def __contains__(self, arena_id: int) -> bool:
        """Whether arena ``arena_id`` is attached (asked per received reference:
        a dict lookup, no list of :attr:`arenas` built)."""
        return arena_id in self._maps

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

    def _lease(self, ref: Ref, dt: np.dtype, count: int, owner: Hashable) -> np.ndarray:
        """A read-only 1-d array of ``count`` ``dt`` items over ``ref``, tracked.

        The array is ``np.frombuffer`` over the read-only mapping: its buffer
        export keeps the mapping open, and everything derived from it keeps it
        alive, so its death (seen by a weak reference) is the moment no Python
        object points into the block any more."""
        with self._lock:
            if self._closed:
                raise ObjectStoreError("arena map is closed")
            self._drain()
            m = self._check(ref)
            n = count * dt.itemsize
            if n > ref.length:
                raise ObjectStoreError(
                    f"{ref.describe()}: {count} x {dt} needs {n} bytes, the reference has "
                    f"{ref.length}"
                )
            base = np.frombuffer(m.mm, dt, count, ref.offset)
            wr = _ViewRef(base, self._on_dead)
            wr.lid = lid = next(self._lease_ids)
            wr.release = Release(m.owner if owner is None else owner, ref)
            self._live[lid] = wr
            return base

    def _released(self, wr: _ViewRef) -> None:
        # Runs in garbage collection: only queue (deque.append is atomic).
        self._events.append(wr)
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
            wr = self._events.popleft()
            self._live.pop(wr.lid, None)
            self._releases.append(wr.release)

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
        return self._lease(ref, dt, math.prod(shp), owner).reshape(shp)

    def view(self, ref: Ref, owner: Hashable = None) -> memoryview:
        """A read-only ``memoryview`` (format ``B``) over ``ref``; same rules
        as :meth:`array`."""
        return memoryview(self._lease(ref, _BYTE, ref.length, owner))

    def buffer(self, ref: Ref, owner: Hashable = None) -> np.ndarray:
        """A read-only 1-d ``uint8`` array over ``ref``; same rules as :meth:`array`
        (the data plane's path for every received reference: no dtype or shape to
        work out, and pickle and numpy take the array as it is)."""
        return self._lease(ref, _BYTE, ref.length, owner)

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

    def ref_of(
        self, obj: Any, *, hold: bool = False, share_with: Sequence[Hashable] = ()
    ) -> Ref | None:
        """The reference of a received object's memory (or a part of it), so
        forwarding it re-sends the reference instead of the bytes; None when
        ``obj`` does not lie in a live view of this map. With ``hold=True``,
        the view stays pinned (as if ``obj`` were alive) until
        ``release(ref)``. ``share_with``: peers it is forwarded to now, one
        copy each, as :meth:`share` would record them."""
        if not self._live:  # nothing received is alive: the sender's usual case
            return None
        span = _span(obj)
        if span is None:
            return None
        addr, n = span
        with self._lock:
            self._drain()
            for wr in self._live.values():
                r = wr.release.ref
                m = self._maps.get(r.arena_id)
                if m is None:
                    continue
                off = addr - m.base
                if r.offset <= off and off + n <= r.offset + r.length and wr() is not None:
                    out = Ref(r.arena_id, off, n, r.generation, r.block)
                    if hold:
                        self._pin(out, None, 1)
                    for peer in share_with:
                        self._pin(out, peer, 1)
                    return out
        return None

    def _pin(self, ref: Ref, peer: Hashable, n: int) -> None:
        key = (ref.arena_id, ref.block, ref.generation)
        peers = self._pins.get(key)
        if peers is None:
            lease = None
            for wr in self._live.values():
                r = wr.release.ref
                if (r.arena_id, r.block, r.generation) == key:
                    lease = wr()
                    end = r.offset + r.length
                    inside = r.offset <= ref.offset and ref.offset + ref.length <= end
                    if lease is not None and inside:
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

    def forwarded_arenas(self) -> dict[Hashable, set[int]]:
        """For each peer holding forwarded blocks, the arenas they lie in (as
        :meth:`Store.held_arenas`, for arenas this process only maps)."""
        out: dict[Hashable, set[int]] = {}
        with self._lock:
            for (arena_id, _, _), pins in self._pins.items():
                for peer in pins:
                    out.setdefault(peer, set()).add(arena_id)
        return out

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
