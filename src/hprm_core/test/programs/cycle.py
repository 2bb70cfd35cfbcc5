"""A zero-delay cycle across two federates: ping's timer output goes to pong,
which answers at the same tag; ping records the answer at that same tag.
Needs provisional tag grants (PTAG) and absent messages to make progress."""

import os

from hprm_core import Input, Output, Reactor, Timer, main, reaction

DELAY = os.environ.get("CYCLE_AFTER") or None


class Ping(Reactor):
    def __init__(self):
        super().__init__()
        self.t = Timer(period="10 ms")
        self.out = Output()
        self.back = Input()
        self.k = 0
        self.log = []

    @reaction("t", effects="out")
    def send(self):
        self.k += 1
        if self.k % 3:  # every third tag sends nothing: pong must learn "absent"
            self.out.set(self.k)

    @reaction("back")
    def answer(self):
        self.log.append((self.elapsed, self.tag.microstep, self.back.value))

    @reaction("shutdown")
    def report(self):
        print("PING", self.log, flush=True)


class Pong(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.out = Output()

    @reaction("inp", effects="out")
    def reply(self):
        self.out.set(self.inp.value * 10)


@main(federated=True, timeout="55 ms", fast=True)
class Cycle(Reactor):
    def __init__(self):
        super().__init__()
        self.ping = Ping()
        self.pong = Pong()
        self.connect(self.ping.out, self.pong.inp)
        self.connect(self.pong.out, self.ping.back, after=DELAY)
