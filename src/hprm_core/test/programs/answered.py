"""A gateway's shape, centralized: a federate with a physical action (events
from a driver thread) whose messages an echo federate answers, one microstep
later, as a ported node answers a bridge's gateway. The echo has no timer and
no action: it only ever answers, so the boundary may grant itself its tags
(grants.self_paced). EX_ECHO_TIMER=1 gives the echo a timer: then it may not.
EX_GAP_MS (default 20) spaces the events; 0 sends them back to back, so that
answers are still on their way when the next event comes. EX_EVENTS=0 leaves
the boundary idle (a gateway with no ROS 2 traffic) until EX_TIMEOUT.
Each side prints what it saw, with tags relative to the start."""

import os
import threading
import time

from hprm_core import Input, Output, PhysicalAction, Reactor, Timer, main, reaction

EVENTS = int(os.environ.get("EX_EVENTS", "20"))


class Boundary(Reactor):
    def __init__(self):
        super().__init__()
        self.arrived = PhysicalAction()
        self.out = Output()
        self.back = Input()
        self.sent = []
        self.answers = []

    @reaction("startup")
    def start_driver(self):
        def driver():
            gap = float(os.environ.get("EX_GAP_MS", "20")) / 1000
            for i in range(EVENTS):
                time.sleep(gap)
                self.arrived.schedule(i)

        threading.Thread(target=driver, daemon=True).start()

    @reaction("arrived", effects="out")
    def enter(self):
        self.sent.append(self.tag.elapsed(self.start_time))
        self.out.set(self.arrived.value)

    @reaction("back")
    def leave(self):
        self.answers.append((self.back.value, self.tag.elapsed(self.start_time)))
        if len(self.answers) == EVENTS:
            self.request_stop()

    @reaction("shutdown")
    def report(self):
        print(f"BOUNDARY sent={self.sent} answers={self.answers}", flush=True)


class Echo(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.out = Output()
        if os.environ.get("EX_ECHO_TIMER"):
            self.tick = Timer(period="50 ms")
            self.add_reaction(lambda: None, self.tick, name="tick")

    @reaction("inp", effects="out")
    def echo(self):
        self.out.set(self.inp.value)


@main(federated=True, timeout=os.environ.get("EX_TIMEOUT", "10 s"))
class Answered(Reactor):
    def __init__(self):
        super().__init__()
        self.boundary = Boundary()
        self.echo = Echo()
        self.connect(self.boundary.out, self.echo.inp, after=0)
        self.connect(self.echo.out, self.boundary.back)
