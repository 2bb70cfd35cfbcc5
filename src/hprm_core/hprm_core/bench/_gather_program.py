"""The federation measured by ``hprm bench gather`` (paper Fig. 4), configured
through the environment because every federate process imports this file.

A server broadcasts one S MB float64 array to a bank of 4 client federates;
each client returns an array of the same size (``forward``: what it received;
``copy``: a fresh copy); when all 4 are back the server starts the next round.
The return path has an ``after 0`` delay (one microstep), so the round is not a
zero-delay cycle. Each round starts from a physical action (tagged with the
physical time it is scheduled at), as a sensor-driven round would. In
centralized coordination the 4 returns arrive at one tag; in decentralized
coordination (STP 0, no waiting) a return may arrive after the server moved on
and reaches the STP-violation handler, which counts it all the same.
"""

import os
import time

import numpy as np

from hprm_core import Bank, Input, Output, PhysicalAction, Reactor, main, reaction

COORD = os.environ.get("GATHER_COORDINATION", "centralized")
SIZE = int(float(os.environ.get("GATHER_MB", "1")) * 1_000_000) // 8
ROUNDS = int(os.environ.get("GATHER_ROUNDS", "12"))
CLIENT = os.environ.get("GATHER_CLIENT", "forward")
CLIENTS = 4


class Server(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.ins = Input(width=CLIENTS)
        self.go = PhysicalAction()
        self.payload = None
        self.sent_at = 0
        self.back = 0
        self.latencies = []

    @reaction("startup", effects="go")
    def start(self):
        time.sleep(0.3)  # let the bench sample the federation's memory before any payload
        self.go.schedule()

    @reaction("go", effects="out")
    def send(self):
        if self.payload is None:  # built in place in the object store: sent without a copy
            self.payload = self.alloc_array(SIZE, np.float64)
            self.payload[:] = np.arange(SIZE, dtype=np.float64)
        self.sent_at = time.perf_counter_ns()
        self.out.set(self.payload)

    @reaction("ins", effects="go")
    def gather(self):
        self._collect()

    @gather.stp_violation
    def gather_late(self):
        # Decentralized with STP 0: a return that arrives after the server
        # moved past its tag comes here, at a later microstep; it still counts.
        self._collect()

    def _collect(self):
        for p in self.ins:
            if p.is_present:
                if p.value.shape != self.payload.shape:
                    raise RuntimeError("a client returned an array of the wrong size")
                self.back += 1
        if self.back < CLIENTS:
            return
        self.back = 0
        self.latencies.append(time.perf_counter_ns() - self.sent_at)
        if len(self.latencies) < ROUNDS:
            self.go.schedule()
        else:
            print("LATENCIES", ",".join(map(str, self.latencies)), flush=True)
            self.request_stop()


class Client(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.out = Output()

    @reaction("inp", effects="out")
    def answer(self):
        arr = self.inp.value
        if CLIENT == "forward":
            self.out.set(arr)  # zero-copy forward: the same reference goes back
        else:  # a fresh copy, made directly in this federate's store (one copy)
            fresh = self.alloc_array(arr.shape, arr.dtype)
            fresh[:] = arr
            self.out.set(fresh)


@main(federated=True, coordination=COORD)
class Gather(Reactor):
    def __init__(self):
        super().__init__()
        self.server = Server()
        self.clients = Bank(CLIENTS, Client)
        self.connect(self.server.out, self.clients.inp, broadcast=True)
        self.connect(self.clients.out, self.server.ins, after=0)
