"""How a federate stops: one stop tag agreed by the whole federation, then
a clean leave.

Why agree at all: a federate that stops on its own (a ``request_stop()``, a
failing reaction, Ctrl-C) would leave the others waiting for messages it
will never send, or running tags it will never see. So a stop is a request
to the RTI, which asks every federate for the earliest tag it can still
stop at (its reply), and grants the latest of those: every federate runs its
shutdown reactions at that one tag (reactor-c's stop protocol, split out as
reactor-uc splits its shutdown coordinator). One stop per federation: once
one is being agreed, further requests change nothing.

Leaving: peers are told (RESIGN) before the RTI, so that centralized, our
last payloads are in their sockets before the RTI hears we are done; then
every socket and the data plane close, and the socket file of an RTI that
died is removed by the federates that outlive it.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from hprm_core import transport
from hprm_core.scheduler import Scheduler
from hprm_core.tag import FOREVER, Tag
from hprm_core.transport import Frame, pack_tag

if TYPE_CHECKING:
    from hprm_core.federation import FederateCoordinator


class ShutdownCoordinator:
    """The stop agreement and the leave of one federate (its coordinator's)."""

    def __init__(self, coordinator: FederateCoordinator) -> None:
        self.c = coordinator
        #: replied to a stop request at this tag, not granted yet: do not pass it
        self.pending: Tag | None = None
        self.agreed = False  # the RTI granted a stop tag: it is final

    def request(self, sched: Scheduler, tag: Tag) -> Tag:
        """Our scheduler wants to stop at ``tag``: the tag to stop at now
        (FOREVER: wait for the RTI's grant)."""
        c = self.c
        if c.failure is not None or c.rti is None:
            return tag
        with sched.lock:
            # A reaction failing at every tag until the stop, say, must not ask again.
            if self.agreed or self.pending is not None:
                return FOREVER
            self.pending = tag
        c.outbox.add(Frame.STOP_REQUEST, pack_tag(tag.time, tag.microstep))
        if not c.outbox.flush():  # nobody left to agree with: stop here
            c.fail("lost the RTI")
            return tag
        return FOREVER

    def on_request(self, sched: Scheduler, proposed: Tag) -> None:
        """The RTI asks for the earliest tag we can stop at (scheduler thread)."""
        with sched.lock:
            # sched.tag is the tag in progress or last processed; waking the
            # scheduler makes it re-check before it advances past the reply.
            reply = max(proposed, sched.tag.delay(0))
            if self.pending is None or reply < self.pending:
                self.pending = reply
            reply = self.pending
            sched.wake()
        self.c.outbox.add(Frame.STOP_REPLY, pack_tag(reply.time, reply.microstep))
        self.c.outbox.flush()

    def on_granted(self, sched: Scheduler, tag: Tag) -> None:
        with sched.lock:
            sched.stop_tag = min(sched.stop_tag, tag)
            self.pending = None
            self.agreed = True
            sched.wake()

    def resign(self) -> None:
        """Tell peers, then the RTI, that we are done (after a clean run)."""
        c = self.c
        if c.rti is None or c.failure is not None:
            return
        c.resigned = True  # before sending: the RTI may close right after
        for conn in c.peers.values():
            with contextlib.suppress(OSError):
                conn.send(Frame.RESIGN)
            if c.centralized:  # our last payloads leave before the RTI hears we are done
                conn.close()
        c.outbox.add(Frame.RESIGN)
        c.outbox.flush()

    def close(self) -> None:
        c = self.c
        if c.data_plane is not None:
            # After a clean run, what we sent must still reach receivers busy elsewhere.
            c.data_plane.close(hand_over=c.failure is None)
            c.data_plane = None
        for conn in c.peers.values():
            conn.close()
        rti = c.rti
        if rti is not None:
            rti.close()
        if c.peer_listener is not None:
            transport.close_listener(c.peer_listener)
            c.peer_listener = None
        if c.rti_lost and c.rti_address.startswith("unix:"):
            # A killed RTI leaves its socket file; the federates leaving after it remove it.
            transport.remove_stale_socket(c.rti_address[5:])
