"""The RTI (runtime infrastructure): starts, coordinates and stops a federation.

It never imports the user's program: federates describe the federation's
structure in their hello (all of them must describe the same one). Its jobs:

- **Startup**: wait for every federate to connect and authenticate, then send
  each one the common start time (the latest federate clock plus a start
  delay) and, for decentralized coordination, its peers' addresses.
- **Tag advance grants** (centralized): from each federate's next event tag
  (NET) and latest tag complete (LTC), compute for every federate the earliest
  tag at which a message could still reach it (EIMT), through the connection
  graph with its ``after`` delays. ``NET < EIMT`` earns a TAG (nothing at or
  before NET can arrive any more); ``NET == EIMT`` on a zero-delay cycle
  earns a PTAG (process, but wait for network inputs to be known). Across
  hosts and in zero-delay cycles, centralized messages are routed through the
  RTI and forwarded before any grant that depends on them, on the same
  socket, so they arrive first. On one host they go peer to peer and the RTI
  gets a NOTICE (tag and destination) instead: its accounting of messages in
  transit, which keeps grants from overtaking them, is the same either way.
- **Stop**: a stop request from any federate is relayed to all; each replies
  with the earliest tag it can still stop at; the latest of those is granted.
- **Failure**: a federate whose connection drops without resigning has died:
  every other federate is told (FAILED, naming it) and stops cleanly.
- **Quiescence** (decentralized): federates that feed each other in a cycle
  never see their upstream resign. Each reports when it is idle, with the
  bytes it sent and read on each peer link; when every live federate is idle
  and every link's counts agree (nothing in flight), nothing can ever happen
  again, and every federate is told to finish (QUIESCENT).
"""

from __future__ import annotations

import contextlib
import heapq
import json
import logging
import os
import select
import socket
import stat
import threading
import time
from typing import Any

from hprm_core import clock_sync, quiescence, transport
from hprm_core.assembly import Assembly
from hprm_core.causality import find_loop
from hprm_core.errors import AssemblyError
from hprm_core.gatekeeper import Gatekeeper
from hprm_core.grants import decide, self_paced
from hprm_core.rti_federate import Federate
from hprm_core.tag import Tag, duration, make_tag
from hprm_core.transport import ROUTE, Connection, Frame, unpack_tag

log = logging.getLogger("hprm.rti")

DEFAULT_START_DELAY = duration("250 ms")
JOIN_TIMEOUT_S = 60.0
#: how long a closing RTI waits for federates it sent last words to to hang up
LINGER_S = 1.0


_MESSAGE, _ABSENT, _NOTICE = Frame.MESSAGE, Frame.ABSENT, Frame.NOTICE
_LTC, _NET = Frame.LTC, Frame.NET


