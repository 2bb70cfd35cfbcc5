"""A timer-driven sensor -> filter -> controller pipeline, like a small ROS 2 graph.

A LiDAR-like sensor samples a range every 100 ms; a filter smooths it; a
controller turns it into a speed command; the actuator logs it. Every stage
runs at the same logical tag as the sample it processes, so the command at
t = 300 ms is computed from exactly the sample taken at t = 300 ms, every run,
whatever the machine's load. The actuator's connection has a 5 ms `after`
delay, modelling actuation latency explicitly instead of by accident.

    hprm run examples/pipeline.py              # real time, 1 s
    hprm run examples/pipeline.py --fast       # as fast as possible
"""

import math

from hprm_core import Input, Output, Reactor, Timer, main, reaction


class RangeSensor(Reactor):
    def __init__(self, period="100 ms"):
        super().__init__()
        self.range = Output()
        self.sample = Timer(period=period)
        self.k = 0

    @reaction("sample", effects="range")
    def read(self):
        # A deterministic "measurement": an obstacle approaching with noise.
        self.range.set(10.0 - 0.8 * self.k + 0.3 * math.sin(7.0 * self.k))
        self.k += 1


class Smoother(Reactor):
    def __init__(self, alpha=0.5):
        super().__init__()
        self.raw = Input()
        self.smooth = Output()
        self.alpha = alpha
        self.state = None

    @reaction("raw", effects="smooth")
    def filter(self):
        x = self.raw.value
        self.state = x if self.state is None else self.alpha * x + (1 - self.alpha) * self.state
        self.smooth.set(self.state)


class Controller(Reactor):
    def __init__(self, stop_distance=3.0):
        super().__init__()
        self.distance = Input()
        self.speed = Output()
        self.stop_distance = stop_distance

    @reaction("distance", effects="speed")
    def command(self):
        gap = self.distance.value - self.stop_distance
        self.speed.set(max(0.0, min(2.0, 0.5 * gap)))


class Actuator(Reactor):
    def __init__(self):
        super().__init__()
        self.speed = Input()
        self.commands = []

    @reaction("speed")
    def apply(self):
        self.commands.append(self.speed.value)
        ms = self.elapsed / 1e6
        print(f"t={ms:7.1f} ms  actuator: speed command {self.speed.value:.3f} m/s", flush=True)

    @reaction("shutdown")
    def summary(self):
        print(f"actuator: applied {len(self.commands)} commands, stopping", flush=True)


@main(timeout="1 s")
class Pipeline(Reactor):
    def __init__(self):
        super().__init__()
        self.sensor = RangeSensor()
        self.smoother = Smoother()
        self.controller = Controller()
        self.actuator = Actuator()
        self.connect(self.sensor.range, self.smoother.raw)
        self.connect(self.smoother.smooth, self.controller.distance)
        self.connect(self.controller.speed, self.actuator.speed, after="5 ms")

    @reaction("startup")
    def hello(self):
        print("pipeline: sensor -> smoother -> controller -(5 ms)-> actuator, 10 Hz, 1 s")


if __name__ == "__main__":
    from hprm_core import run

    run(Pipeline(), timeout="1 s")
