"""A fast federate (10 ms timer) downstream of a slow one (2 s timer): the
fast one's own events must not wait for the slow one's next tag. Prints how
late (physical minus logical time) each fast tag ran."""

import os
import time

from hprm_core import Input, Output, Reactor, Timer, main, reaction


class Slow(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.t = Timer(period="2 s")

    @reaction("t", effects="out")
    def send(self):
        self.out.set(self.tag.time)


class Fast(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.t = Timer(offset="5 ms", period="10 ms")
        self.lags_ms = []
        self.received = 0

    @reaction("t", "inp")
    def tick(self):
        self.received += self.inp.is_present
        self.lags_ms.append((time.time_ns() - self.tag.time) / 1e6)

    @reaction("shutdown")
    def report(self):
        print(f"FAST tags={len(self.lags_ms)} received={self.received} "
              f"max_lag_ms={max(self.lags_ms):.1f}", flush=True)  # fmt: skip


@main(federated=True, coordination=os.environ.get("SLOW_COORDINATION", "centralized"),
      timeout="2.5 s")  # fmt: skip
class SlowUpstream(Reactor):
    def __init__(self):
        super().__init__()
        self.slow = Slow()
        self.fast = Fast()
        self.connect(self.slow.out, self.fast.inp)
