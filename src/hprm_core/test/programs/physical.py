"""A sensor federate driven by a physical action (a driver thread), feeding a
busy downstream federate with a 1 ms timer, centralized. The sensor can send at
any physical moment, so it must never let the RTI grant the downstream past
"now": no message may arrive for a tag the downstream has already processed."""

import threading
import time

from hprm_core import Input, Output, PhysicalAction, Reactor, Timer, main, reaction

EVENTS = 25


class Sensor(Reactor):
    def __init__(self):
        super().__init__()
        self.reading = PhysicalAction()
        self.out = Output()

    @reaction("startup")
    def start_driver(self):
        def driver():
            for i in range(EVENTS):
                time.sleep(0.007)
                self.reading.schedule(i)

        threading.Thread(target=driver, daemon=True).start()

    @reaction("reading", effects="out")
    def publish(self):
        self.out.set(self.reading.value)


class Consumer(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.tick = Timer(period="1 ms")
        self.got = []
        self.ticks = 0

    @reaction("tick")
    def busy(self):
        self.ticks += 1

    @reaction("inp")
    def take(self):
        self.got.append(self.inp.value)
        if len(self.got) == EVENTS:
            self.request_stop()

    @reaction("shutdown")
    def report(self):
        print(f"CONSUMER got={self.got} ticks={self.ticks}", flush=True)


@main(federated=True, timeout="5 s")
class PhysicalFederation(Reactor):
    def __init__(self):
        super().__init__()
        self.sensor = Sensor()
        self.consumer = Consumer()
        self.connect(self.sensor.out, self.consumer.inp)
