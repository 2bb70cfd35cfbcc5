"""Object store: allocator, references, lifetime, store-full policies, fd
passing, and real processes killed with SIGKILL. No mocks: real memfds, real
mappings, real Unix sockets, real subprocesses."""

import gc
import logging
import os
import pickle
import socket
import struct
import threading
import time

import numpy as np
import pytest

from hprm_core.object_store import (
    ALIGN,
    ArenaInfo,
    ArenaMap,
    ObjectStoreError,
    Ref,
    Release,
    StaleRefError,
    Store,
    StoreFullError,
    recv_arena_fds,
    send_arena_fds,
)

MiB = 1 << 20


# Every test: nothing new in /dev/shm, no arena fd or mapping left (conftest's arenas).
pytestmark = pytest.mark.usefixtures("arenas")


def attach_all(amap, store, owner="producer"):
    for a in store.arenas:
        amap.attach(a.arena_id, os.dup(a.fd), a.size, owner=owner)


# --------------------------------------------------------------------------- Ref


def test_ref_packs_into_40_bytes_and_rejects_malformed():
    r = Ref(arena_id=(5 << 32) | 2, offset=192, length=1000, generation=9)
    assert r.block == 192 and len(r.pack()) == 40 and Ref.SIZE == 40
    assert Ref.unpack(r.pack()) == r
    part = Ref(1, 256, 8, 3, block=192)
    assert Ref.unpack(part.pack()) == part
    with pytest.raises(ObjectStoreError, match="40 bytes, got 39"):
        Ref.unpack(r.pack()[:-1])
    with pytest.raises(ObjectStoreError, match="malformed Ref"):
        Ref.unpack(struct.pack("<QQQQQ", 1, 64, 8, 0, 64))  # generation 0 is never allocated
    with pytest.raises(ObjectStoreError, match="malformed Ref"):
        Ref.unpack(struct.pack("<QQQQQ", 1, 64, 8, 1, 128))  # block after offset


# --------------------------------------------------------------------------- producer


def test_alloc_array_is_aligned_writable_and_recognised_without_copy():
    with Store(MiB) as s:
        a = s.alloc_array((3, 5), np.float32)
        b = s.alloc_array(7, np.int16)
        assert a.flags.writeable and a.flags.c_contiguous and a.shape == (3, 5)
        for x in (a, b):
            assert x.ctypes.data % ALIGN == 0
        a[:] = 1.5
        ra = s.ref_of(a)
        assert ra.length == a.nbytes == 60 and ra.offset == ra.block
        rb = s.ref_of(b)
        assert rb.generation == ra.generation + 1 and rb.block >= ra.block + 64 + 64
        # a slice inside a block names the same block
        part = s.ref_of(a[1])
        assert (part.block, part.generation, part.length) == (ra.block, ra.generation, 20)
        assert part.offset == ra.offset + 20
        # not in the store / not one contiguous range -> None
        assert s.ref_of(np.zeros(4)) is None
        assert s.ref_of(a[:, ::2]) is None
        assert s.ref_of(b"abc") is None and s.ref_of(42) is None
        mv = s.alloc_buffer(100)
        assert not mv.readonly and mv.format == "B" and len(mv) == 100
        mv[:3] = b"xyz"
        assert s.ref_of(mv).length == 100
        # the address of a writable buffer is read without numpy (ctypes), of a read-only
        # one or a layout ctypes refuses through numpy: the same reference either way
        pb = pickle.PickleBuffer(a).raw()  # what a sender's pickle hands over
        assert s.ref_of(pb) == s.ref_of(pb.toreadonly()) == s.ref_of(memoryview(a)) == ra
        # holds for the peers a reference is sent to, taken at once, none of its own
        shared = s.ref_of(b, share_with=["B", "C"])
        assert s.holds(shared) == {"B": 1, "C": 1}
        for peer in ("B", "C"):
            s.release(shared, peer)
        assert s.holds(shared) == {}
        with pytest.raises(ObjectStoreError, match="Python objects"):
            s.alloc_array(3, object)


