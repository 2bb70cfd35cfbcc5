"""Bateni et al.'s ordering scenario (HPRM paper IV-B) as a federation.

Two sources emit numbered messages at the same tags; one reaches the sink
directly, the other through a relay federate (a longer, slower path). The
sink must see both at the same tag, in tag order, every time. Parameters come
from the environment so tests can scale them:

    ORDER_COORDINATION  centralized | decentralized
    ORDER_COUNT         messages per source
    ORDER_PERIOD        source period, e.g. "1 ms"
    ORDER_STP           STP offset (decentralized)
    ORDER_RELAY_DELAY_S real seconds the relay burns per message
    ORDER_HOSTILE       "corrupt": source a first sends 3 garbage payloads
"""

import os
import time

from _hostile import send_raw

from hprm_core import Input, Output, Reactor, Timer, main, reaction

COORD = os.environ.get("ORDER_COORDINATION", "centralized")
COUNT = int(os.environ.get("ORDER_COUNT", "1000"))
PERIOD = os.environ.get("ORDER_PERIOD", "1 ms")
STP = {
    "sink": os.environ.get("ORDER_STP", "0 ms"),
    "relay": os.environ.get("ORDER_RELAY_STP", "0 ms"),
}
RELAY_DELAY = float(os.environ.get("ORDER_RELAY_DELAY_S", "0"))
# Decentralized runs stop on a timeout instead, so late messages still arrive.
TIMEOUT = os.environ.get("ORDER_TIMEOUT") or None
STOP_BY_REQUEST = TIMEOUT is None
HOSTILE = os.environ.get("ORDER_HOSTILE")
# A pickle that is not one, a full payload with a truncated header, an unknown kind.
GARBAGE = (b"\x00not a pickle at all", b"\x01\xff\xff\xff\xff", b"\x07")


class Source(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.t = Timer(period=PERIOD)
        self.k = 0

    @reaction("t", effects="out")
    def emit(self):
        if HOSTILE == "corrupt" and self.k == 0 and self.name == "a":
            for payload in GARBAGE:
                send_raw(self, self.out, payload)
        if self.k < COUNT:
            self.out.set((self.k, self.elapsed))
            self.k += 1
        elif STOP_BY_REQUEST:
            self.request_stop()


class Relay(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.out = Output()

    @reaction("inp", effects="out")
    def forward(self):
        if RELAY_DELAY:
            time.sleep(RELAY_DELAY)
        self.out.set(self.inp.value)


class Sink(Reactor):
    """Counts how every message was delivered. A message carries the elapsed
    time of the tag it was sent at, so a delivery at any other tag that did not
    go through the STP-violation handler is a silent reordering."""

    def __init__(self):
        super().__init__()
        self.direct = Input()
        self.relayed = Input()
        self.last_tag = None
        self.received = 0
        self.out_of_order = 0
        self.silent_reorder = 0
        self.unpaired = 0
        self.tardy = 0

    def _count(self, handler):
        tag = tuple(self.tag)
        if self.last_tag is not None and tag < self.last_tag:
            self.out_of_order += 1
        self.last_tag = tag
        present = [p for p in (self.direct, self.relayed) if p.is_present]
        self.received += len(present)
        for p in present:
            if p.is_tardy:
                self.tardy += 1
            elif p.value[1] != self.elapsed or self.tag.microstep != 0:
                self.silent_reorder += 1
        if len(present) == 1 and not present[0].is_tardy:
            self.unpaired += 1
        if len(present) == 2 and self.direct.value[0] != self.relayed.value[0]:
            self.unpaired += 1

    @reaction("direct", "relayed")
    def take(self):
        self._count(handler=False)

    @take.stp_violation
    def late(self):
        self._count(handler=True)

    @reaction("shutdown")
    def report(self):
        print(
            f"SINK received={self.received} out_of_order={self.out_of_order} "
            f"silent_reorder={self.silent_reorder} unpaired={self.unpaired} tardy={self.tardy}",
            flush=True,
        )


@main(federated=True, coordination=COORD, stp_offset=STP, timeout=TIMEOUT)
class Ordering(Reactor):
    def __init__(self):
        super().__init__()
        self.a = Source()
        self.b = Source()
        self.relay = Relay()
        self.sink = Sink()
        self.connect(self.a.out, self.sink.direct)
        self.connect(self.b.out, self.relay.inp)
        self.connect(self.relay.out, self.sink.relayed)
