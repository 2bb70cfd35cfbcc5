"""Clock synchronization between a federate and its RTI across hosts.

A federation's start time and every tag are on the RTI's clock; on one host
all processes share the system clock, across hosts each federate measures
its offset before the start. Why the minimum round trip: the sample with
the shortest round trip bounds the error of its offset best (at most half
that round trip), and taking the minimum over a few rounds drops samples a
scheduling hiccup delayed (as in NTP's clock filter and reactor-c's
clock sync).
"""

from __future__ import annotations

import time

from hprm_core.transport import CLOCK, Connection, Frame, pack_tag, unpack_tag


def measure_offset(rti: Connection, rounds: int = 8) -> tuple[int, int]:
    """(round trip, offset) in ns of the best of ``rounds`` queries: the RTI's
    clock minus ours. Raises ConnectionError if the RTI answers otherwise."""
    best: tuple[int, int] | None = None
    for _ in range(rounds):
        t1 = time.time_ns()
        rti.send(Frame.CLOCK_QUERY, pack_tag(t1, 0))
        kind, payload = rti.recv()
        t4 = time.time_ns()
        if kind != Frame.CLOCK_REPLY:
            raise ConnectionError(f"RTI answered a clock query with {kind.name}")
        _, server = CLOCK.unpack_from(payload)
        rtt = t4 - t1
        offset = server - (t1 + t4) // 2
        if best is None or rtt < best[0]:
            best = (rtt, offset)
    assert best is not None
    return best


def answer(query: bytes | memoryview) -> bytes:
    """The RTI's reply to a CLOCK_QUERY payload: the query's time and its clock now."""
    t1, _ = unpack_tag(query)
    return CLOCK.pack(t1, time.time_ns())