def test_put_copies_contiguous_noncontiguous_and_bytes_like():
    with Store(MiB) as s, ArenaMap() as m:
        src = np.arange(24, dtype=np.float64).reshape(4, 6)
        cases = [src, src[:, ::2], src.T, b"hello", bytearray(b"x" * 1000), memoryview(b"mv")]
        refs = [s.put(x) for x in cases]
        attach_all(m, s)
        for x, r in zip(cases, refs, strict=True):
            want = np.ascontiguousarray(x).tobytes() if isinstance(x, np.ndarray) else bytes(x)
            assert bytes(m.view(r)) == want
            assert s.holds(r) == {None: 1}  # the caller's own hold
        got = m.array(refs[1], np.float64, (4, 3))
        assert np.array_equal(got, src[:, ::2])
        del got
        with pytest.raises(ObjectStoreError, match="not a buffer"):
            s.put("a str")


def test_release_frees_block_reuse_bumps_generation_and_stale_ref_is_rejected():
    with Store(MiB) as s, ArenaMap() as m:
        r1 = s.put(b"a" * 5000)
        s.release(r1)
        assert not s.is_live(r1) and s.stats()["blocks"] == 0
        r2 = s.put(b"b" * 5000)
        assert (r2.arena_id, r2.block) == (r1.arena_id, r1.block)  # first fit reuses it
        assert r2.generation > r1.generation
        attach_all(m, s)
        with pytest.raises(StaleRefError) as e:
            m.view(r1)
        msg = str(e.value)
        assert f"arena {r1.arena_id:#x}" in msg and f"offset {r1.offset}" in msg
        assert f"generation {r1.generation}" in msg and "reused" in msg
        with pytest.raises(StaleRefError, match="stale reference"):
            s.share(r1, "p")
        with pytest.raises(StaleRefError, match="stale reference"):
            s.release(r1)
        s.release(r2)
        with pytest.raises(StaleRefError, match="freed"):
            m.view(r2)
        # double release changes nothing
        r3 = s.put(b"c")
        s.share(r3, "p")
        s.release(r3, "p")
        with pytest.raises(StaleRefError, match="'p', which holds none"):
            s.release(r3, "p")
        assert s.is_live(r3)
        s.release(r3)
        # unknown arena, forged offsets
        with pytest.raises(StaleRefError, match="not attached"):
            m.view(Ref(12345, 64, 8, 1))
        a = s.arenas[0].arena_id
        with pytest.raises(StaleRefError, match="outside the arena"):
            m.view(Ref(a, 64, 10 * MiB, 1))
        with pytest.raises(StaleRefError, match="not a block"):
            m.view(Ref(a, 4096 + 64, 8, 99))
        with pytest.raises(StaleRefError, match="not an arena of store"):
            s.release(Ref(12345, 64, 8, 1))


def test_freed_neighbours_coalesce():
    with Store(MiB, on_full="error") as s:
        third = (MiB - 3 * 64) // 3 // 64 * 64
        refs = [s.put(np.zeros(third, np.uint8)) for _ in range(3)]
        with pytest.raises(StoreFullError):
            s.put(np.zeros(2 * third, np.uint8))
        s.release(refs[0])
        s.release(refs[2])
        s.release(refs[1])  # merges with both neighbours
        big = s.put(np.zeros(MiB - 64, np.uint8))
        assert s.stats()["bytes_used"] == MiB
        s.release(big)
        assert s.stats() == {"arenas": 1, "bytes_total": MiB, "bytes_used": 0, "blocks": 0}


def test_producer_array_pins_its_block_until_collected():
    with Store(MiB) as s:
        a = s.alloc_array(1000, np.uint8)
        ref = s.ref_of(a)
        s.share(ref, "peer", 2)
        s.release(ref, "peer")
        s.release(ref, "peer")
        assert s.is_live(ref)  # no holds left, but `a` still points into it
        view = a[10:20]
        del a
        gc.collect()
        assert s.is_live(ref)  # the view derived from it keeps it
        del view
        gc.collect()
        assert not s.is_live(ref)
        assert s.stats()["blocks"] == 0


