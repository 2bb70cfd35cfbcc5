"""A source with a finite amount of work: three one-shot timers, then nothing.

src -> mid -> sink. Nobody requests a stop and there is no timeout: once the
source has run out of events it finishes, and the federates downstream must
see that nothing can reach them any more and finish too (centralized: the RTI
grants them FOREVER; decentralized: their upstream peer resigned).
"""

import os

from hprm_core import Input, Output, Reactor, Timer, main, reaction


class Source(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.t1 = Timer(offset="10 ms")
        self.t2 = Timer(offset="20 ms")
        self.t3 = Timer(offset="30 ms")
        self.k = 0

    @reaction("t1", "t2", "t3", effects="out")
    def emit(self):
        self.out.set(self.k)
        self.k += 1


class Forward(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.out = Output()

    @reaction("inp", effects="out")
    def forward(self):
        self.out.set(self.inp.value * 10)


class Sink(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.got = []

    @reaction("inp")
    def record(self):
        self.got.append(self.inp.value)

    @reaction("shutdown")
    def report(self):
        print(f"SINK got={self.got}", flush=True)


@main(federated=True, coordination=os.environ.get("FIN_COORDINATION", "centralized"))
class Finite(Reactor):
    def __init__(self):
        super().__init__()
        self.src = Source()
        self.mid = Forward()
        self.sink = Sink()
        self.connect(self.src.out, self.mid.inp)
        self.connect(self.mid.out, self.sink.inp)
