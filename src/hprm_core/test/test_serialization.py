"""Adaptive serialization: round trips of every supported type in both modes,
out-of-band buffers into the object store (zero-copy produce and forward,
checked by address in a real consumer process), lifetimes, and hostile input
(corrupt, truncated, stale, pickle on a safe link)."""

import dataclasses
import gc
import json
import os
import pathlib
import pickle
import random
import socket
import struct
import subprocess
import sys
import textwrap

import msgpack
import numpy as np
import pyarrow as pa
import pytest

from hprm_core.errors import HprmError
from hprm_core.object_store import ArenaMap, Ref, Store, send_arena_fds
from hprm_core.serialization import (
    DEFAULT_THRESHOLD,
    ITEM_RAW,
    ITEM_REF,
    PlainPickler,
    SerializationError,
    Serialized,
    deserialize,
    make_resolver,
    parse_header,
    serialize,
)
from hprm_core.testing import leaked_shm

MiB = 1 << 20
BIG = DEFAULT_THRESHOLD  # smallest size that goes out of band


@pytest.fixture(autouse=True)
def no_leaks():
    gc.collect()
    shm0 = set(os.listdir("/dev/shm"))
    fds0 = set(os.listdir("/proc/self/fd"))
    yield
    gc.collect()
    assert leaked_shm(shm0) == set()
    assert set(os.listdir("/proc/self/fd")) - fds0 == set()
    with open("/proc/self/maps") as f:
        assert [x for x in f if "hprm-arena-" in x] == []


@pytest.fixture
def shm():
    """A producer store and an in-process consumer map of its arenas."""
    with Store(64 * MiB) as store, ArenaMap() as amap:
        for a in store.arenas:
            amap.attach(a.arena_id, os.dup(a.fd), a.size, owner="producer")
        yield store, amap


@dataclasses.dataclass
class Frame:
    """A user dataclass (importable by pickle: this module is in sys.modules)."""

    seq: int
    image: np.ndarray
    meta: dict