def test_received_view_keeps_block_alive_and_releases_exactly_once():
    with Store(MiB) as s, ArenaMap() as m:
        data = np.arange(1000, dtype=np.int32)
        ref = s.put(data)
        s.share(ref, "consumer")
        s.release(ref)  # producer is finished with it
        attach_all(m, s, owner="producer")
        got = m.array(ref, np.int32, (1000,))
        assert not got.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            got[0] = 1
        held = got[500:]
        del got
        gc.collect()
        assert m.take_releases() == []  # `held` still points into it
        # the producer cannot reuse the block: new objects land elsewhere
        others = [s.put(np.zeros(1000, np.int32)) for _ in range(20)]
        assert all(o.block != ref.block for o in others)
        assert np.array_equal(held, data[500:])
        del held
        gc.collect()
        rel = m.take_releases()
        assert rel == [Release("producer", ref)]
        assert m.take_releases() == [] and m.live_views() == 0
        assert s.is_live(ref)
        s.release(rel[0].ref, "consumer")
        assert not s.is_live(ref)
        for o in others:
            s.release(o)


def test_release_all_for_dead_peer_reclaims_its_holds_only():
    with Store(MiB) as s:
        r1, r2 = s.put(b"1" * 100), s.put(b"2" * 100)
        for r in (r1, r2):
            s.share(r, "dead", 3)
            s.share(r, "alive")
            s.release(r)
        assert s.release_all_for("dead") == 6
        assert s.is_live(r1) and s.is_live(r2) and s.holds(r1) == {"alive": 1}
        s.release(r1, "alive")
        s.release(r2, "alive")
        assert s.stats()["blocks"] == 0
        assert s.release_all_for("nobody") == 0


def test_held_arenas_say_which_arenas_each_peer_still_needs_mapped():
    """What a closing producer hands over (``DataPlane.close``): per peer, the
    arenas of the blocks it holds, own and forwarded; released blocks drop out."""
    with Store(MiB) as s, ArenaMap() as m:
        small = s.put(b"1" * 100)
        big = s.put(np.zeros(2 * MiB, np.uint8))  # does not fit: a second arena
        first, second = small.arena_id, big.arena_id
        assert first != second
        s.share(small, 1)
        s.share(big, 1)
        s.share(big, 2)
        assert s.held_arenas() == {None: {first, second}, 1: {first, second}, 2: {second}}
        s.release(big, 2)
        s.release(small, 1)
        assert s.held_arenas() == {None: {first, second}, 1: {second}}
        attach_all(m, s, owner=0)
        arr = m.array(big, np.uint8, (2 * MiB,))
        m.share(big, 3)  # forwarded
        assert m.forwarded_arenas() == {3: {second}}
        m.release(big, 3)
        assert m.forwarded_arenas() == {}
        del arr
        s.release(big, 1)
        s.release(small)
        s.release(big)
        assert s.held_arenas() == {}


def test_ref_of_still_finds_a_live_object_after_others_died():
    # ref_of answers None at once when nothing is alive: the counts behind that
    # must not reach zero while one object still points into a block.
    with Store(MiB) as s, ArenaMap() as m:
        assert s.ref_of(np.zeros(4)) is None  # nothing made in place yet
        a, b = s.alloc_array(8, np.uint8), s.alloc_array(8, np.uint8)
        del a
        gc.collect()
        s.release(s.put(b"x" * 10))  # drains the collected pin
        assert s.ref_of(b) is not None
        refs = [s.put(np.full(16, i, np.uint8)) for i in range(2)]
        attach_all(m, s, owner="A")
        assert m.ref_of(np.zeros(4)) is None  # nothing received is alive
        views = [m.view(r) for r in refs]
        del views[0]
        gc.collect()
        assert m.take_releases() == [Release("A", refs[0])]
        assert m.ref_of(views[0]) == refs[1]
        del views
        gc.collect()
        assert m.take_releases() == [Release("A", refs[1])] and m.live_views() == 0
        assert m.ref_of(np.zeros(4)) is None
        for r in refs:
            s.release(r)


def test_zero_copy_forward_re_sends_the_same_reference_and_pins_the_view():
    with Store(MiB) as s, ArenaMap() as m:
        ref = s.put(np.arange(100, dtype=np.float64))
        s.share(ref, "B")
        s.release(ref)
        attach_all(m, s, owner="A")
        arr = m.array(ref, np.float64, (100,))
        assert m.ref_of(arr) == ref  # forwarding sends the same reference
        part = m.ref_of(arr[10:20])
        assert (part.block, part.offset, part.length) == (ref.block, ref.offset + 80, 80)
        assert m.ref_of(np.zeros(3)) is None
        m.share(ref, "C")  # forwarded to C
        del arr
        gc.collect()
        assert m.take_releases() == []  # C still has it
        m.release(ref, "C")
        gc.collect()
        assert m.take_releases() == [Release("A", ref)]
        with pytest.raises(StaleRefError, match="no live view"):
            m.share(ref, "C")
        with pytest.raises(StaleRefError, match="holds none"):
            m.release(ref, "C")
        s.release(ref, "B")


