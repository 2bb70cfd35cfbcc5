"""What reaches a federate: frames from its RTI and payloads from its peers.

Two kinds of socket feed a federate: the RTI's (grants, the stop agreement,
failures, messages routed through the RTI) and one per upstream peer
(payloads sent peer to peer). The scheduler thread reads both while it waits
(``Scheduler.add_reader``), so a message goes from the socket to the event
heap with no thread hand-off. What arrives becomes an event (a message), or
something the coordinator decides with: a grant, an absence, the latest tag
seen on each connection (``FederateCoordinator.known_tags``, its "last known
status"). That state stays the coordinator's; this object only writes it, as
the :class:`~hprm_core.shutdown.ShutdownCoordinator` does for the stop. This
module is compiled (:mod:`compiled`): it is on every message's path.
"""

from __future__ import annotations

import functools
import logging
import pickle
from typing import TYPE_CHECKING, Any

from hprm_core import transport
from hprm_core.data_plane import INLINE_KIND
from hprm_core.errors import HprmError
from hprm_core.scheduler import TAG_MARKER
from hprm_core.tag import NEVER, Tag, make_tag
from hprm_core.transport import ROUTE, Connection, Frame, unpack_tag

if TYPE_CHECKING:
    from hprm_core.federation import FederateCoordinator

log = logging.getLogger("hprm.federation")

_MESSAGE, _ABSENT = Frame.MESSAGE, Frame.ABSENT  # module constants: no Enum lookups per message
_ROUTE_SIZE = ROUTE.size
_unpack_route = ROUTE.unpack_from
_loads = pickle.loads


