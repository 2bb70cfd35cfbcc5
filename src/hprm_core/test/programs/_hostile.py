"""Fault injection for the tests: a federate that writes raw frames to a
peer, as a buggy or hostile (but authenticated) federate of the same
federation would. Going through a federate's own peer connection keeps the
tests deterministic: the frame is on the wire before the real value of the
same tag."""

from hprm_core import transport


def send_raw(reactor, port, payload: bytes) -> None:
    """Write one MESSAGE frame carrying ``payload`` (no serialization) on
    ``port``'s peer-to-peer connection, at the current tag."""
    sched = reactor._runtime()
    coordinator = sched.coordinator
    (c,) = [c for c in coordinator.out_conns if c.src is port]
    route = transport.ROUTE.pack(sched.tag.time, sched.tag.microstep, c.dst_fed, c.id)
    coordinator.peers[c.dst_fed].send(transport.Frame.MESSAGE, route, payload)