def test_drop_releases_unviewed_reference_to_its_owner():
    with Store(MiB) as s, ArenaMap() as m:
        ref = s.put(b"x")
        attach_all(m, s, owner="A")
        m.drop(ref)
        m.drop(ref, owner="other")
        assert m.take_releases() == [Release("A", ref), Release("other", ref)]
        s.release(ref)


def test_notify_is_called_when_a_release_is_queued():
    calls = []
    with Store(MiB) as s, ArenaMap(notify=lambda: calls.append(1)) as m:
        ref = s.put(b"x" * 10)
        attach_all(m, s)
        v = m.view(ref)
        assert calls == []
        del v
        gc.collect()
        assert calls == [1]
        m.take_releases()
        s.release(ref)


# --------------------------------------------------------------------------- store full


def test_on_full_error_raises_at_once_and_names_the_policy():
    # A block_timeout of an hour: had "error" waited like "block", the test would hang.
    with Store(MiB, on_full="error", block_timeout=3600) as s:
        r = s.put(np.zeros(MiB // 2, np.uint8))
        with pytest.raises(StoreFullError, match="on_full='error'"):
            s.put(np.zeros(MiB // 2, np.uint8))
        with pytest.raises(StoreFullError, match="can never fit"):
            s.alloc_buffer(2 * MiB)
        s.release(r)
        s.release(s.put(np.zeros(MiB // 2, np.uint8)))
        assert s.stats()["arenas"] == 1


def test_on_full_grow_adds_arenas_logs_and_stops_at_max_bytes(caplog):
    with Store(MiB, max_bytes=5 * MiB, on_full="grow") as s:
        caplog.set_level(logging.WARNING, logger="hprm.object_store")
        refs = [s.put(np.zeros(MiB - 64, np.uint8)) for _ in range(2)]
        assert s.stats()["arenas"] == 2 and len(s.arenas) == 2
        assert "added arena" in caplog.text and "MiB" in caplog.text
        assert len({r.arena_id for r in refs}) == 2
        big = s.alloc_buffer(2 * MiB)  # larger than an arena: a dedicated one
        assert s.arenas[2].size >= 2 * MiB + 64
        assert s.stats()["bytes_total"] == 4 * MiB + 4096
        with pytest.raises(StoreFullError, match="max_bytes=5242880"):
            s.put(np.zeros(MiB, np.uint8))
        assert s.stats()["bytes_total"] == 4 * MiB + 4096  # never past the cap
        del big
        for r in refs:
            s.release(r)
    with pytest.raises(ValueError, match="max_bytes"):
        Store(2 * MiB, max_bytes=MiB)
    with pytest.raises(ValueError, match="on_full"):
        Store(MiB, on_full="evict")


def test_on_full_block_waits_for_a_release_then_times_out():
    with Store(MiB, on_full="block", block_timeout=5.0) as s:
        r = s.put(np.zeros(MiB - 64, np.uint8))
        threading.Timer(0.3, s.release, args=(r,)).start()
        t0 = time.monotonic()
        r2 = s.put(np.zeros(MiB // 2, np.uint8))  # backpressure until the release
        waited = time.monotonic() - t0
        assert 0.25 < waited < 4.0
        assert r2.block == r.block
        # a producer-side array dropped in another thread unblocks too (GC pin)
        s.release(r2)
        a = s.alloc_array(MiB - 64, np.uint8)
        box = [a]
        del a

        def drop():
            time.sleep(0.3)
            box.clear()

        threading.Thread(target=drop).start()
        t0 = time.monotonic()
        s.release(s.put(b"y" * 100))
        assert 0.25 < time.monotonic() - t0 < 4.0
    with Store(MiB, on_full="block", block_timeout=0.3) as s:
        r = s.put(np.zeros(MiB - 64, np.uint8))
        t0 = time.monotonic()
        with pytest.raises(StoreFullError, match=r"waited 0.3 s .*on_full='block'"):
            s.put(b"z" * 100)
        assert time.monotonic() - t0 >= 0.29
        s.release(r)


# --------------------------------------------------------------------------- fds


def test_close_releases_every_fd_and_mapping_even_with_live_arrays(arenas):
    fds0 = arenas.open_fds()
    s = Store(MiB, max_bytes=3 * MiB)
    kept = s.alloc_array(MiB - 64, np.uint8)  # forces a second arena below
    s.put(np.ones(1000, np.uint8))
    # each arena: the store's fd, and the one Python's mmap object keeps
    assert len(arenas.fds()) == 4 and len(arenas.mappings()) == 2
    kept[:] = 3
    s.close()
    s.close()  # idempotent
    # `kept` still maps its arena (with mmap's fd): no use-after-free
    assert len(arenas.mappings()) == 1 and len(arenas.fds()) == 1
    assert int(kept[:10].sum()) == 30
    with pytest.raises(ObjectStoreError, match="closed"):
        s.put(b"x")
    del kept
    gc.collect()
    assert arenas.mappings() == [] and arenas.fds() == [] and arenas.open_fds() == fds0


def test_forgotten_store_closes_its_fds_when_collected(arenas):
    fds0 = arenas.open_fds()
    s = Store(MiB)
    s.put(b"x")
    del s
    gc.collect()
    assert arenas.open_fds() == fds0


def test_fd_passing_consumes_exactly_its_bytes_and_chunks_past_250_fds():
    a, b = socket.socketpair()
    with a, b, Store(4096, max_bytes=300 * 4096) as s, ArenaMap() as m:
        for _ in range(260):
            s.put(np.zeros(2048, np.uint8))  # one arena each
        assert len(s.arenas) == 260
        a.sendall(b"before")
        send_arena_fds(a, s.arenas)
        a.sendall(b"after")
        assert b.recv(6) == b"before"
        got = recv_arena_fds(b) + recv_arena_fds(b)
        assert b.recv(5) == b"after"
        assert [(g.arena_id, g.size) for g in got] == [(x.arena_id, x.size) for x in s.arenas]
        for g in got:
            m.attach(g.arena_id, g.fd, g.size)
        m.attach(got[0].arena_id, os.dup(got[0].fd), got[0].size)  # twice: ignored, fd closed
        assert len(m.arenas) == 260


def test_recv_arena_fds_rejects_garbage_and_eof():
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"NOPE\x00\x00\x00\x00")
        with pytest.raises(ObjectStoreError, match="not an arena-fd message"):
            recv_arena_fds(b)
        a.close()
        with pytest.raises(ObjectStoreError, match="closed the socket"):
            recv_arena_fds(b)


def test_attach_refuses_fds_that_could_shrink(tmp_path):
    with ArenaMap() as m:
        f = tmp_path / "plain"
        f.write_bytes(b"\0" * 8192)
        fd = os.open(f, os.O_RDONLY)
        with pytest.raises(ObjectStoreError, match="sealed against shrinking"):
            m.attach(1, fd, 8192)
        fd = os.memfd_create("hprm-arena-unsealed", os.MFD_CLOEXEC)
        os.ftruncate(fd, 8192)
        with pytest.raises(ObjectStoreError, match="SIGBUS"):
            m.attach(2, fd, 8192)
        with Store(MiB) as s:
            info = s.arenas[0]
            with pytest.raises(ObjectStoreError, match="announced"):
                m.attach(info.arena_id, os.dup(info.fd), 2 * MiB)
        assert m.arenas == []  # and every fd given was closed (no_leaks checks)


def test_shm_default_arena_is_prefaulted_and_reused():
    # The point of arenas: the second put of the same size reuses warm memory.
    with Store(16 * MiB) as s:
        x = np.ones(4 * MiB // 8)
        r1 = s.put(x)
        s.release(r1)
        r2 = s.put(x)
        assert r2.block == r1.block
        s.release(r2)
    with Store(MiB, prefault=False) as s:
        s.release(s.put(b"q" * 100))
    assert isinstance(ArenaInfo(1, 2, 3), tuple)