def same(a, b):
    """Deep equality that understands numpy and pyarrow values."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape
            and np.array_equal(a, b)
        )  # fmt: skip
    if isinstance(a, np.generic):
        return type(a) is type(b) and a == b
    if isinstance(a, pa.Tensor):
        return isinstance(b, pa.Tensor) and a.equals(b)
    if isinstance(a, (pa.Table, pa.Array, pa.RecordBatch)):
        return type(a) is type(b) and a.equals(b)
    if isinstance(a, memoryview):
        return type(b) is memoryview and a.tobytes() == b.tobytes() and a.format == b.format
    if isinstance(a, Frame):
        return type(b) is Frame and a.seq == b.seq and same(a.image, b.image) and a.meta == b.meta
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and a == b


def big_array(dtype=np.float64, n=BIG):
    return np.arange(n // np.dtype(dtype).itemsize + 1).astype(dtype)


PLAIN = {
    "none": None, "bools": [True, False], "int": -(1 << 62), "uint": (1 << 64) - 1,
    "float": 3.25, "str": "héllo", "bytes": b"\x00\xff", "nested": {"a": [1, {"b": []}]},
    1: "int key", "tuple": (1, "two", (3.0,)),
}  # fmt: skip

BOTH_MODES = {
    "plain": PLAIN,
    "small array": np.arange(10, dtype=np.int16),
    "big array": big_array(),
    "big 2d": np.arange(128 * 128, dtype=np.float32).reshape(128, 128),
    "fortran": np.asfortranarray(np.arange(10000.0).reshape(100, 100)),
    "non-contiguous": np.arange(20000.0)[::2],
    "bool array": np.ones(BIG, dtype=bool),
    "0-d array": np.array(5.5),
    "empty array": np.zeros((0, 3)),
    "numpy scalar": np.int32(7),
    "big bytes": b"x" * BIG,
    "big bytearray": bytearray(b"y" * (BIG + 3)),
    "small bytearray": bytearray(b"z"),
    "big memoryview": memoryview(b"m" * BIG),
    "typed memoryview": memoryview(big_array(np.int32)),
    "arrow table": pa.table({"x": np.arange(20000), "s": ["abcd"] * 20000}),
    "arrow array": pa.array(np.arange(20000.0)),
    "arrow batch": pa.record_batch({"v": np.arange(20000)}),
    "nested arrays": {"scan": [big_array(), (big_array(np.uint8), {"deep": big_array()})]},
}
PICKLE_ONLY = {
    "dataclass": Frame(3, big_array(np.uint8).reshape(-1, 1), {"cam": "front"}),
    "list of dataclasses": [Frame(i, big_array(), {}) for i in range(3)],
    "structured dtype": np.zeros(BIG, dtype=[("x", "<f4"), ("y", "<i2")]),
    "arrow tensor": pa.Tensor.from_numpy(big_array().reshape(-1, 1)),
    "set": {1, 2, 3},
    "complex": 1 + 2j,
}


def n_big(obj):
    """How many buffers of obj are >= the threshold (expected out-of-band items)."""
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes >= BIG)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return int(memoryview(obj).nbytes >= BIG)
    if isinstance(obj, dict):
        return sum(map(n_big, obj.values()))
    if isinstance(obj, (list, tuple)):
        return sum(map(n_big, obj))
    if isinstance(obj, Frame):
        return n_big(obj.image)
    return 0


@pytest.mark.parametrize("name", [*BOTH_MODES, *PICKLE_ONLY])
def test_pickle_round_trip_streamed(name):
    obj = {**BOTH_MODES, **PICKLE_ONLY}[name]
    with serialize(obj) as s:
        assert s.refs == [] and len(s.raw) == len(s.items)
        if not name.startswith("arrow"):
            assert len(s.items) == n_big(obj)
        else:
            assert len(s.items) >= 1
        assert len(s.payload) < 4096  # the data itself is never in the stream
        got = deserialize(s.pack_header(), make_resolver(raw=[bytes(b) for b in s.raw]))
    assert same(obj, got), (obj, got)


@pytest.mark.parametrize("name", list(BOTH_MODES))
def test_safe_round_trip_streamed(name):
    obj = BOTH_MODES[name]
    with serialize(obj, mode="safe") as s:
        got = deserialize(s.pack_header(), make_resolver(raw=s.raw), mode="safe")
    assert same(obj, got), (obj, got)


@pytest.mark.parametrize("mode", ["pickle", "safe"])
@pytest.mark.parametrize("name", ["big array", "nested arrays", "arrow table", "big bytes"])
def test_round_trip_through_the_store_is_zero_copy_on_the_receiver(shm, mode, name):
    store, amap = shm
    obj = BOTH_MODES[name]
    with serialize(obj, store=store, mode=mode) as s:
        assert s.raw == [] and len(s.refs) >= 1
        s.share("consumer")
        header = s.pack_header()
    got = deserialize(header, make_resolver(arenas=amap), mode=mode)
    assert same(obj, got)
    if name == "big array":
        lo, hi = amap.address_range(s.refs[0].arena_id)
        addr = got.__array_interface__["data"][0]
        assert lo <= addr and addr + got.nbytes <= hi and not got.flags.writeable
    if name != "big bytes":  # bytes own their memory: copied out, released at once
        assert amap.take_releases() == []  # `got` still points into the arena
    rels = []
    del got
    gc.collect()
    rels += amap.take_releases()
    assert sorted(r.ref.offset for r in rels) == sorted(r.offset for r in s.refs)
    for r in rels:
        store.release(r.ref, "consumer")
    assert store.stats()["blocks"] == 0


# What C pickle alone cannot send well: it refuses memoryviews and Arrow tensors, and
# leaves large bytes, bytearrays and non-contiguous arrays in its stream.
PLAIN_FALLS_BACK = {"big bytes", "big bytearray", "non-contiguous", "big memoryview",
                    "typed memoryview", "arrow tensor"}  # fmt: skip


@pytest.mark.parametrize("name", [*BOTH_MODES, *PICKLE_ONLY])
def test_plain_pickler_sends_what_serialize_sends_in_one_pass(shm, name):
    """The data plane's fast path: small values as plain pickle bytes, large buffers
    out of band into the store, the rest left to serialize(); every path arrives."""
    store, amap = shm
    obj = {**BOTH_MODES, **PICKLE_ONLY}[name]
    with serialize(obj, store=store) as full:
        n_items = len(full.items)
    out = PlainPickler().dumps(obj, store=store, arenas=amap)
    if name in PLAIN_FALLS_BACK:
        assert out is None
        assert store.stats()["blocks"] == 0  # whatever it put in the store, it let go
        return
    if n_items == 0:
        assert isinstance(out, bytes)
        assert same(obj, pickle.loads(out))
        return
    assert isinstance(out, Serialized)
    with out:
        assert len(out.refs) == n_items and out.raw == []
        out.share("consumer")
        header = out.pack_header()
    got = deserialize(header, make_resolver(arenas=amap))
    assert same(obj, got)
    del got
    gc.collect()
    for r in amap.take_releases():
        store.release(r.ref, "consumer")
    assert store.stats()["blocks"] == 0


@pytest.mark.parametrize("receivers", [(), ("C",)])
def test_plain_pickler_forwards_a_received_array_without_a_copy(shm, receivers):
    """Forwarded as the same reference; sent to receivers at once (the data plane's way),
    the view stays pinned for them until they release it."""
    store, amap = shm
    with serialize(big_array(), store=store) as s:
        s.share("B")
        header = s.pack_header()
    received = deserialize(header, make_resolver(arenas=amap))
    with PlainPickler().dumps({"fwd": received}, store=store, arenas=amap,
                              receivers=receivers) as s2:  # fmt: skip
        assert s2.refs == s.refs and store.stats()["blocks"] == 1
    del received
    gc.collect()
    if receivers:
        assert amap.take_releases() == []  # C holds it: B's view stays pinned
        amap.release(s.refs[0], "C")
        gc.collect()
    for r in amap.take_releases():
        store.release(r.ref, "B")
    assert store.stats()["blocks"] == 0


def test_plain_pickler_holds_shared_memory_for_its_receivers_directly(shm):
    """The data plane sends at once: a buffer already in the store is held for the
    receivers as it is found, with no hold of the sender's own to take and drop; they
    get it as a uint8 array (ArenaMap.buffer) that the message's dtype is viewed from."""
    store, amap = shm
    pos = store.alloc_array(BIG // 8, np.float64)
    pos[:] = np.arange(BIG // 8)
    with PlainPickler().dumps({"pos": pos}, store=store, receivers=["B", "C"]) as s:
        (ref,) = s.refs
        assert store.holds(ref) == {"B": 1, "C": 1}
        header = s.pack_header()
    assert store.holds(ref) == {"B": 1, "C": 1}  # release() had nothing of its own to drop
    got = deserialize(header, lambda item: amap.buffer(item.ref, "B"))["pos"]
    assert got.dtype == np.float64 and np.array_equal(got, pos)
    del got
    gc.collect()
    for r in amap.take_releases():
        store.release(r.ref, r.owner)
    store.release(ref, "C")
    del pos
    gc.collect()
    assert store.stats()["blocks"] == 0


def test_plain_pickler_gives_the_receivers_holds_back_when_serialize_takes_over(shm):
    """A value with a buffer in the store and large bytes (which plain pickle leaves in
    its stream): the holds taken for the receivers go back before serialize() starts."""
    store, _ = shm
    img = store.alloc_array(BIG, np.uint8)
    assert PlainPickler().dumps({"img": img, "raw": b"x" * BIG}, store=store,
                                receivers=["B"]) is None  # fmt: skip
    assert store.holds(store.ref_of(img)) == {}


def test_plain_pickler_without_a_store_streams_large_buffers():
    arr = big_array()
    s = PlainPickler().dumps([arr, 1])
    assert s.refs == [] and [m.nbytes for m in s.raw] == [arr.nbytes]
    got = deserialize(s.pack_header(), make_resolver(raw=s.raw))
    assert same([arr, 1], got)


def test_zero_copy_produce_puts_no_payload_bytes_in_the_header(shm):
    store, _ = shm
    img = store.alloc_array((1080, 1920, 3), np.uint8)
    img[:] = 9
    blocks = store.stats()["blocks"]
    with serialize({"img": img, "stamp": 12}, store=store) as s:
        assert store.stats()["blocks"] == blocks  # nothing copied into a new block
        assert s.refs == [store.ref_of(img)]
        header = s.pack_header()
    assert len(header) < 400, len(header)  # a 6 MB image, a few hundred bytes of header
    assert img.tobytes()[:64] not in header


def test_zero_copy_forward_re_sends_the_received_reference(shm):
    store, amap = shm
    src = store.alloc_array(BIG, np.float64)
    src[:] = 1.0
    with serialize([src], store=store) as s:
        s.share("B")
        h1 = s.pack_header()
    del src
    received = deserialize(h1, make_resolver(arenas=amap))[0]  # process B
    with serialize({"fwd": received}, store=store, arenas=amap) as s2:  # B forwards to C
        assert s2.refs == s.refs  # the same reference, no copy, no new block
        s2.share("C")
        h2 = s2.pack_header()
    assert store.stats()["blocks"] == 1
    del received
    gc.collect()
    assert amap.take_releases() == []  # C still holds it, B's view is pinned
    at_c = deserialize(h2, make_resolver(arenas=amap, owner="B"))["fwd"]
    assert float(at_c.sum()) == BIG
    del at_c
    gc.collect()
    rel = amap.take_releases()
    assert [(r.owner, r.ref) for r in rel] == [("B", s.refs[0])]
    amap.release(rel[0].ref, "C")  # B gets C's token back
    gc.collect()
    rel = amap.take_releases()
    assert [(r.owner, r.ref) for r in rel] == [("producer", s.refs[0])]
    store.release(rel[0].ref, "B")
    assert store.stats()["blocks"] == 0


def test_put_blocks_live_until_every_receiver_and_the_sender_released(shm):
    store, _ = shm
    s = serialize(big_array(), store=store)
    (ref,) = s.refs
    s.share("a")
    s.share("b")
    s.release()
    s.release()  # idempotent
    assert store.holds(ref) == {"a": 1, "b": 1}
    store.release(ref, "a")
    store.release(ref, "b")
    assert not store.is_live(ref)
    # a Serialized dropped without release() gives its holds back when collected
    s = serialize(big_array(), store=store)
    del s
    gc.collect()
    assert store.stats()["blocks"] == 0
    # a failed serialization leaves nothing behind
    with pytest.raises(SerializationError, match="lambda"):
        serialize([big_array(), lambda: 0], store=store)
    assert store.stats()["blocks"] == 0


def test_threshold_decides_in_band_or_out_of_band(shm):
    store, _ = shm
    below, at = np.zeros(BIG - 8, np.uint8), np.zeros(BIG, np.uint8)
    with serialize([below], store=store) as s:
        assert s.items == [] and len(s.payload) > BIG - 8
    with serialize([at], store=store) as s:
        assert len(s.refs) == 1 and len(s.payload) < 300
    with serialize([below], store=store, threshold=1024) as s:
        assert len(s.refs) == 1


def test_torch_cpu_tensor_round_trip(shm):
    torch = pytest.importorskip("torch", reason="torch is not installed (optional)")
    store, amap = shm
    t = torch.arange(100_000, dtype=torch.float32).reshape(100, 1000)
    with serialize({"t": t}, store=store) as s:
        assert len(s.refs) == 1
        s.share("c")
        h = s.pack_header()
    got = deserialize(h, make_resolver(arenas=amap))["t"]
    assert isinstance(got, torch.Tensor) and torch.equal(got, t)
    del got
    gc.collect()
    for r in amap.take_releases():
        store.release(r.ref, "c")


# --------------------------------------------------------------------------- safe mode


class Evil:
    """Unpickling this creates a file: proof that pickle runs code."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.path),))


def test_safe_mode_refuses_pickle_and_never_runs_it(tmp_path):
    marker = tmp_path / "pwned"
    header = serialize(Evil(marker)).pack_header()
    with pytest.raises(SerializationError, match="refused a pickle payload"):
        deserialize(header, mode="safe")
    # the same bytes relabelled as a safe payload: msgpack, not pickle, reads them
    relabelled = bytearray(header)
    relabelled[5] = 1
    with pytest.raises(SerializationError, match=r"corrupt safe payload|extension"):
        deserialize(bytes(relabelled), mode="safe")
    assert not marker.exists()
    deserialize(header)  # a trusted link does run it: the payload above was live
    assert marker.exists()


@pytest.mark.parametrize(
    ("value", "named"),
    [
        (Frame(1, np.zeros(3), {}), "Frame"),
        ({1, 2}, "set"),
        (1 + 2j, "complex"),
        ([1, {"k": object()}], "object"),
        (np.array([object()]), "dtype object"),
        (np.zeros(3, dtype=[("x", "f4")]), "dtype"),
        (1 << 70, "too large"),
        (pa.Tensor.from_numpy(np.zeros(3)), "pyarrow.lib.Tensor"),
    ],
)
def test_safe_mode_names_the_type_it_cannot_serialize(value, named):
    with pytest.raises(SerializationError, match=named) as e:
        serialize({"x": value}, mode="safe")
    assert isinstance(e.value, HprmError)


def test_safe_mode_rejects_hostile_descriptors():
    def safe_header(payload, raw=()):
        items = b"".join(b"\x02" + struct.pack("<Q", len(r)) for r in raw)
        return struct.pack("<4sBBHIQ", b"HPSZ", 1, 1, 0, len(raw), len(payload)) + items + payload

    def ext(code, body):
        return msgpack.packb(msgpack.ExtType(code, msgpack.packb(body)))

    cases = {
        "object dtype": ext(1, ["|O", [1], b"\0" * 8, False]),
        "size mismatch": ext(1, ["<f8", [1000], b"\0" * 8, False]),
        "negative shape": ext(1, ["<f8", [-1], b"", False]),
        "bad dtype": ext(1, ["not-a-dtype", [1], b"\0", False]),
        "item out of range": ext(1, ["<f8", [1], 5, False]),
        "unknown ext": ext(42, [1]),
        "bad bytes kind": ext(2, ["exec", b"x"]),
        "bad arrow": ext(3, ["table", b"garbage"]),
        "not msgpack": b"\xc1",
    }
    for name, payload in cases.items():
        with pytest.raises(SerializationError):
            deserialize(safe_header(payload), make_resolver(), mode="safe")
        assert name


# --------------------------------------------------------------------------- hostile headers


def test_every_truncation_and_corruption_is_a_serialization_error(shm):
    store, amap = shm
    obj = {"a": big_array(), "b": [1, 2, "three"], "c": b"q" * BIG}
    with serialize(obj, store=store) as s:
        s.share("c", 1000)
        header = s.pack_header()
    for n in range(len(header)):
        with pytest.raises(SerializationError):
            deserialize(header[:n], make_resolver(arenas=amap))
    with pytest.raises(SerializationError, match="trailing"):
        deserialize(header + b"\0", make_resolver(arenas=amap))
    rng = random.Random(1)
    outcomes = set()
    for _ in range(300):
        bad = bytearray(header)
        for _ in range(rng.randint(1, 4)):
            bad[rng.randrange(len(bad))] = rng.randrange(256)
        try:
            deserialize(bytes(bad), make_resolver(arenas=amap))
            outcomes.add("ok")
        except SerializationError:
            outcomes.add("error")
        # anything else (or a crash) fails the test
    assert "error" in outcomes
    gc.collect()
    for r in amap.take_releases():
        store.release(r.ref, "c")
    store.release_all_for("c")


def test_header_errors_are_clear(shm):
    store, amap = shm
    with serialize([big_array()], store=store) as s:
        s.share("c")
        header = s.pack_header()
    (ref,) = s.refs
    mode, items, payload = parse_header(header)
    assert mode == "pickle" and items[0].kind == ITEM_REF and items[0].ref == ref
    assert bytes(payload) == s.payload
    with pytest.raises(SerializationError, match="magic"):
        deserialize(b"XXXX" + header[4:])
    with pytest.raises(SerializationError, match="version 9"):
        deserialize(header[:4] + b"\x09" + header[5:])
    with pytest.raises(SerializationError, match="mode 7"):
        deserialize(header[:5] + b"\x07" + header[6:])
    with pytest.raises(SerializationError, match="unknown out-of-band item kind 9"):
        deserialize(header[:20] + b"\x09" + header[21:], make_resolver(arenas=amap))
    with pytest.raises(SerializationError, match="no resolver"):
        deserialize(header)
    with pytest.raises(SerializationError, match="no ArenaMap"):
        deserialize(header, make_resolver())
    with pytest.raises(SerializationError, match="not attached"):
        deserialize(header, make_resolver(arenas=ArenaMap()))
    # stale: released and reused
    store.release(ref, "c")
    reused = store.put(np.ones(big_array().size))
    assert reused.block == ref.block
    with pytest.raises(SerializationError, match=f"generation {ref.generation}.*reused"):
        deserialize(header, make_resolver(arenas=amap))
    store.release(reused)
    # streamed items: missing or of the wrong size
    with serialize([big_array()]) as s:
        h = s.pack_header()
        assert parse_header(h)[1][0].kind == ITEM_RAW
        with pytest.raises(SerializationError, match="only 0 came"):
            deserialize(h, make_resolver())
        with pytest.raises(SerializationError, match="buffer of 3 bytes"):
            deserialize(h, make_resolver(raw=[b"abc"]))
    with pytest.raises(ValueError, match="mode"):
        serialize(1, mode="yaml")


# --------------------------------------------------------------------------- processes

CONSUMER = textwrap.dedent(
    """
    import gc, json, socket, struct, sys
    import numpy as np
    from hprm_core.object_store import ArenaMap, recv_arena_fds
    from hprm_core.serialization import deserialize, make_resolver

    sock = socket.socket(fileno=int(sys.argv[1]))
    amap = ArenaMap()
    for info in recv_arena_fds(sock):
        amap.attach(info.arena_id, info.fd, info.size, owner="producer")
    n = struct.unpack("<I", sock.recv(4, socket.MSG_WAITALL))[0]
    obj = deserialize(sock.recv(n, socket.MSG_WAITALL), make_resolver(arenas=amap))
    arr = obj["scan"][1]["points"]
    lo, hi = amap.address_range(next(iter(amap.arenas)).arena_id)
    addr = arr.__array_interface__["data"][0]
    report = {"addr": addr, "lo": lo, "hi": hi, "sum": float(arr.sum()), "id": obj["id"],
              "shape": list(arr.shape), "writeable": arr.flags.writeable}
    del obj, arr
    gc.collect()
    report["releases"] = [r.ref.pack().hex() for r in amap.take_releases()]
    out = json.dumps(report).encode()
    sock.sendall(struct.pack("<I", len(out)) + out)
    amap.close()
    """
)


def test_consumer_process_reads_nested_arrays_in_place():
    ours, theirs = socket.socketpair()
    with ours, Store(32 * MiB) as store:
        proc = subprocess.Popen(
            [sys.executable, "-c", CONSUMER, str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
        )  # fmt: skip
        theirs.close()
        try:
            pts = store.alloc_array((100_000, 4), np.float32)
            pts[:] = 0.5
            obj = {"id": "lidar", "scan": [b"small", {"points": pts, "n": 100_000}]}
            send_arena_fds(ours, store.arenas)
            with serialize(obj, store=store) as s:
                s.share("consumer")
                h = s.pack_header()
            ours.sendall(struct.pack("<I", len(h)) + h)
            del pts, obj
            ours.settimeout(60)
            n = struct.unpack("<I", ours.recv(4, socket.MSG_WAITALL))[0]
            rep = json.loads(ours.recv(n, socket.MSG_WAITALL))
            assert proc.wait(timeout=60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    # (store closed above; the numbers were taken while it was alive)
    assert rep["id"] == "lidar" and rep["shape"] == [100_000, 4] and rep["sum"] == 200_000.0
    assert rep["lo"] + s.refs[0].offset == rep["addr"] and rep["addr"] < rep["hi"]
    assert rep["writeable"] is False
    assert [Ref.unpack(bytes.fromhex(h)) for h in rep["releases"]] == s.refs
