"""The object store across real processes: arena fds passed over a Unix socket, a
consumer's zero-copy views and releases, and either side killed with SIGKILL mid-transfer
leaving nothing behind (no fd, mapping or /dev/shm entry). No mocks: real memfds, real
mappings, real subprocesses."""

import gc
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from hprm_core.object_store import (
    ArenaMap,
    Ref,
    Store,
    StoreFullError,
    recv_arena_fds,
    send_arena_fds,
)

MiB = 1 << 20


# Every test: nothing new in /dev/shm, no arena fd or mapping left (conftest's arenas).
pytestmark = pytest.mark.usefixtures("arenas")


# A consumer process: gets arena fds over the socket (fd argv[1]), then JSON commands
# (4-byte length + JSON). Replies the same way.
CONSUMER = textwrap.dedent(
    """
    import gc, json, os, socket, struct, sys
    import numpy as np
    from hprm_core.object_store import ArenaMap, Ref, recv_arena_fds

    sock = socket.socket(fileno=int(sys.argv[1]))

    def recv():
        hdr = sock.recv(4, socket.MSG_WAITALL)
        if len(hdr) < 4:
            sys.exit(0)
        return json.loads(sock.recv(struct.unpack("<I", hdr)[0], socket.MSG_WAITALL))

    def send(obj):
        b = json.dumps(obj).encode()
        sock.sendall(struct.pack("<I", len(b)) + b)

    amap = ArenaMap()
    held = {}
    while True:
        cmd = recv()
        op = cmd["op"]
        if op == "fds":
            for info in recv_arena_fds(sock):
                amap.attach(info.arena_id, info.fd, info.size, owner="producer")
            send({"ok": True})
        elif op == "view":
            ref = Ref.unpack(bytes.fromhex(cmd["ref"]))
            arr = amap.array(ref, cmd["dtype"], cmd["shape"])
            held[cmd["name"]] = arr
            lo, hi = amap.address_range(ref.arena_id)
            maps = []
            with open("/proc/self/maps") as f:
                for line in f:
                    if "memfd:hprm-arena-" in line:
                        a, b = (int(x, 16) for x in line.split()[0].split("-"))
                        maps.append([a, b])
            send({"addr": arr.__array_interface__["data"][0], "range": [lo, hi],
                  "maps": maps, "sum": float(arr.sum()), "writeable": arr.flags.writeable})
            del arr
        elif op == "drop":
            del held[cmd["name"]]
            gc.collect()
            send({"releases": [r.ref.pack().hex() for r in amap.take_releases()]})
        elif op == "exit":
            amap.close()
            send({"bye": True})
            sys.exit(0)
    """
)


class Consumer:
    def __init__(self):
        self.sock, theirs = socket.socketpair()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CONSUMER, str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
        )  # fmt: skip
        theirs.close()
        self.sock.settimeout(30)

    def call(self, op, **kw):
        b = json.dumps({"op": op, **kw}).encode()
        self.sock.sendall(struct.pack("<I", len(b)) + b)
        n = struct.unpack("<I", self.sock.recv(4, socket.MSG_WAITALL))[0]
        return json.loads(self.sock.recv(n, socket.MSG_WAITALL))

    def send_fds(self, store):
        b = json.dumps({"op": "fds"}).encode()
        self.sock.sendall(struct.pack("<I", len(b)) + b)
        send_arena_fds(self.sock, store.arenas)
        n = struct.unpack("<I", self.sock.recv(4, socket.MSG_WAITALL))[0]
        return json.loads(self.sock.recv(n, socket.MSG_WAITALL))

    def close(self):
        self.sock.close()
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def consumer():
    c = None

    def start():
        nonlocal c
        c = Consumer()
        return c

    yield start
    if c is not None:
        c.close()


