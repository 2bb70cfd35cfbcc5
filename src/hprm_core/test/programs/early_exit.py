"""A producer that leaves before its consumer has read what it sent.

The producer sends one large array (by shared-memory reference) at 200 ms
and its federation stops at 300 ms; the consumer is busy in its startup
reaction for 1.5 s meanwhile, so it reads the reference long after the
producer finished. The array must still arrive, intact: the arena it lies in
must have reached the consumer before the producer closed its store.

    EE_COORDINATION  centralized | decentralized
    EE_BYTES         the array's size (default 1 MB: in the producer's first
                     arena; 80 MB: in an arena it adds when sending, after
                     the consumer mapped the first one)
    EE_HANDOVER_S    how long the closing producer waits for the consumer
                     to map that arena (data_plane.HANDOVER_S)
"""

import os
import time

import numpy as np

from hprm_core import Input, Output, Reactor, Timer, data_plane, main, reaction

N = int(os.environ.get("EE_BYTES", 1_000_000))
if "EE_HANDOVER_S" in os.environ:
    data_plane.HANDOVER_S = float(os.environ["EE_HANDOVER_S"])


class Producer(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.t = Timer(offset="200 ms")

    @reaction("t", effects="out")
    def send(self):
        self.out.set(np.full(N, 7, np.uint8))
        print(f"producer sent {N} bytes", flush=True)


class Consumer(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.got = "nothing"

    @reaction("startup")
    def busy(self):
        time.sleep(1.5)  # not reading its sockets: the producer finishes meanwhile

    @reaction("inp")
    def receive(self):
        a = self.inp.value
        self.got = f"{a.size} bytes, all 7: {bool((a == 7).all())}"

    @reaction("shutdown")
    def report(self):
        print(f"consumer got {self.got}", flush=True)


@main(
    federated=True,
    coordination=os.environ.get("EE_COORDINATION", "centralized"),
    stp_offset="5 ms",  # decentralized: the message is on time, only late to be read
    timeout="300 ms",
)
class EarlyExit(Reactor):
    def __init__(self):
        super().__init__()
        self.producer = Producer()
        self.consumer = Consumer()
        self.connect(self.producer.out, self.consumer.inp)
