"""Large arrays between federates: zero-copy produce, zero-copy forward, safe mode.

producer --(pickle link)--> relay --(forward)--> sink
producer --(safe link)----> safe_sink
Each receiver checks that the array it got lies in a memfd arena mapping
(/proc/self/maps), is read-only and holds the right values, and prints one
line per check; the producer prints the bytes it pushed through its sockets.
ZC_HOSTILE=pickle: the producer first sends a small inline pickle that runs
print() when loaded down the safe link (it must be refused, never loaded).
"""

import os
import pickle

import numpy as np
from _hostile import send_raw

from hprm_core import Input, Output, Reactor, Timer, main, reaction

COORD = os.environ.get("ZC_COORDINATION", "centralized")
N = 1_000_000
ROUNDS = 5
HOSTILE = os.environ.get("ZC_HOSTILE")


class PrintsWhenUnpickled:
    """Stands in for an exploit: loading this pickle calls print()."""

    def __reduce__(self):
        return (print, ("UNPICKLED-ON-SAFE-LINK",))


def arena_of(arr):
    """(start, name) of the /proc/self/maps mapping holding arr's data, or None."""
    addr = arr.__array_interface__["data"][0]
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if lo <= addr < hi:
                name = parts[5] if len(parts) > 5 else ""
                return lo, name
    return None


class Producer(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.safe_out = Output()
        self.t = Timer(period="10 ms")
        self.k = 0

    @reaction("t", effects=("out", "safe_out"))
    def send(self):
        if self.k >= ROUNDS:
            self.request_stop()
            return
        if HOSTILE == "pickle" and self.k == 0:
            send_raw(self, self.safe_out, b"\x00" + pickle.dumps(PrintsWhenUnpickled()))
        img = self.alloc_array(N, np.uint8)  # built in the object store
        img[:] = self.k
        self.out.set({"k": self.k, "img": img})
        self.safe_out.set({"k": self.k, "img": img})
        self.k += 1

    @reaction("shutdown")
    def report(self):
        coordinator = self._runtime().coordinator
        sent = coordinator.bytes_sent()
        print(f"PRODUCER sent {ROUNDS} x {N} bytes, socket bytes {sent}", flush=True)


class Relay(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.out = Output()

    @reaction("inp", effects="out")
    def check_and_forward(self):
        msg = self.inp.value
        img = msg["img"]
        where = arena_of(img)
        ok = where is not None and "hprm-arena" in where[1] and not img.flags.writeable
        values = "ok" if int(img[0]) == msg["k"] == int(img[-1]) and img.size == N else "bad"
        print(f"RELAY k={msg['k']} zero_copy={ok} values={values}", flush=True)
        self.out.set(img)


class Sink(Reactor):
    def __init__(self, label):
        super().__init__()
        self.inp = Input()
        self.label = label

    @reaction("inp")
    def check(self):
        v = self.inp.value
        img = v["img"] if isinstance(v, dict) else v
        where = arena_of(img)
        ok = where is not None and "hprm-arena" in where[1] and not img.flags.writeable
        print(f"{self.label} k={int(img[0])} zero_copy={ok} type={type(v).__name__}", flush=True)


# Decentralized: without an STP offset a receiver may pass a tag before the
# (slower, forwarded) message for it arrives, and stop before late ones land.
@main(
    federated=True,
    coordination=COORD,
    stp_offset={"relay": "100 ms", "safe_sink": "100 ms", "sink": "200 ms"},
)
class ZeroCopy(Reactor):
    def __init__(self):
        super().__init__()
        self.producer = Producer()
        self.relay = Relay()
        self.sink = Sink("SINK")
        self.safe_sink = Sink("SAFE")
        self.connect(self.producer.out, self.relay.inp)
        self.connect(self.relay.out, self.sink.inp)
        self.connect(self.producer.safe_out, self.safe_sink.inp, serialization="safe")
