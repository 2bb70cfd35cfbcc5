"""A federate's coordinator: the scheduler's link to the rest of its federation.

Each top-level reactor of a federated program (typically one ported ROS 2
node) runs as its own process, with its own scheduler; this coordinator
decides when that scheduler may process a tag, sends what its network
outputs are set to, and delivers what arrives. How the federation is
described is :mod:`structure`, how a federate joins it :mod:`startup`, which
connections it has and how they run :mod:`links`; ``docs/architecture.md``
tells the whole story, including the path of one message.

- ``"centralized"`` (default): tag g is processed once the RTI granted it
  (TAG), or provisionally (PTAG) inside a zero-delay cycle, where inputs are
  resolved present or absent one by one: one global tag order for the
  whole federation.
- ``"decentralized"``: tag g is processed once physical time reaches
  g + ``stp_offset``; a message for a tag already processed is tardy and
  runs the reaction's ``stp_violation`` handler (never silently reordered).

Either way a federate whose every input already holds a message at or after
g may process g at once (reactor-c's "last known status"). In centralized
coordination, a federate that can only ever hear answers to its own messages
(``grants.self_paced``) grants itself g once the RTI has granted past its
last message, without asking. What it promises the RTI (its NETs, capped
by physical actions) is :mod:`net_promise`; the frames it owes the RTI
leave through :mod:`rti_outbox`; what reaches it is read by :mod:`inbound`.
This module is compiled
(:mod:`compiled`): it is on every message's path.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from hprm_core import quiescence
from hprm_core.causality import Wait
from hprm_core.data_plane import DataPlane
from hprm_core.environment import Environment
from hprm_core.errors import AssemblyError, FederationError, HprmError
from hprm_core.inbound import Inbound
from hprm_core.links import FederateLinks
from hprm_core.net_promise import PHYSICAL_NET_POLL_S, NetPromise
from hprm_core.reactor import LogicalAction, PhysicalAction, Port, Timer
from hprm_core.rti_outbox import RtiOutbox
from hprm_core.scheduler import Scheduler
from hprm_core.shutdown import ShutdownCoordinator
from hprm_core.startup import StartupCoordinator
from hprm_core.structure import FederatedProgram, FederateInfo, NetConnection
from hprm_core.tag import FOREVER, NEVER, Tag, delayed
from hprm_core.transport import ROUTE, Connection, Frame, pack_tag

log = logging.getLogger("hprm.federation")

RTI_WAIT_S = 10.0  # how long a federate waits for its RTI to come up (launch order)
#: how long a decentralized federate is idle before it tells the RTI (see
#: _report_idle): not between two messages of a stream, only once things calm down
IDLE_REPORT_S = 0.05


_MESSAGE = Frame.MESSAGE  # a module constant: no Enum lookup per message


class FederateCoordinator:
    """The scheduler's :class:`~hprm_core.coordinator.Coordinator` inside one federate."""

    def __init__(
        self,
        program: FederatedProgram,
        me: FederateInfo,
        *,
        rti: str,
        secret: bytes,
        federation: str,
        stp_offset: int = 0,
        listen_dir: str | None = None,
        rti_wait: float = RTI_WAIT_S,
    ) -> None:
        self.program = program
        self.rti_wait = rti_wait
        self.me = me
        self.rti_address = rti
        self.secret = secret
        self.federation = federation
        self.stp = stp_offset
        self.listen_dir = listen_dir
        self.centralized = program.coordination == "centralized"
        self.sched: Scheduler | None = None
        self.granted: Tag = NEVER  # TAG: everything <= granted is known
        self.provisional: Tag = NEVER  # PTAG
        self.shutdown = ShutdownCoordinator(self)
        self.inbound = Inbound(self)  # reads the RTI's and the peers' sockets
        self.failure: str | None = None
        links = FederateLinks(program, me, rti)
        self.links = links
        self.in_ports: dict[int, NetConnection] = links.in_ports
        self.out_conns: list[NetConnection] = links.out_conns
        self.absent_tags: dict[int, Tag] = {}  # port id -> latest tag known absent
        self.known_tags: dict[int, Tag] = {}  # port id -> tag of the latest message on it
        self.waited = [cid for cid, c in self.in_ports.items() if c.wait]  # see _may_process
        self.unwaited = len(self.waited) < len(self.in_ports)
        self.peers: dict[int, Connection] = {}  # downstream federate -> peer-to-peer conn
        self.outbox = RtiOutbox(me.name, self.centralized, self.peers)
        self.promise = NetPromise(self.outbox)
        self.upstream_feds = links.upstream_feds
        self.p2p_upstream = links.p2p_upstream  # payloads peer to peer (see links.py)
        self.p2p_downstream = links.p2p_downstream
        self.unsettled_grant = False  # a grant arrived; peer sockets not drained since
        self.peers_missing = len(self.p2p_upstream)  # upstream peers not connected yet
        self._woke_peers = False  # this tag sent a payload peer to peer
        self.upstream_done: set[int] = set()
        self.upstream_conns: dict[int, Connection] = {}  # upstream federate -> its peer conn
        self._idle_reported: bytes | None = None  # last IDLE report (decentralized)
        self._idle_step = -1  # scheduler step when we last found nothing to do
        self._idle_since = 0.0
        self.quiescent = False  # the RTI found that nothing can happen any more
        self.peer_listener: socket.socket | None = None
        self.rti_lost = False
        self._needs_absent_out: list[NetConnection] = links.needs_absent_out
        self.waits: list[Wait] = []  # set by wire()
        self.resigned = False
        self.gone: set[int] = set()  # peers whose connection closed
        self.data_plane: DataPlane | None = None
        self.reactive = False  # no running timer, no action (wire, timer_started; self_paced)
        self.self_paced = False  # the RTI says so at START (grants.self_paced)
        self._sent_upto: Tag = NEVER  # the latest tag a message we sent lands at
        self.self_granted = 0  # tags it granted itself (self_paced)
        self._gate_template: list[tuple[int, Port, int]] = []  # set by wire()
        self._writers: dict[int, int] = {}
        self._sent_step: dict[int, int] = {}

    @property
    def rti(self) -> Connection | None:
        """The connection to the RTI (None until joined): the outbox's, which writes to it."""
        return self.outbox.rti

    # -- wiring ---------------------------------------------------------------------

    def wire(self, env: Environment) -> None:
        """Attach senders to network outputs; record readers of network inputs."""
        physical = [t for t in env.triggers if isinstance(t, PhysicalAction)]
        # A timer cancelled before the start (a spare one, say: a ported node keeps
        # some for timers its callbacks create) can only be started by a reaction,
        # which tells the RTI then (timer_started).
        self.reactive = not any(
            isinstance(t, (LogicalAction, PhysicalAction))
            or (isinstance(t, Timer) and not t.cancelled)
            for t in env.triggers
        )
        if physical and self.centralized and self.out_conns:
            self.promise.physical_lead = min(a.min_delay for a in physical)
            env.scheduler.idle_poll = PHYSICAL_NET_POLL_S
        self.links.analyse(env)
        for port, conns, last in self.links.senders:
            port.tap(self._sender(conns, last))
        self._gate_template = self.links.gate_template
        self._writers = self.links.writers
        self.waits = self.links.waits

    def _sender(
        self, conns: list[NetConnection], last_of_reaction: bool
    ) -> Callable[[Port, Any], None]:
        first = conns[0]
        if any(
            (c.threshold, c.serialization) != (first.threshold, first.serialization) for c in conns
        ):
            raise AssemblyError(
                f"{first.src_name}: connections from one port must share threshold and "
                "serialization"
            )
        receivers = [c.dst_fed for c in conns]

        def send(port: Port, value: Any) -> None:
            sched = self.sched
            assert sched is not None and self.data_plane is not None
            try:
                parts = self.data_plane.encode(
                    value, receivers, first.threshold, first.serialization
                )
            except HprmError as exc:
                raise FederationError(
                    f"{port.fqn}: cannot send value at tag {sched.tag.elapsed(sched.start_time)}: "
                    f"{exc}"
                ) from exc
            for c in conns:
                t = delayed(sched.tag, c.delay)
                if t > self._sent_upto:
                    self._sent_upto = t
                head = ROUTE.pack(t[0], t[1], c.dst_fed, c.id)
                if not c.peer_to_peer:
                    self.outbox.add(_MESSAGE, head, *parts)
                    continue
                if self.centralized:  # the RTI learns of it after the payload left
                    self.outbox.add(Frame.NOTICE, head)
                conn = self.peers.get(c.dst_fed)
                if conn is None:
                    raise FederationError(f"{self.me.name}: no connection to federate {c.dst_fed}")
                try:
                    conn.send(_MESSAGE, head, *parts)
                    self._woke_peers = True
                except OSError as exc:
                    # The peer finished (or died: the RTI reports that). Its
                    # inputs are no longer read, so the message has no receiver.
                    if c.dst_fed not in self.gone:
                        self.gone.add(c.dst_fed)
                        log.warning(
                            "%s: federate %s closed its connection (%s); dropping messages to it",
                            self.me.name,
                            self.program.federates[c.dst_fed].name,
                            exc,
                        )
            for c in conns:
                if c.needs_absent:
                    self._sent_step[c.id] = sched.step
            if last_of_reaction and self._woke_peers and not sched.has_ready_reactions():
                # Nothing else is queued at this tag and this reaction sends
                # nothing more: the receivers need not wait for it to return.
                self._yield_to_receivers(sched)

        return send

    # -- Coordinator protocol ----------------------------------------------------------

    def start_time(self, physical_now: int) -> int:
        """Join the federation (see :mod:`hprm_core.startup`); its start time."""
        if self.sched is None:
            raise FederationError("coordinator used before attach()")
        start = StartupCoordinator(self).join(physical_now)
        # what federates upstream send at startup counts as an answer (_answered)
        self._sent_upto = Tag(start, 0)
        return start

    def advance_to(self, sched: Scheduler, tag: Tag) -> bool:
        with sched.lock:
            while True:
                if self.failure is not None:
                    return True  # stop locally; run() raises afterwards
                if self.peers_missing and self.centralized:
                    # A grant says every message up to it was sent, not that
                    # it reached us: until every upstream peer is connected
                    # (right after START), a payload may sit in a socket we
                    # do not watch yet.
                    self.outbox.flush()
                    sched.wait(None)
                    continue
                if self.unsettled_grant:
                    self._settle_peers(sched)
                if sched.has_news():
                    return False
                pending = self.shutdown.pending
                if pending is not None and tag > pending:
                    self.outbox.flush()  # a stop request or reply may wait there (rti_outbox)
                    sched.wait(None)
                    continue
                if self._may_process(sched, tag):
                    if self.provisional == tag and self.granted < tag:
                        sched.gate[:] = list(self._gate_template)
                    else:
                        sched.gate.clear()
                    if self.outbox.batch and not sched.fast and tag.time > sched.physical_time():
                        # About to sleep until the tag: what we promised (our
                        # NET) must reach the RTI now, or federates downstream
                        # wait for our next tag to complete before they may
                        # process their own events.
                        self.outbox.flush()
                    return True
                self._wait(sched, tag)

    def _may_process(self, sched: Scheduler, tag: Tag) -> bool:
        if not self.upstream_feds:
            if self.centralized:
                self.promise.send(sched, tag)
            return True
        # Messages on one connection arrive in tag order, and a connection
        # carries at most one message per tag, so a message tagged t settles
        # that input for every tag <= t: when every input is settled for this
        # tag there is nothing left to wait for (reactor-c's "last known
        # status"), in either coordination. It is what lets a message that
        # came peer to peer be processed without waiting for the RTI's grant.
        known = self.known_tags
        if self.unwaited:  # Input(wait=False) ports settle nothing
            if all(known.get(cid, NEVER) >= tag for cid in self.waited):
                return True
        elif len(known) == len(self.in_ports) and min(known.values()) >= tag:
            return True
        if self.centralized:
            if tag <= self.granted or tag == self.provisional:
                return True
            if self.self_paced and self._answered(sched, tag):
                self.self_granted += 1
                return True
            self.promise.send(sched, tag)
            return False
        if tag >= FOREVER:
            return self.quiescent or self.upstream_done >= self.upstream_feds
        if self.upstream_done >= self.upstream_feds:
            return True  # every upstream federate has left: no message can come
        if sched.physical_time() < tag.time + self.stp:
            return False
        # Physical time says go; but a federate late from a long reaction has not
        # read its sockets since, and what came meanwhile was on time: read it
        # first (it may hold an earlier tag), or it turns tardy, or is lost at stop.
        sched.read_ready()
        return not sched.has_news()

    def _answered(self, sched: Scheduler, tag: Tag) -> bool:
        """A self-paced federate (``grants.self_paced``): may it grant itself
        ``tag``? Whatever can still reach it answers a message it sent, at that
        message's logical time; the RTI granted past the time of the last one,
        so every answer is in. Not at the stop tag (the federates upstream may
        send at their shutdown) nor while a stop is being agreed on. No NET is
        sent: the LTC that follows says more, and a grant answering it would
        only wake us while we wait for the answers to this tag."""
        return (
            self.granted.time > self._sent_upto.time
            and tag < sched.stop_tag
            and self.shutdown.pending is None
        )

    def _settle_peers(self, sched: Scheduler) -> None:
        """Read every payload already queued on our peer sockets before a new
        grant is used (centralized, one host). A grant for tag g means every
        message tagged <= g was sent; one sent peer to peer was written into
        our socket before its sender even told the RTI about it, so it is in
        the kernel now, but maybe not yet read: non-blocking passes over the
        ready sockets until none is left read it. Called with ``_lock`` held."""
        self.unsettled_grant = False
        sched.read_ready()

    def _wait(self, sched: Scheduler, tag: Tag) -> None:
        if self.data_plane is not None:
            self.data_plane.send_releases()
        timeout = sched.idle_poll
        if tag >= FOREVER and not self.centralized and not sched.keepalive:
            timeout = self._idle(sched)
        self.outbox.flush()
        if self.centralized or tag >= FOREVER:
            sched.wait(timeout, exact=False)  # a check-in (idle_poll, _idle), not a tag's time
        else:
            remaining = tag.time + self.stp - sched.physical_time()
            sched.wait(max(remaining, 0) / 1e9)

    def _idle(self, sched: Scheduler) -> float | None:
        """Decentralized, nothing to do: report it once it has lasted
        ``IDLE_REPORT_S`` (a receiver between two messages of a stream is
        idle too, and must not write to the RTI for each one). Returns how
        long to wait before looking again."""
        now = time.monotonic()
        if self._idle_step != sched.step:  # a tag was processed since we last got here
            self._idle_step, self._idle_since = sched.step, now
        left = self._idle_since + IDLE_REPORT_S - now
        if left > 0:
            return left
        self._report_idle()
        return sched.idle_poll

    def _report_idle(self) -> None:
        """Decentralized: tell the RTI we have nothing left to do (see
        :mod:`hprm_core.quiescence`). Only a change is reported."""
        report = quiescence.idle_report(
            {k: c.bytes_sent for k, c in self.peers.items()},
            {
                k: (c.bytes_received, k in self.upstream_done)
                for k, c in self.upstream_conns.items()
            },
        )
        if report != self._idle_reported:
            self._idle_reported = report
            self.outbox.add(Frame.IDLE, report)

    def bytes_sent(self) -> int:
        """Bytes this federate wrote to its RTI and peer sockets (frames)."""
        conns = [self.rti, *self.peers.values()]
        return sum(c.bytes_sent for c in conns if c is not None) + len(self.outbox.batch)

    def alloc_array(self, shape: Any, dtype: Any) -> Any:
        """:meth:`Reactor.alloc_array` inside a federate."""
        store = self.data_plane.local_store() if self.data_plane is not None else None
        if store is None:
            import numpy as np

            return np.empty(shape, dtype)
        return store.alloc_array(shape, dtype)

    def resolve_inputs(self, sched: Scheduler, next_index: int | None) -> None:
        gate = sched.gate
        tag = sched.tag
        with sched.lock:
            while gate and (next_index is None or gate[0][0] <= next_index):
                self._send_absents(sched, next_index)
                _, port, cid = gate[0]
                if self._input_known(sched, port, cid, tag):
                    gate.pop(0)
                    continue
                if self.failure is not None:
                    gate.clear()
                    return
                self.outbox.flush()
                sched.wait(None)

    def _input_known(self, sched: Scheduler, port: Port, cid: int, tag: Tag) -> bool:
        if port._step == sched.step or self.granted >= tag:
            return True
        # Absent when announced so, or when a later message already came on
        # that connection (messages on one connection arrive in tag order).
        return self.absent_tags.get(cid, NEVER) >= tag or self.known_tags.get(cid, NEVER) > tag

    def _send_absents(self, sched: Scheduler, next_index: int | None) -> None:
        """Tell downstream which outputs will stay absent at this tag, as soon as
        no reaction that could still run (queued, or triggered by a network input
        not yet known) can write them: that is what lets a zero-delay cycle
        across federates make progress."""
        horizon = sys.maxsize
        if next_index is not None:
            horizon = next_index
        if sched.gate:
            horizon = min(horizon, sched.gate[0][0])
        for c in self._needs_absent_out:
            if self._sent_step.get(c.id) == sched.step:
                continue
            if self._writers[c.id] >= horizon:
                continue  # a reaction that may still write it has not run yet
            self._sent_step[c.id] = sched.step
            t = delayed(sched.tag, c.delay)
            if t > self._sent_upto:  # its receiver may answer it too (_answered)
                self._sent_upto = t
            self.outbox.add(Frame.ABSENT, ROUTE.pack(t.time, t.microstep, c.dst_fed, c.id))

    def _yield_to_receivers(self, sched: Scheduler) -> None:
        """Hand the CPU to the receivers we woke, as soon as we know we are
        done sending. Linux wakes a socket reader on the writer's CPU,
        expecting the writer to sleep soon, so the receiver waits out
        everything we still do before sleeping (the rest of the reaction,
        coordination, arming the next timeout): 30-40% of a message's one-way
        latency on a small VM. Only when we are idle until our next tag: when
        behind schedule, extra context switches would cost throughput."""
        self._woke_peers = False
        if not sched.fast and sched.next_event_tag().time > sched.physical_time():
            os.sched_yield()

    def tag_complete(self, sched: Scheduler, tag: Tag) -> None:
        if self._woke_peers:  # not yielded right after sending (see _sender)
            self._yield_to_receivers(sched)
        if self.data_plane is not None:
            self.data_plane.send_releases()
        if self.failure is not None or self.rti is None:
            return
        if self._needs_absent_out:
            self._send_absents(sched, None)
        if self.centralized:
            self.outbox.add(Frame.LTC, pack_tag(tag.time, tag.microstep))
            if tag < sched.stop_tag:  # the next NET leaves in the same write
                if self.promise.physical_lead is None:
                    self._promise_next(sched)
                else:
                    # What other threads queued meanwhile first, under the lock
                    # their stamps are read under: the NET never passes it.
                    with sched.lock:
                        sched.drain_inbox()
                        self._promise_next(sched)
        self.outbox.flush()

    def _promise_next(self, sched: Scheduler) -> None:
        nxt = sched.next_event_tag()
        self.promise.send(sched, nxt if nxt < sched.stop_tag else sched.stop_tag)

    def stop_requested(self, sched: Scheduler, tag: Tag) -> Tag:
        return self.shutdown.request(sched, tag)

    def timer_started(self, sched: Scheduler) -> None:
        """Reactive no more: federates that counted on our only ever answering
        (``grants.self_paced``) must ask for their grants again. The RTI hears it
        before our LTC of this tag (same outbox, in order), so before it can grant
        them past the message that caused this: they get its PACE_OFF first."""
        if not self.reactive:
            return
        self.reactive = False
        if self.centralized and self.rti is not None:
            self.outbox.add(Frame.ACTS_ALONE)

    def finish(self, sched: Scheduler) -> None:
        self.shutdown.resign()
        self.close()

    def close(self) -> None:
        self.shutdown.close()

    # -- failing -------------------------------------------------------------------------

    def fail(self, reason: str) -> None:
        sched = self.sched
        assert sched is not None
        with sched.lock:
            if self.failure is None:
                self.failure = reason
                log.error("%s: %s", self.me.name, reason)
            sched.request_stop()
            sched.notify()
