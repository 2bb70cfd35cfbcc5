"""A deadline and its handler: react late, and do something sensible about it.

A planner must answer within 20 ms of each camera frame's tag. Every third
frame the upstream stage is slow (it burns 40 ms of real time), so the
planner starts too late; instead of planning on stale data it runs its
deadline handler, which issues a safe "hold" command and counts the miss.
Deadlines compare physical time with logical time, so this example must run
in real time (not --fast) to mean anything.

    hprm run examples/deadline.py
"""

import time

from hprm_core import Input, Output, Reactor, Timer, main, reaction


class Camera(Reactor):
    def __init__(self):
        super().__init__()
        self.frame = Output()
        self.tick = Timer(period="50 ms")
        self.k = 0

    @reaction("tick", effects="frame")
    def capture(self):
        if self.k % 3 == 2:
            time.sleep(0.04)  # a slow frame: exposure / driver hiccup
        self.frame.set(self.k)
        self.k += 1


class Planner(Reactor):
    def __init__(self):
        super().__init__()
        self.frame = Input()
        self.cmd = Output()
        self.misses = 0
        self.planned = 0

    @reaction("frame", effects="cmd", deadline="20 ms")
    def plan(self):
        self.planned += 1
        self.cmd.set(("go", self.frame.value))

    @plan.deadline_missed
    def too_late(self):
        self.misses += 1
        print(f"frame {self.frame.value}: deadline missed, holding", flush=True)
        self.cmd.set(("hold", self.frame.value))

    @reaction("shutdown")
    def report(self):
        print(f"planner: {self.planned} planned on time, {self.misses} deadline misses", flush=True)


@main(timeout="400 ms")
class DeadlineDemo(Reactor):
    def __init__(self):
        super().__init__()
        self.camera = Camera()
        self.planner = Planner()
        self.connect(self.camera.frame, self.planner.frame)
