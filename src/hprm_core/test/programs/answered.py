"""A gateway's shape, centralized: a federate with a physical action (events
from a driver thread) whose messages an echo federate answers, one microstep
later, as a ported node answers a bridge's gateway. The echo has no timer and
no action: it only ever answers, so the boundary may grant itself its tags
(grants.self_paced). EX_ECHO_TIMER=1 gives the echo a timer: then it may not.
EX_ECHO_TIMER=late gives it a cancelled timer, which its answer to event
LATE_AT starts: one tick, 5 ms on, sent after 30 ms of work, unasked (a ported
node's timer made in a callback): from then on the boundary must ask again.
EX_GAP_MS (default 20) spaces the events; 0 sends them back to back, so that
answers are still on their way when the next event comes. EX_EVENTS=0 leaves
the boundary idle (a gateway with no ROS 2 traffic) until EX_TIMEOUT.
Each side prints what it saw, with tags relative to the start."""

import os
import threading
import time

from hprm_core import Input, Output, PhysicalAction, Reactor, Timer, main, reaction

EVENTS = int(os.environ.get("EX_EVENTS", "20"))
ECHO_TIMER = os.environ.get("EX_ECHO_TIMER")
LATE_AT = 10


class Boundary(Reactor):
    def __init__(self):
        super().__init__()
        self.arrived = PhysicalAction()
        self.out = Output()
        self.back = Input()
        self.sent = []
        self.answers = []
        self.ticks = []

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
        at = self.tag.elapsed(self.start_time)
        if self.back.value == "tick":
            self.ticks.append(at)
            return
        self.answers.append((self.back.value, at))
        if len(self.answers) == EVENTS:
            self.request_stop()

    @reaction("shutdown")
    def report(self):
        print(f"BOUNDARY sent={self.sent} answers={self.answers} ticks={self.ticks}",
              flush=True)  # fmt: skip


class Echo(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.out = Output()
        if ECHO_TIMER == "late":
            self.tick = Timer(period="5 ms")
            self.tick.cancel()
            self.add_reaction(self._tick, self.tick, effects=[self.out], name="tick")
        elif ECHO_TIMER:
            self.tick = Timer(period="50 ms")
            self.add_reaction(lambda: None, self.tick, name="tick")

    @reaction("inp", effects="out")
    def echo(self):
        self.out.set(self.inp.value)
        if ECHO_TIMER == "late" and self.inp.value == LATE_AT:
            self.tick.reset()

    def _tick(self):
        self.tick.cancel()
        time.sleep(0.03)  # its message leaves after the boundary's next event is due
        self.out.set("tick")


@main(federated=True, timeout=os.environ.get("EX_TIMEOUT", "10 s"))
class Answered(Reactor):
    def __init__(self):
        super().__init__()
        self.boundary = Boundary()
        self.echo = Echo()
        self.connect(self.boundary.out, self.echo.inp, after=0)
        self.connect(self.echo.out, self.boundary.back)
