"""Two federates send each other a large array at the same tags (4 MB, so
it travels through the object store by reference). Each one's first array
makes the other map the sender's arena, at the same moment: a request to the
other's store channel, which only that federate's scheduler thread answers,
while it waits for the same thing from us. Prints how many arrays arrived.

    EX_COORDINATION  centralized | decentralized
    EX_SERIALIZATION pickle | safe
    EX_STP           STP offset (decentralized), default 50 ms
    EX_PAYLOAD       array (default) | bytes-free: a 4 MB value with no large
                     buffer in it, which travels inside the frames even on
                     one host (both sides write 4 MB at once)

Across hosts (TCP) the arrays travel inside the frames instead: both sides
write 4 MB at once, more than the sockets hold.
"""

import os

import numpy as np

from hprm_core import Input, Output, Reactor, Timer, main, reaction

N = 4 * 1024 * 1024
ROUNDS = 5
PAYLOAD = os.environ.get("EX_PAYLOAD", "array")


class Peer(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.inp = Input()
        self.t = Timer(offset="10 ms", period="10 ms")
        self.k = 0
        self.got = []

    @reaction("t", effects="out")
    def send(self):
        if self.k < ROUNDS:
            if PAYLOAD == "array":
                self.out.set(np.full(N, self.k, np.uint8))
            else:  # four distinct 1 MB strings: pickled in-band
                self.out.set([str(self.k) * (N // 4) + str(i) for i in range(4)] + [self.k])
            self.k += 1

    @reaction("inp")
    def receive(self):
        self.got.append(int(self.inp.value[-1]))

    @reaction("shutdown")
    def report(self):
        print(f"{self.name} got {self.got}", flush=True)


@main(
    federated=True,
    coordination=os.environ.get("EX_COORDINATION", "centralized"),
    stp_offset=os.environ.get("EX_STP", "50 ms"),
    timeout="500 ms",  # late arrivals (tardy, decentralized) still land before it
)
class Exchange(Reactor):
    def __init__(self):
        super().__init__()
        self.a = Peer()
        self.b = Peer()
        mode = os.environ.get("EX_SERIALIZATION", "pickle")
        self.connect(self.a.out, self.b.inp, after="1 ms", serialization=mode)
        self.connect(self.b.out, self.a.inp, after="1 ms", serialization=mode)
