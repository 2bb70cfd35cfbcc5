"""Clock offset measurement against an RTI whose clock runs ahead of ours."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from hprm_core import clock_sync
from hprm_core.transport import CLOCK, Connection, Frame, unpack_tag

AHEAD_NS = 7_000_000  # the fake RTI's clock, 7 ms ahead of this host's


def _rti(conn: Connection, rounds: int, reply: Frame = Frame.CLOCK_REPLY) -> None:
    for _ in range(rounds):
        kind, payload = conn.recv()
        assert kind == Frame.CLOCK_QUERY
        t1, _ = unpack_tag(payload)
        conn.send(reply, CLOCK.pack(t1, time.time_ns() + AHEAD_NS))


def _pair() -> tuple[Connection, Connection]:
    a, b = socket.socketpair()
    return Connection(a, "federate"), Connection(b, "rti")


def test_the_offset_is_the_rtis_clock_minus_ours_within_half_the_best_round_trip():
    """Why the bound holds: the RTI read its clock between our two reads."""
    fed, rti = _pair()
    server = threading.Thread(target=_rti, args=(rti, 8))
    server.start()
    try:
        rtt, offset = clock_sync.measure_offset(fed, rounds=8)
    finally:
        server.join()
        fed.sock.close()
        rti.sock.close()
    assert rtt > 0
    assert abs(offset - AHEAD_NS) <= rtt // 2 + 1, (offset, rtt)


def test_an_rti_answering_with_another_frame_is_an_error_naming_it():
    fed, rti = _pair()
    server = threading.Thread(target=_rti, args=(rti, 1, Frame.READY))
    server.start()
    try:
        with pytest.raises(ConnectionError, match="answered a clock query with READY"):
            clock_sync.measure_offset(fed, rounds=3)
    finally:
        server.join()
        fed.sock.close()
        rti.sock.close()
