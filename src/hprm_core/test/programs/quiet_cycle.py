"""Two federates in a cycle that goes quiet: ping sends three values (one-shot
timers), pong sends each back 1 ms later, then nothing ever happens again.
No timeout, no stop request: the federation must notice by itself and
finish. Centralized, the RTI sees it in the federates' next event tags;
decentralized, neither federate's upstream ever resigns (each waits for the
other), so it takes the RTI's quiescence detection.

    QC_COORDINATION  centralized | decentralized
    QC_BOUNCES       N > 0: instead, ping sends N once and each side sends
                     back one less until 0: between bounces each federate is
                     idle with a message in flight, the moment a wrong
                     quiescence detection would end the federation early
    QC_FEED          1: a third federate feeds pong one value and finishes
                     (resigns) while the cycle still runs: the cycle's end is
                     detected with an upstream gone
    QC_AFTER         the delay on pong -> ping (default "1 ms"; "0" makes a
                     zero-delay cycle)
"""

import os

from hprm_core import Input, Output, Reactor, Timer, federation, main, reaction

BOUNCES = int(os.environ.get("QC_BOUNCES", "0"))
FEED = os.environ.get("QC_FEED") == "1"
AFTER = os.environ.get("QC_AFTER", "1 ms")
if BOUNCES:
    # Report every idle moment (default: once idle for 50 ms), the bounces'
    # too: the most reports taken with a message in flight.
    federation.IDLE_REPORT_S = 0.0


class Ping(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.back = Input()
        self.t1 = Timer(offset="10 ms")
        self.t2 = Timer(offset="20 ms")
        self.t3 = Timer(offset="30 ms")
        self.k = 0
        self.got = []

    @reaction("t1", "t2", "t3", effects="out")
    def send(self):
        if BOUNCES:
            if self.k == 0:
                self.k = 1
                self.out.set(BOUNCES)
            return
        self.k += 1
        self.out.set(self.k)

    @reaction("back", effects="out")
    def record(self):
        self.got.append(self.back.value)
        if BOUNCES and self.back.value > 0:
            self.out.set(self.back.value - 1)

    @reaction("shutdown")
    def report(self):
        print(f"PING got={self.got}", flush=True)


class Feed(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.t = Timer(offset="5 ms")

    @reaction("t", effects="out")
    def feed(self):
        self.out.set("fed")


class Pong(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.out = Output()
        self.extra = Input()  # from feed, with QC_FEED=1
        self.extras = []

    @reaction("extra")
    def record(self):
        self.extras.append(self.extra.value)

    @reaction("inp", effects="out")
    def echo(self):
        if not BOUNCES:
            self.out.set(self.inp.value * 10)
        elif self.inp.value > 0:
            self.out.set(self.inp.value - 1)

    @reaction("shutdown")
    def report(self):
        print(f"PONG done extras={self.extras}", flush=True)


@main(
    federated=True,
    coordination=os.environ.get("QC_COORDINATION", "decentralized"),
    stp_offset="5 ms",
)
class QuietCycle(Reactor):
    def __init__(self):
        super().__init__()
        self.ping = Ping()
        self.pong = Pong()
        self.connect(self.ping.out, self.pong.inp)
        self.connect(self.pong.out, self.ping.back, after=None if AFTER == "0" else AFTER)
        if FEED:
            self.feed = Feed()
            self.connect(self.feed.out, self.pong.extra)
