"""Federated programs measured by ``hprm bench pingpong`` (configured through
the environment, since every federate process imports this file).

PINGPONG_SHAPE=latency: a sender federate stamps a 64-byte message with the
physical clock every PINGPONG_PERIOD; the receiver federate records
``now - stamp`` (one host, one clock) and prints the samples at shutdown.

PINGPONG_SHAPE=pipeline: sensor -> processor -> actuator; the actuator counts
the tags it processed and the wall time they took.

PINGPONG_SHAPE=pingpong: ping and pong send a 64-byte message back and forth
as fast as they can, PINGPONG_COUNT round trips; each stamps what it sends,
pong reports its measured latency inside its reply, ping records both
directions and prints them.

PINGPONG_BUSY_POLL: the receiving federate's ``busy_poll`` (default 0: sleep
when idle). Only the receiver: it is the one a message wakes. Busy-polling
the sender as well gained nothing measurable; the sender alone made latency
worse on this VM (~75 us vs ~30 us sleeping), see the README.
"""

import os
import time

from hprm_core import Input, Output, Reactor, Timer, main, reaction

SHAPE = os.environ.get("PINGPONG_SHAPE", "latency")
COORD = os.environ.get("PINGPONG_COORDINATION", "centralized")
PERIOD = os.environ.get("PINGPONG_PERIOD", "1 ms")
COUNT = int(os.environ.get("PINGPONG_COUNT", "1000"))
BUSY_POLL = os.environ.get("PINGPONG_BUSY_POLL", "0 ms")
PAD = b"x" * 48  # 8-byte stamp + 8-byte seq + 48 bytes = 64 bytes of payload


class Sender(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.t = Timer(offset="20 ms", period=PERIOD)
        self.k = 0

    @reaction("t", effects="out")
    def send(self):
        if self.k < COUNT:
            self.k += 1
            self.out.set((time.time_ns(), self.k, PAD))
        else:
            self.request_stop()


class Stage(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.out = Output()

    @reaction("inp", effects="out")
    def forward(self):
        self.out.set(self.inp.value)


class Receiver(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.samples = []
        self.first = None

    @reaction("inp")
    def receive(self):
        now = time.time_ns()
        if self.first is None:
            self.first = now
        self.samples.append(now - self.inp.value[0])

    @reaction("shutdown")
    def report(self):
        wall = (time.time_ns() - self.first) if self.first else 0
        print("SAMPLES", wall, ",".join(map(str, self.samples)), flush=True)


class _Bouncer(Reactor):
    """Answers each message at once; the message is (stamp, the latency the
    sender measured for the message it answers, padding)."""

    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.out = Output()

    @reaction("inp", effects="out")
    def bounce(self):
        latency = time.time_ns() - self.inp.value[0]
        self.out.set((time.time_ns(), latency, PAD))


class Ping(_Bouncer):
    def __init__(self):
        super().__init__()
        self.t = Timer(offset="20 ms")
        self.samples = []
        self.first = None

    @reaction("t", effects="out")
    def serve(self):
        self.first = time.time_ns()
        self.out.set((time.time_ns(), 0, PAD))

    @reaction("inp", effects="out")
    def bounce(self):
        now = time.time_ns()
        stamp, theirs, _ = self.inp.value
        self.samples += (theirs, now - stamp)
        if len(self.samples) < 2 * COUNT:
            self.out.set((time.time_ns(), 0, PAD))
        else:
            self.request_stop()

    @reaction("shutdown")
    def report(self):
        wall = time.time_ns() - self.first
        print("SAMPLES", wall, ",".join(map(str, self.samples)), flush=True)


@main(
    federated=True,
    coordination=COORD,
    busy_poll={"receiver": BUSY_POLL} if SHAPE != "pingpong" else 0,
)
class Bench(Reactor):
    def __init__(self):
        super().__init__()
        if SHAPE == "pingpong":
            self.ping = Ping()
            self.pong = _Bouncer()
            self.connect(self.ping.out, self.pong.inp)
            self.connect(self.pong.out, self.ping.inp, after="1 ns")
            return
        self.sender = Sender()
        if SHAPE == "pipeline":
            self.processor = Stage()
            self.receiver = Receiver()
            self.connect(self.sender.out, self.processor.inp)
            self.connect(self.processor.out, self.receiver.inp)
        else:
            self.receiver = Receiver()
            self.connect(self.sender.out, self.receiver.inp)
