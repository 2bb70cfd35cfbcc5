"""Centralized, one host: payloads go peer to peer, grants come from the RTI.

A source sends a 30 KB message every 200 us; the sink has its own 5 ms timer
(offset 2.4 ms: each of its tags is also a message's tag) and, now and then,
sleeps 30 ms in a reaction, so hundreds of kilobytes queue up in its peer
socket while the RTI keeps granting. The RTI learns of each payload from its
sender's NOTICE and never grants past a message it knows is unprocessed; if it
did, a timer tag would run before the messages queued ahead of it and those
would turn tardy. Each timer tag must see exactly the messages tagged at or
before it.

What this does not reproduce: a grant read in the same wake-up in which a
payload for that tag arrived just after epoll returned (a microsecond window,
closed by the federate's non-blocking pass over its peer sockets before it
uses a new grant).
"""

import time

from hprm_core import Input, Output, Reactor, Timer, main, reaction

COUNT = 400
TICKS = 16  # sink timer tags at 2.4 + 5 k ms: 13 + 25 k messages at or before each
PAYLOAD = b"p" * 30_000


class Source(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.t = Timer(period="200 us")
        self.k = 0

    @reaction("t", effects="out")
    def send(self):
        if self.k < COUNT:
            self.out.set((self.k, PAYLOAD))
            self.k += 1


class Sink(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.t = Timer(offset="2400 us", period="5 ms")
        self.received = 0
        self.seen = []  # at each timer tag: how many messages had arrived

    @reaction("inp")
    def receive(self):
        k, payload = self.inp.value
        assert k == self.received and len(payload) == len(PAYLOAD)
        self.received += 1

    @reaction("t")
    def tick(self):
        self.seen.append(self.received)
        if len(self.seen) % 3 == 0:
            time.sleep(0.03)  # fall behind: the peer socket fills up
        if len(self.seen) == TICKS:
            tardy = self.inp.tardy_count
            print(f"SINK seen={self.seen} tardy={tardy}", flush=True)
            self.request_stop()


@main(federated=True, coordination="centralized")
class GrantRace(Reactor):
    def __init__(self):
        super().__init__()
        self.source = Source()
        self.sink = Sink()
        self.connect(self.source.out, self.sink.inp)