class RTI:
    """One federation's RTI. ``serve()`` returns 0 when every federate resigned
    cleanly, 1 when one failed."""

    def __init__(
        self,
        address: str,
        *,
        federates: int | list[str],
        secret: bytes,
        federation: str,
        start_delay: int = DEFAULT_START_DELAY,
        coordination: str = "centralized",
        after: dict[str, int] | None = None,
        break_cycles: bool = False,
    ) -> None:
        # A count: every federate brings the structure (one program file). Names:
        # federates started on their own describe themselves first (assembly.py).
        self.assembly: Assembly | None = None
        if isinstance(federates, list):
            self.assembly = Assembly(
                federates, coordination=coordination, after=after, break_cycles=break_cycles
            )
            federates = len(federates)
        self.expected = federates
        self.secret = secret
        self.federation = federation
        self.start_delay = start_delay
        self.listener, self.address = transport.listen(address)
        self._gate = Gatekeeper(
            self.listener, secret, self._check_hello, self._admitted, name="rti"
        )
        self.feds: dict[int, Federate] = {}
        self.structure: dict[str, Any] | None = None
        self.lock = threading.RLock()
        self.all_joined = threading.Event()
        self.done = threading.Event()
        self.exit_code = 0
        self.failure: str | None = None  # the first federate failure, once broadcast
        self.stop_proposal: Tag | None = None
        self.coordination = "centralized"
        self.started = False
        self.quiescent = False
        self._epoll = select.epoll()
        self._by_fd: dict[int, Federate] = {}  # registered federate sockets
        self._wakefd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._joining: list[tuple[Connection, dict[str, Any]]] = []
        self._dirty: set[int] = set()  # federates with queued frames
        # NETs, LTCs or messages arrived since grants were last computed: they
        # are computed once per read, not once per frame (a federate's tag
        # usually brings a message, its LTC and its next NET in one write).
        self._stale = False

    # -- joining ----------------------------------------------------------------------

    def _check_hello(self, hello: dict[str, Any]) -> str | None:
        if hello.get("federation") != self.federation:
            return "this RTI serves another federation"
        if "describe" in hello:
            if self.assembly is None:
                return (
                    "this RTI was given a number of federates, so each must bring the "
                    "federation's structure; start it with --federates NAME,NAME,... for "
                    "federates that describe themselves"
                )
            with self.lock:
                return self.assembly.check(hello)
        fid = hello.get("federate")
        if not isinstance(fid, int) or not 0 <= fid < self.expected:
            return f"federate id {fid!r} out of range (federation has {self.expected})"
        with self.lock:
            if fid in self.feds:
                return f"federate {fid} ({hello.get('name')}) is already connected"
            structure = hello.get("structure")
            if self.assembly is not None and self.structure is None:
                return "joined before every federate described itself"
            if self.structure is None:
                if (
                    not isinstance(structure, dict)
                    or len(structure.get("federates", ())) != self.expected
                ):
                    return "hello describes a different number of federates"
                self.structure = structure
                self.coordination = structure.get("coordination", "centralized")
            elif structure != self.structure:
                return "hello describes a different federation structure (another program version?)"
        return None

    def _admitted(self, conn: Connection, hello: dict[str, Any]) -> None:
        """From a handshake thread (the gatekeeper's): hand over to the main
        loop, which a slow or hostile peer therefore never stalls."""
        with self.lock:
            self._joining.append((conn, hello))
        os.eventfd_write(self._wakefd, 1)

    def _describe(self, conn: Connection, hello: dict[str, Any]) -> None:
        assert self.assembly is not None
        try:
            graph = self.assembly.add(conn, hello)
        except AssemblyError as exc:
            reason = f"cannot assemble the federation: {exc}"
            log.error("%s", reason)
            self.failure = reason
            self.exit_code = 1
            self.assembly.fail(reason)
            self.done.set()
            return
        if graph is not None:
            with self.lock:  # as the federates' hellos will carry it (through JSON)
                self.structure = json.loads(json.dumps(graph.describe()))
                self.coordination = graph.coordination
            # Only now: a federate joins as soon as it has the graph, and its hello
            # is checked against the structure (in a handshake thread).
            self.assembly.answer()

    def _register(self, conn: Connection, hello: dict[str, Any]) -> None:
        if "describe" in hello:
            self._describe(conn, hello)
            return
        fid = hello["federate"]
        assert self.structure is not None
        desc = self.structure["federates"][fid]
        if self.all_joined.is_set() or fid in self.feds:
            # Two handshakes for one federate raced past _check_hello.
            why = "federation already started" if self.all_joined.is_set() else "already joined"
            conn.send(Frame.REJECT, f"federate {fid} ({desc['name']}): {why}".encode())
            conn.close()
            return
        fed = Federate.joining(fid, desc, conn, hello)
        with self.lock:
            self.feds[fid] = fed
        self._by_fd[conn.sock.fileno()] = fed
        self._epoll.register(conn.sock.fileno(), select.EPOLLIN)
        log.info("federate %d (%s) joined (%d/%d)", fid, fed.name, len(self.feds), self.expected)
        if len(self.feds) == self.expected:
            for f in self.feds.values():
                for k, _ in f.upstream:
                    self.feds[k].downstream.add(f.id)
            self.all_joined.set()
            loop = find_loop([w for f in self.feds.values() for w in f.waits])
            if loop is not None:
                log.error("%s", loop)
                self.failure = loop
                self.exit_code = 1
                self._broadcast_failure(loop)
                self.done.set()
                return
            self._maybe_start()
        if conn.has_buffered_frame():
            self._on_readable(fed)

    # -- main loop ----------------------------------------------------------------------

    def serve(self) -> int:
        """One thread reads every federate's socket through a selector: frames are
        handled in arrival order with no locks and no thread hand-offs on the
        coordination path (handshakes run in threads of their own)."""
        ep = self._epoll
        wake_fd = self._wakefd
        ep.register(wake_fd, select.EPOLLIN)
        self._gate.start()
        by_fd = self._by_fd
        join_deadline = time.monotonic() + JOIN_TIMEOUT_S
        while not self.done.is_set():
            if not self.all_joined.is_set() and time.monotonic() > join_deadline:
                log.error(
                    "only %d of %d federates joined within %.0f s",
                    len(self.feds),
                    self.expected,
                    JOIN_TIMEOUT_S,
                )
                self._broadcast_failure("not every federate joined in time")
                if self.assembly is not None and self.assembly.missing():
                    missing = ", ".join(self.assembly.missing())
                    log.error("never described themselves: %s", missing)
                    self.assembly.fail(f"federate(s) {missing} never described themselves")
                self.exit_code = 1
                break
            for fd, events in ep.poll(1.0):
                fed = by_fd.get(fd)
                if fed is not None:
                    if events & select.EPOLLOUT:
                        self._flush(fed)
                    if events & (select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR):
                        self._on_readable(fed)
                elif fd == wake_fd:
                    with contextlib.suppress(BlockingIOError):
                        os.eventfd_read(self._wakefd)
                    with self.lock:
                        joining, self._joining = self._joining, []
                    for conn, hello in joining:
                        self._register(conn, hello)
                if self._stale:
                    self._evaluate()
                self._flush_dirty()
        self.close()
        return self.exit_code

    def close(self) -> None:
        self.done.set()
        self._gate.close()
        if self.assembly is not None:
            self.assembly.fail("the RTI stopped before every federate described itself")
        lingering = []
        for f in self.feds.values():
            if f.outbox and not f.conn.closed and _last_words(f.conn, f.outbox):
                lingering.append(f)
            else:
                f.conn.close()
        _await_hang_up([f.conn for f in lingering], LINGER_S)
        for f in lingering:
            f.conn.close()
        self._epoll.close()
        with contextlib.suppress(OSError):
            os.close(self._wakefd)

    def _maybe_start(self) -> None:
        """Once every federate joined and synchronized its clock: send START.

        The start time is on the RTI's clock (federates across hosts have
        measured their offset to it; on one host all share the system clock), a
        start delay ahead so every federate receives it before it is due."""
        if self.started or len(self.feds) < self.expected:
            return
        if not all(f.ready for f in self.feds.values()):
            return
        self.started = True
        start = time.time_ns() + self.start_delay
        peers = {str(f.id): f.listen for f in self.feds.values()}
        start_body: dict[str, Any] = {"start_time": start, "peers": peers}
        if self.coordination == "centralized":
            start_body["self_paced"] = self_paced(self.feds)
        body = json.dumps(start_body).encode()
        for f in self.feds.values():
            f.net = Tag(start, 0)
            self._send(f, Frame.START, body)
        log.info("federation started (%s coordination)", self.coordination)

    def _on_readable(self, fed: Federate) -> None:
        conn = fed.conn
        try:
            while True:
                kind, payload = conn.recv()
                if kind == Frame.RESIGN:
                    fed.resigned = True
                    self._drop(fed)
                    self._evaluate()
                    self._check_quiescent()
                    self._check_done()
                    return
                self._handle(fed, kind, payload)
                if not conn.has_buffered_frame():
                    return
        except (EOFError, OSError, transport.ProtocolError) as exc:
            if fed.resigned or self.done.is_set():
                return
            fed.failed = True
            self._drop(fed)
            self._remove_sockets(fed)
            if self.failure is not None:
                # Told of an earlier failure, it stopped: no news, no second broadcast.
                log.info("federate %s (id %d) stopped after: %s", fed.name, fed.id, self.failure)
            else:
                self.exit_code = 1
                why = (
                    f"its connection closed without resigning (process died?): {exc}"
                    if isinstance(exc, EOFError | OSError)
                    else str(exc)
                )
                self.failure = f"federate {fed.name} (id {fed.id}) failed: {why}"
                log.error("%s", self.failure)
                self._broadcast_failure(self.failure)
            self._evaluate()
            self._check_done()

    @staticmethod
    def _remove_sockets(fed: Federate) -> None:
        """A federate that died cannot remove its socket files (it named them
        in its hello): the RTI does, so a SIGKILL leaves nothing in a
        hand-given ``--listen-dir``. Sockets only, never another kind of file."""
        for path in fed.sockets:
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    os.unlink(path)

    def _drop(self, fed: Federate) -> None:
        fd = fed.conn.sock.fileno()
        if self._by_fd.pop(fd, None) is not None:
            with contextlib.suppress(OSError, ValueError):
                self._epoll.unregister(fd)
        fed.conn.close()

    def _broadcast_failure(self, reason: str) -> None:
        for f in list(self.feds.values()):
            if not (f.resigned or f.failed):
                self._send(f, Frame.FAILED, reason.encode())

    def _check_done(self) -> None:
        if self.all_joined.is_set() and all(f.resigned or f.failed for f in self.feds.values()):
            self.done.set()

    # -- coordination ----------------------------------------------------------------------

    def _handle(self, fed: Federate, kind: Frame, payload: memoryview) -> None:
        """One frame from ``fed`` (the frequent kinds first: this is the RTI's hot path)."""
        if kind is _MESSAGE or kind is _ABSENT or kind is _NOTICE:
            t, m, dst, _cid = ROUTE.unpack_from(payload)
            target = self.feds.get(dst)
            if target is None:
                raise transport.ProtocolError(f"message for unknown federate {dst}")
            if not (target.resigned or target.failed):
                tag = make_tag((t, m))
                if kind is not _NOTICE:
                    self._send(target, kind, payload)
                elif tag <= target.ltc:
                    # The payload went peer to peer and its receiver already
                    # completed that tag (it had the message: last known status).
                    return
                heapq.heappush(target.in_transit, tag)
                if tag < target.net:
                    target.net = tag
                self._stale = True
        elif kind is _LTC:
            t = make_tag(unpack_tag(payload))
            if t > fed.ltc:
                fed.ltc = t
            while fed.in_transit and fed.in_transit[0] <= t:
                heapq.heappop(fed.in_transit)
            self._stale = True
        elif kind is _NET:
            # A NET may have been sent before the federate saw a message we
            # forwarded since: it still has that message's tag to process.
            net = make_tag(unpack_tag(payload))
            fed.net = min(net, fed.in_transit[0]) if fed.in_transit else net
            self._stale = True
        elif kind == Frame.STOP_REQUEST:
            proposal = Tag(*unpack_tag(payload))
            if self.stop_proposal is None:
                self.stop_proposal = proposal
                log.info("stop requested by %s at %s", fed.name, proposal)
                for f in self.feds.values():
                    f.stop_reply = None
                    if not (f.resigned or f.failed):
                        self._send(f, Frame.STOP_REQUEST, transport.pack_tag(*proposal))
                self._maybe_grant_stop()
        elif kind == Frame.STOP_REPLY:
            fed.stop_reply = Tag(*unpack_tag(payload))
            self._maybe_grant_stop()
        elif kind == Frame.CLOCK_QUERY:
            self._send(fed, Frame.CLOCK_REPLY, clock_sync.answer(payload))
        elif kind == Frame.IDLE:
            try:
                fed.idle = quiescence.parse_report(payload)
            except ValueError as exc:
                raise transport.ProtocolError(f"bad IDLE report from {fed.name}: {exc}") from None
            self._check_quiescent()
        elif kind == Frame.READY:
            fed.ready = True
            self._maybe_start()
        elif kind == Frame.ACTS_ALONE:
            self._unpace(fed)
        else:
            raise transport.ProtocolError(f"unexpected {kind.name} from {fed.name}")

    def _unpace(self, fed: Federate) -> None:
        """``fed`` started a timer: it may send unasked now. Whoever was self-paced
        on the strength of its only answering asks for every grant again, told
        before any grant this frame's successors (its LTC) allow."""
        if not (self.started and self.coordination == "centralized" and fed.reactive):
            fed.reactive = False  # (before START: START's list will leave it out)
            return  # nobody told to pace itself yet, or not on its account
        # Reactive flags only ever turn off: this is START's list less those told since.
        paced = set(self_paced(self.feds))
        fed.reactive = False
        for fid in sorted(paced - set(self_paced(self.feds))):
            target = self.feds[fid]
            log.info("%s may send on its own now: %s asks for every grant", fed.name,
                     target.name)  # fmt: skip
            if not (target.resigned or target.failed):
                self._send(target, Frame.PACE_OFF, b"")

    def _send(self, target: Federate, kind: Frame, payload: bytes | memoryview) -> None:
        """Queue a frame for a federate. Queues are written once per loop
        iteration (:meth:`_flush_dirty`): a forwarded message and the grant it
        enables leave in one write, so the receiver wakes once. Writes never
        block the loop: a federate that is busy (not reading) must not stall
        the others, and two parties both blocked sending would deadlock."""
        if target.conn.closed:
            return
        transport.append_frame(target.outbox, kind, payload)
        self._dirty.add(target.id)

    def _flush_dirty(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for fid in dirty:
            fed = self.feds[fid]
            if fed.writing:
                continue  # waiting for EVENT_WRITE already
            self._flush(fed)

    def _flush(self, fed: Federate) -> None:
        if fed.conn.closed:
            fed.outbox.clear()
            return
        try:
            sent = fed.conn.sock.send(fed.outbox, socket.MSG_DONTWAIT)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            log.debug("could not send to %s: %s", fed.name, exc)
            fed.outbox.clear()
            return  # it is gone; its own reader reports that
        del fed.outbox[:sent]
        want_write = bool(fed.outbox)
        if want_write != fed.writing:
            fed.writing = want_write
            events = select.EPOLLIN | (select.EPOLLOUT if want_write else 0)
            with contextlib.suppress(OSError, ValueError):
                self._epoll.modify(fed.conn.sock.fileno(), events)

    def _maybe_grant_stop(self) -> None:
        if self.stop_proposal is None:
            return
        live = [f for f in self.feds.values() if not (f.resigned or f.failed)]
        if any(f.stop_reply is None for f in live):
            return
        stop = max([self.stop_proposal] + [f.stop_reply for f in live if f.stop_reply is not None])
        log.info("stop granted at %s", stop)
        for f in live:
            self._send(f, Frame.STOP_GRANTED, transport.pack_tag(*stop))

    def _check_quiescent(self) -> None:
        """Decentralized: finish everyone once nothing can happen any more
        (see :mod:`hprm_core.quiescence`)."""
        if self.quiescent or self.coordination == "centralized" or not self.started:
            return
        if not quiescence.is_quiescent(self.feds):
            return
        self.quiescent = True
        log.info("federation quiescent: every federate idle, no message in flight")
        for f in self.feds.values():
            if not (f.resigned or f.failed):
                self._send(f, Frame.QUIESCENT, b"")

    def _evaluate(self) -> None:
        self._stale = False
        if self.coordination != "centralized" or not self.started:
            return
        owed, wanted = decide(self.feds)
        for fid, kind, g in owed:
            f = self.feds[fid]
            if kind == "TAG":
                f.granted = g
                self._send(f, Frame.TAG, transport.pack_tag(g.time, g.microstep))
            else:
                f.provisional = g
                self._send(f, Frame.PTAG, transport.pack_tag(g.time, g.microstep))
        for fid, w in wanted.items():
            f = self.feds[fid]
            # once per tag asked, and only of a federate whose NET is not past it yet
            if w != f.wanted and f.net <= w and not (f.resigned or f.failed):
                f.wanted = w
                self._send(f, Frame.WANTED, transport.pack_tag(w.time, w.microstep))


def _last_words(conn: Connection, outbox: bytes | bytearray) -> bool:
    """Send what is still queued for a federate (e.g. FAILED), best effort;
    True when it went out and the connection is half-closed, waiting for the
    federate to hang up: closing with the federate's unread frames (READY) in
    our buffer would reset a TCP connection and drop the last words before
    they are read."""
    try:
        conn.sock.settimeout(1.0)
        conn.sock.sendall(outbox)
        conn.sock.shutdown(socket.SHUT_WR)
    except OSError:
        return False
    return True


def _await_hang_up(conns: list[Connection], timeout: float) -> None:
    """Read and drop what each peer still sends until it closes (or the time is up)."""
    deadline = time.monotonic() + timeout
    poller = select.poll()
    by_fd = {c.sock.fileno(): c.sock for c in conns if not c.closed}
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    while by_fd:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        for fd, _ in poller.poll(left * 1000):
            try:
                if by_fd[fd].recv(65536, socket.MSG_DONTWAIT):
                    continue
            except BlockingIOError:
                continue
            except OSError:
                pass
            poller.unregister(fd)
            del by_fd[fd]
