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

from hprm_core.object_store.arena_map import ArenaMap
from hprm_core.object_store.fd_passing import recv_arena_fds, send_arena_fds
from hprm_core.object_store.ref import (
    ALIGN,
    DEFAULT_ARENA_BYTES,
    ArenaInfo,
    ObjectStoreError,
    Ref,
    Release,
    StaleRefError,
    StoreFullError,
)
from hprm_core.object_store.store import Store

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
