"""A federate whose reaction raises at every tag: the federation must stop at
one agreed tag and exit non-zero, not wait for a second stop grant that never
comes (each failure asks to stop again)."""

import os

from hprm_core import Input, Output, Reactor, Timer, main, reaction


class Sender(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.t = Timer(offset="20 ms", period="1 ms")
        self.k = 0

    @reaction("t", effects="out")
    def send(self):
        self.k += 1
        self.out.set(self.k)


class Receiver(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()

    @reaction("inp")
    def receive(self):
        raise RuntimeError(f"cannot handle {self.inp.value}")


@main(federated=True, coordination=os.environ.get("FAILING_COORDINATION", "centralized"))
class Failing(Reactor):
    def __init__(self):
        super().__init__()
        self.sender = Sender()
        self.receiver = Receiver()
        self.connect(self.sender.out, self.receiver.inp)
