"""Federates that are composite reactors: the sender's output is its child's,
connected up; the receiver's input feeds its child, one connected straight and
one through a delayed connection inside. Every value must reach the children."""

import os

from hprm_core import Input, Output, Reactor, Timer, main, reaction


class Counter(Reactor):
    def __init__(self):
        super().__init__()
        self.t = Timer(period="10 ms")
        self.out = Output()
        self.k = 0

    @reaction("t", effects="out")
    def count(self):
        self.k += 1
        self.out.set(self.k)


class Sender(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.counter = Counter()
        self.connect(self.counter.out, self.out)


class Recorder(Reactor):
    def __init__(self, label):
        super().__init__()
        self.label = label
        self.inp = Input()
        self.seen = []

    @reaction("inp")
    def record(self):
        self.seen.append((self.elapsed // 1_000_000, self.tag.microstep, self.inp.value))

    @reaction("shutdown")
    def report(self):
        print(self.label, self.seen, flush=True)


class Stage(Reactor):
    """A composite: its input feeds a child through a delayed connection."""

    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.late = Recorder("LATE")
        self.connect(self.inp, self.late.inp, after="1 ms")


class Receiver(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.now = Recorder("NOW")
        self.stage = Stage()
        self.connect(self.inp, self.now.inp)
        self.connect(self.inp, self.stage.inp)


COORDINATION = os.environ.get("COMPOSITE_COORDINATION", "centralized")


@main(federated=True, timeout="35 ms", fast=COORDINATION == "centralized",
      coordination=COORDINATION, stp_offset="50 ms")  # fmt: skip
class Composite(Reactor):
    def __init__(self):
        super().__init__()
        self.sender = Sender()
        self.receiver = Receiver()
        self.connect(self.sender.out, self.receiver.inp)
