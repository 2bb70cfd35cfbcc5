"""A source that sends a value pickle cannot handle (a lock) to a sink."""

import threading

from hprm_core import Input, Output, Reactor, Timer, main, reaction


class Source(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.t = Timer(offset="10 ms")

    @reaction("t", effects="out")
    def emit(self):
        self.out.set({"lock": threading.Lock()})


class Sink(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()

    @reaction("inp")
    def got(self):
        print("SINK got", self.inp.value, flush=True)


@main(federated=True, coordination="decentralized")
class Unpicklable(Reactor):
    def __init__(self):
        super().__init__()
        self.src = Source()
        self.sink = Sink()
        self.connect(self.src.out, self.sink.inp)
