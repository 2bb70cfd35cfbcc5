"""Broadcast to a bank of workers and gather their results (paper Fig. 4 shape).

A dispatcher broadcasts each job to a bank of 4 workers (`connect(...,
broadcast=True)`, Lingua Franca's `(out)+ -> workers.inp`); each worker
transforms it by its `bank_index`; a collector's width-4 multiport gathers the
four answers at the same tag and combines them in channel order, so the
result never depends on which worker happened to finish first.

    hprm run examples/bank.py --fast
"""

from hprm_core import Bank, Input, Output, Reactor, Timer, main, reaction

WORKERS = 4


class Dispatcher(Reactor):
    def __init__(self):
        super().__init__()
        self.job = Output()
        self.tick = Timer(period="10 ms")
        self.n = 0

    @reaction("tick", effects="job")
    def send(self):
        self.n += 1
        self.job.set(self.n)


class Worker(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.out = Output()

    @reaction("inp", effects="out")
    def work(self):
        self.out.set(self.inp.value * (self.bank_index + 1))


class Collector(Reactor):
    def __init__(self, width=WORKERS):
        super().__init__()
        self.results = Input(width=width)
        self.totals = []

    @reaction("results")
    def combine(self):
        parts = [ch.value for ch in self.results]
        self.totals.append(sum(parts))
        print(f"t={self.elapsed / 1e6:5.1f} ms  gathered {parts} -> {sum(parts)}", flush=True)


@main(timeout="50 ms", fast=True)
class BroadcastGather(Reactor):
    def __init__(self):
        super().__init__()
        self.dispatcher = Dispatcher()
        self.workers = Bank(WORKERS, Worker)
        self.collector = Collector()
        self.connect(self.dispatcher.job, self.workers.inp, broadcast=True)
        self.connect(self.workers.out, self.collector.results)