class Inbound:
    """A federate's receiving side (its coordinator's)."""

    def __init__(self, coordinator: FederateCoordinator) -> None:
        self.c = coordinator

    def handle(self, kind: Frame, payload: memoryview, source: str) -> None:
        """One frame from the RTI or a peer (``source`` names it in errors)."""
        c = self.c
        sched = c.sched
        assert sched is not None
        if kind is _MESSAGE or kind is _ABSENT:  # the per-message path: kept short
            t, m, dst, cid = ROUTE.unpack_from(payload)
            link = c.in_ports.get(cid)
            if link is None or dst != c.me.id:
                raise transport.ProtocolError(f"{source} sent a message for unknown port {cid}")
            tag = make_tag((t, m))
            if kind is _ABSENT:
                if tag > c.absent_tags.get(cid, NEVER):
                    c.absent_tags[cid] = tag
                c.promise.forget()  # the RTI lowered our NET to this tag
                # Visit that tag even with no event of our own there: our
                # outputs' absence at it must be announced (zero-delay cycle).
                sched.schedule_network(TAG_MARKER, tag, None)
                return
            assert c.data_plane is not None
            try:
                value = c.data_plane.decode(
                    link.src_fed,
                    payload[ROUTE.size :],
                    link.serialization,
                    copy_raw=len(payload) <= transport.EAGER_BUFFER,
                )
            except HprmError as exc:
                # Bad payload: say which connection and tag, drop it, keep running.
                log.error(
                    "%s: dropped a message on %s -> %s at tag %s: %s",
                    c.me.name,
                    link.src_name,
                    link.dst_name,
                    tag.elapsed(sched.start_time),
                    exc,
                )
                # The tag is still ours to complete: the RTI counts the message in
                # transit to us until our LTC passes it (no grant comes before).
                c.known_tags[cid] = tag
                c.promise.forget()
                sched.schedule_network(TAG_MARKER, tag, None)
                return
            c.known_tags[cid] = tag
            # The RTI lowered our NET to this message's tag when forwarding it:
            # the next NET must be sent even if it repeats the last one.
            c.promise.forget()
            sched.schedule_network(link.deliver, tag, value)
        elif kind is Frame.TAG or kind is Frame.PTAG:
            # No lock, no notification: this runs in the scheduler thread,
            # which re-checks its grants as soon as the callback returns.
            g = make_tag(unpack_tag(payload))
            if kind is Frame.TAG and g > c.granted:
                c.granted = g
                c.unsettled_grant = bool(c.p2p_upstream)
            elif kind is Frame.PTAG and g > c.provisional:
                c.provisional = g
                c.unsettled_grant = bool(c.p2p_upstream)
        elif kind == Frame.WANTED:
            # Only a NET capped by physical actions can be renewed sooner; the
            # scheduler thread looks at it again as this callback returns.
            c.promise.wanted = make_tag(unpack_tag(payload))
        elif kind == Frame.STOP_REQUEST:
            c.shutdown.on_request(sched, Tag(*unpack_tag(payload)))
        elif kind == Frame.STOP_GRANTED:
            c.shutdown.on_granted(sched, Tag(*unpack_tag(payload)))
        elif kind == Frame.FAILED:
            c.fail(bytes(payload).decode())
        elif kind == Frame.PACE_OFF:
            if c.self_paced:
                c.self_paced = False
                log.info("%s: a federate upstream may now send on its own: it asks the "
                         "RTI for every tag again", c.me.name)  # fmt: skip
        elif kind == Frame.QUIESCENT:
            with sched.lock:
                c.quiescent = True
                sched.wake()
        elif kind == Frame.RESIGN:
            pass
        else:
            raise transport.ProtocolError(f"{source} sent unexpected {kind.name}")

    def on_rti_readable(self) -> None:
        """Runs in the scheduler thread while it waits: no thread hand-off."""
        c = self.c
        conn = c.rti
        sched = c.sched
        assert conn is not None and sched is not None
        try:
            while True:
                kind, payload = conn.recv()
                self.handle(kind, payload, "RTI")
                if not conn.has_buffered_frame():
                    return
        except (EOFError, OSError) as exc:
            sched.remove_reader(conn.sock)
            if not c.resigned and c.failure is None:
                c.fail(f"lost the RTI ({exc})")
                c.rti_lost = True
        except Exception as exc:
            sched.remove_reader(conn.sock)
            c.fail(f"bad frame from the RTI: {exc}")

    def add_upstream(self, conn: Connection, hello: dict[str, Any]) -> None:
        """Accept thread: watch a new upstream peer's socket (from the next wait)."""
        c = self.c
        sched = c.sched
        assert sched is not None
        with sched.lock:
            c.upstream_conns[hello["federate"]] = conn
            sched.add_reader(
                conn.sock, functools.partial(self.on_peer_readable, conn, hello["federate"])
            )
            c.peers_missing -= 1
            # Payloads may already wait on it, sent before grants we hold.
            c.unsettled_grant = True

    def on_peer_readable(self, conn: Connection, fid: int) -> None:
        """The peer-to-peer data path, run by the scheduler thread while it
        waits: no thread hand-off.

        A small pickled message for a tag still ahead, the common case, goes
        from the receive buffer to the event heap in this one function, without
        the general path's calls (``handle``, ``DataPlane.decode``,
        ``schedule_network``). A message wakes this process after another one
        (its sender) ran on the CPU, so whatever runs here runs cold (caches
        full of the sender's state), several times slower than the same code in
        a loop: the per-message path is kept to as little code as possible.
        Anything else (absences, stored or streamed values, safe-mode links,
        tardy or provisional-tag messages, a payload that fails to unpickle)
        takes the general path, which also reports the errors.
        """
        c = self.c
        sched = c.sched
        assert sched is not None
        recv = conn.recv
        in_ports = c.in_ports
        known_tags = c.known_tags
        me = c.me.id
        try:
            while True:
                kind, payload = recv()
                if kind is _MESSAGE and payload[_ROUTE_SIZE] == INLINE_KIND:
                    t, m, dst, cid = _unpack_route(payload)
                    link = in_ports.get(cid)
                    tag = make_tag((t, m))
                    if (
                        link is not None
                        and dst == me
                        and link.serialization == "pickle"
                        and tag > sched.tag
                    ):
                        try:
                            value = _loads(payload[_ROUTE_SIZE + 1 :])
                        except Exception:
                            pass  # the general path below drops and reports it
                        else:
                            known_tags[cid] = tag
                            c.promise.forget()  # as in handle
                            sched.schedule_network(link.deliver, tag, value)
                            if not conn.has_buffered_frame():
                                return
                            continue
                if kind == Frame.RESIGN:
                    break
                self.handle(kind, payload, conn.peer)
                if not conn.has_buffered_frame():
                    return
        except (EOFError, OSError):
            # Closed without resigning: it failed or died. That is not "done":
            # ending our run on it would race the RTI's verdict (FAILED naming
            # it, or the RTI's own socket closing, when it was the RTI that
            # died first), and we would leave as if all was well. We wait for
            # that verdict instead; it always comes.
            sched.remove_reader(conn.sock)
            conn.close()
            return
        except Exception as exc:
            log.error("%s: dropping connection from federate %d: %s", c.me.name, fid, exc)
        sched.remove_reader(conn.sock)
        conn.close()
        with sched.lock:
            c.upstream_done.add(fid)
            sched.wake()