def test_cross_process_zero_copy_and_release_round_trip(consumer):
    with Store(8 * MiB) as s:
        c = consumer()
        assert c.send_fds(s) == {"ok": True}
        a = s.alloc_array((1000, 1000), np.float64)  # zero-copy produce, 8 MB
        a[:] = 0.5
        ref = s.ref_of(a)
        s.share(ref, "c")
        r = c.call("view", ref=ref.pack().hex(), name="x", dtype="float64", shape=[1000, 1000])
        assert r["sum"] == 500_000.0 and r["writeable"] is False
        lo, hi = r["range"]
        assert lo <= r["addr"] and r["addr"] + a.nbytes <= hi  # inside the consumer's mapping
        assert any(x <= r["addr"] and r["addr"] + a.nbytes <= y for x, y in r["maps"])
        assert r["addr"] - lo == ref.offset
        del a
        gc.collect()
        assert s.is_live(ref)  # the consumer holds it
        rel = c.call("drop", name="x")["releases"]
        assert [Ref.unpack(bytes.fromhex(h)) for h in rel] == [ref]
        s.release(ref, "c")
        assert not s.is_live(ref)
        assert c.call("exit") == {"bye": True}


def test_sigkilled_consumer_holding_references_is_reclaimed_and_leaks_nothing(consumer):
    with Store(4 * MiB, on_full="error") as s:
        c = consumer()
        c.send_fds(s)
        refs = []
        for i in range(3):
            ref = s.put(np.full(MiB // 8, i, np.float64))
            s.share(ref, "c")
            s.release(ref)
            c.call("view", ref=ref.pack().hex(), name=str(i), dtype="float64", shape=[MiB // 8])
            refs.append(ref)
        with pytest.raises(StoreFullError):  # the consumer's holds fill the store
            s.put(np.zeros(2 * MiB, np.uint8))
        pid = c.proc.pid
        os.kill(pid, signal.SIGKILL)
        assert c.proc.wait(timeout=30) == -signal.SIGKILL
        assert c.sock.recv(1) == b""  # the transport sees EOF ...
        assert s.release_all_for("c") == 3  # ... and reclaims what the peer held
        assert s.stats()["blocks"] == 0
        s.release(s.put(np.zeros(2 * MiB, np.uint8)))
        assert not os.path.exists(f"/proc/{pid}")


PRODUCER = textwrap.dedent(
    """
    import os, signal, socket, sys, time
    import numpy as np
    from hprm_core.object_store import Store, send_arena_fds

    sock = socket.socket(fileno=int(sys.argv[2]))
    store = Store(4 << 20)
    a = store.alloc_array(1 << 18, np.float64)
    a[:] = 2.0
    send_arena_fds(sock, store.arenas)
    if sys.argv[1] == "after-ref":
        ref = store.ref_of(a)
        store.share(ref, "test")
        sock.sendall(ref.pack())
    sock.sendall(b"K")
    time.sleep(60)  # killed here, mid-transfer
    """
)


@pytest.mark.parametrize("stage", ["after-fds", "after-ref"])
def test_sigkilled_producer_mid_transfer_leaks_nothing(stage, arenas):
    ours, theirs = socket.socketpair()
    with ours:
        proc = subprocess.Popen(
            [sys.executable, "-c", PRODUCER, stage, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        theirs.close()
        try:
            ours.settimeout(30)
            infos = recv_arena_fds(ours)
            m = ArenaMap()
            for info in infos:
                m.attach(info.arena_id, info.fd, info.size, owner="producer")
            ref = Ref.unpack(ours.recv(40, socket.MSG_WAITALL)) if stage == "after-ref" else None
            assert ours.recv(1) == b"K"
            os.kill(proc.pid, signal.SIGKILL)
            assert proc.wait(timeout=30) == -signal.SIGKILL
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert ours.recv(1) == b""
        assert len(arenas.mappings()) == 1  # the dead producer's memory is still mapped here
        if ref is not None:
            arr = m.array(ref, np.float64)
            m.detach_owner("producer")  # the peer is gone
            assert float(arr.sum()) == 2.0 * (1 << 18)  # still valid: no use-after-free
            del arr
        m.close()
        gc.collect()
        # the kernel freed the memfd: no fd, no mapping, nothing in /dev/shm (fixture)
        assert arenas.fds() == [] and arenas.mappings() == []
        assert not os.path.exists(f"/proc/{proc.pid}")
