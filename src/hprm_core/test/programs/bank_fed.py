"""A bank of 3 worker federates: broadcast from a source federate, gathered
by a sink federate's multiport; stop requested by one worker."""

import os

from hprm_core import Bank, Input, Output, Reactor, Timer, main, reaction

COORD = os.environ.get("BANK_COORDINATION", "centralized")
STOPPER = int(os.environ.get("BANK_STOPPER", "-1"))  # worker index that requests stop


class Source(Reactor):
    def __init__(self):
        super().__init__()
        self.t = Timer(period="20 ms")
        self.out = Output()
        self.k = 0

    @reaction("t", effects="out")
    def emit(self):
        self.k += 1
        self.out.set(self.k)


class Worker(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.out = Output()

    @reaction("inp", effects="out")
    def work(self):
        self.out.set(self.inp.value * (self.bank_index + 1))
        if self.bank_index == STOPPER and self.inp.value == 4:
            self.request_stop()


class Sink(Reactor):
    def __init__(self):
        super().__init__()
        self.ins = Input(width=3)
        self.rows = []

    @reaction("ins")
    def gather(self):
        self.rows.append((self.elapsed, [p.value for p in self.ins]))

    @reaction("shutdown")
    def report(self):
        print("SINK", self.rows, "STOP", tuple(self.tag.elapsed(self.start_time)), flush=True)


@main(
    federated=True,
    coordination=COORD,
    timeout="200 ms",
    stp_offset={
        "sink": "120 ms",
        "workers[0]": "50 ms",
        "workers[1]": "50 ms",
        "workers[2]": "50 ms",
    },
)
class BankFederation(Reactor):
    def __init__(self):
        super().__init__()
        self.source = Source()
        self.workers = Bank(3, Worker)
        self.sink = Sink()
        self.connect(self.source.out, self.workers.inp, broadcast=True)
        self.connect(self.workers.out, self.sink.ins)
