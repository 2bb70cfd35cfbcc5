"""A 3-node ROS 2 pipeline (sensor -> processor -> actuator) as three federates.

Each top-level reactor is its own OS process, as each ROS 2 node is; the
connections between them are network connections. Run it with either
coordination (the default here is centralized; the tests run both):

    hprm run examples/federated_pipeline.py
    HPRM_COORDINATION=decentralized hprm run examples/federated_pipeline.py

Centralized: the RTI grants tag advances, so the actuator sees every command
at exactly the tag the sensor sampled it (+ the 5 ms `after` delay), in one
global order. Decentralized: peers talk directly; the actuator waits an STP
offset of 20 ms past each tag for its inputs, and a late message would run
the `stp_violation` handler instead of being silently reordered.
"""

import os

from hprm_core import Input, Output, Reactor, Timer, main, reaction

COORDINATION = os.environ.get("HPRM_COORDINATION", "centralized")


class Sensor(Reactor):
    def __init__(self):
        super().__init__()
        self.scan = Output()
        self.sample = Timer(period="50 ms")
        self.k = 0

    @reaction("sample", effects="scan")
    def read(self):
        self.k += 1
        self.scan.set({"seq": self.k, "range": 10.0 - 0.5 * self.k})


class Processor(Reactor):
    def __init__(self):
        super().__init__()
        self.scan = Input()
        self.cmd = Output()

    @reaction("scan", effects="cmd")
    def plan(self):
        scan = self.scan.value
        self.cmd.set({"seq": scan["seq"], "speed": max(0.0, 0.4 * (scan["range"] - 3.0))})


class Actuator(Reactor):
    def __init__(self):
        super().__init__()
        self.cmd = Input()
        self.applied = 0
        self.late = 0

    @reaction("cmd")
    def apply(self):
        self.applied += 1
        cmd = self.cmd.value
        print(f"t={self.elapsed / 1e6:6.1f} ms  seq {cmd['seq']:2d}  speed {cmd['speed']:.2f}")

    @apply.stp_violation
    def late_command(self):
        self.late += 1
        print(f"late command seq {self.cmd.value['seq']} (tag {self.cmd.last_tardy_tag})")

    @reaction("shutdown")
    def summary(self):
        print(f"actuator: {self.applied} commands applied, {self.late} late")


@main(federated=True, coordination=COORDINATION, stp_offset="20 ms", timeout="500 ms")
class FederatedPipeline(Reactor):
    def __init__(self):
        super().__init__()
        self.sensor = Sensor()
        self.processor = Processor()
        self.actuator = Actuator()
        self.connect(self.sensor.scan, self.processor.scan)
        self.connect(self.processor.cmd, self.actuator.cmd, after="5 ms")
