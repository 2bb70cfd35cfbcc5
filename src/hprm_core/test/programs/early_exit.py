"""A producer that leaves before its consumer has read what it sent.

The producer sends one large array (by shared-memory reference) at 500 ms
and its federation stops at 600 ms; the consumer is busy in its startup
reaction for 2 s meanwhile, so it reads the reference after the producer
finished. The array must still arrive, intact: the arena it lies in must
have reached the consumer before the producer closed its store.

    EE_COORDINATION  centralized | decentralized
    EE_BYTES         the array's size (default 1 MB: in the producer's first
                     arena; 80 MB: in an arena it adds when sending, after
                     the consumer mapped the first one)
    EE_HANDOVER_S    how long the closing producer waits for the consumer
                     to map that arena (data_plane.HANDOVER_S)
    EE_PIDFILE       the consumer is busy until the producer's process (its
                     pid written there) has exited, instead of for 2 s
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
        self.t = Timer(offset="500 ms")

    @reaction("startup")
    def tell_pid(self):
        if "EE_PIDFILE" in os.environ:
            with open(os.environ["EE_PIDFILE"], "w") as f:
                f.write(str(os.getpid()))

    @reaction("t", effects="out")
    def send(self):
        self.out.set(np.full(N, 7, np.uint8))
        print(f"producer sent {N} bytes", flush=True)


def _exited(pidfile):
    try:
        with open(pidfile) as f:
            os.kill(int(f.read()), 0)
    except (FileNotFoundError, ValueError):
        return False  # not written yet
    except ProcessLookupError:
        return True
    return False


class Consumer(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.got = "nothing"

    @reaction("startup")
    def busy(self):  # not reading its sockets: the producer finishes meanwhile
        pidfile = os.environ.get("EE_PIDFILE")
        if pidfile is None:
            time.sleep(2.0)
            return
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _exited(pidfile):
            time.sleep(0.01)

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
    timeout="600 ms",
)
class EarlyExit(Reactor):
    def __init__(self):
        super().__init__()
        self.producer = Producer()
        self.consumer = Consumer()
        self.connect(self.producer.out, self.consumer.inp)
