"""A producer that outruns its consumer (centralized, one host): P sends a
1 MB in-band value every 10 ms to S, which takes 30 ms per value, so P's link
to S holds back a growing backlog for the whole run. P also feeds O, which
has a 20 ms timer of its own: O may process a tick only once the RTI knows P
is past it (P's LTC/NET), and what P tells the RTI must wait until the
payloads sent before it are in S's socket. That wait must release frames as
S catches up, not only once the backlog is empty (which, while P keeps
sending, is never): O keeps ticking during the run, behind S.

Prints P's physical time at its last send and the physical times of O's
ticks, so a test can count the ticks O processed while P was still sending.
"""

import time

from hprm_core import Input, Output, Reactor, Timer, main, reaction

ROUNDS = 60


class Producer(Reactor):
    def __init__(self):
        super().__init__()
        self.big = Output()
        self.small = Output()
        self.t = Timer(offset="10 ms", period="10 ms")
        self.k = 0

    @reaction("t", effects=("big", "small"))
    def send(self):
        self.k += 1
        self.big.set(str(self.k % 10) * 1_000_000)  # no large buffer: travels in the frame
        if self.k == 1:  # once: O's later ticks then need the RTI's grants, not our messages
            self.small.set(self.k)
        if self.k == ROUNDS:
            print(f"P last send at {time.time_ns()}", flush=True)
            self.request_stop()


class Slow(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.n = 0

    @reaction("inp")
    def take(self):
        time.sleep(0.03)
        self.n += 1

    @reaction("shutdown")
    def report(self):
        print(f"S got {self.n}", flush=True)


class Observer(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.tick = Timer(offset="0 ms", period="20 ms")
        self.ticks = []

    @reaction("tick")
    def on_tick(self):
        self.ticks.append(time.time_ns())

    @reaction("inp")
    def on_value(self):
        pass

    @reaction("shutdown")
    def report(self):
        print(f"O ticks at {self.ticks}", flush=True)


@main(federated=True, coordination="centralized")
class Backlog(Reactor):
    def __init__(self):
        super().__init__()
        self.p = Producer()
        self.s = Slow()
        self.o = Observer()
        self.connect(self.p.big, self.s.inp)
        self.connect(self.p.small, self.o.inp)
