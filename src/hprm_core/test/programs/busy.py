"""A sender and a receiver whose ``busy_poll`` comes from BUSY_POLL (JSON:
one duration, or a dict by federate name). Each federate prints the CPU time
its process used against the wall time it ran, so a test can tell which ones
spun while idle: the sender sends only every 10 ms, so a federate that sleeps
while idle uses a few percent of a CPU, one that busy-polls nearly all of one.
"""

import json
import os
import time

from hprm_core import Input, Output, Reactor, Timer, main, reaction

BUSY_POLL = json.loads(os.environ.get("BUSY_POLL", '"0 ms"'))


class _Usage(Reactor):
    """Reports the process's CPU time / wall time between startup and shutdown."""

    @reaction("startup")
    def begin(self):
        self.t0, self.c0 = time.monotonic(), time.process_time()

    @reaction("shutdown")
    def usage(self):
        wall, cpu = time.monotonic() - self.t0, time.process_time() - self.c0
        print(f"USAGE {self.name} cpu/wall={cpu / wall:.2f}", flush=True)


class Sender(_Usage):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.t = Timer(offset="10 ms", period="10 ms")
        self.k = 0

    @reaction("t", effects="out")
    def send(self):
        self.out.set(self.k)
        self.k += 1
        if self.k == 30:
            self.request_stop()


class Receiver(_Usage):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.got = []

    @reaction("inp")
    def record(self):
        self.got.append(self.inp.value)

    @reaction("shutdown")
    def report(self):
        print(f"RECEIVER got={self.got}", flush=True)


@main(
    federated=True,
    coordination=os.environ.get("BUSY_COORDINATION", "decentralized"),
    busy_poll=BUSY_POLL,
)
class Busy(Reactor):
    def __init__(self):
        super().__init__()
        self.sender = Sender()
        self.receiver = Receiver()
        self.connect(self.sender.out, self.receiver.inp)
