"""How a federate joins its federation, up to the start tag.

Joining is a conversation that happens once, before the first tag, and
nothing in it is on the per-message path, so it lives apart from the
coordinator that then runs the federate (as reactor-uc splits its startup
coordinator from the rest):

1. start the data plane (the store channel other federates fetch our
   arenas and send releases through) and, when upstream federates will
   send peer to peer, a listener for them;
2. connect to the RTI (waiting for it to listen: a launch system may start
   it after us) with a hello carrying the federation's structure, our
   causality waits and our socket files;
3. across hosts, measure the clock offset to the RTI (:mod:`clock_sync`);
4. say READY, wait for START (or the RTI's FAILED: a causality loop, a
   federate that never came);
5. connect to the federates downstream of us that take payloads peer to peer,
   and ask the ones upstream for their shared-memory arenas (:mod:`data_plane`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from hprm_core import clock_sync, gatekeeper, transport
from hprm_core.data_plane import DataPlane
from hprm_core.errors import FederationError
from hprm_core.transport import Connection, Frame

if TYPE_CHECKING:
    from hprm_core.federation import FederateCoordinator

log = logging.getLogger("hprm.federation")


class StartupCoordinator:
    """Joins one federate (its :class:`~hprm_core.federation.FederateCoordinator`)."""

    def __init__(self, coordinator: FederateCoordinator) -> None:
        self.c = coordinator

    def join(self, physical_now: int) -> int:
        """Everything up to START; returns the federation's start time (ns)."""
        c = self.c
        sched = c.sched
        assert sched is not None
        hello: dict[str, Any] = {
            "federation": c.federation,
            "federate": c.me.id,
            "name": c.me.name,
            "coordination": c.program.coordination,
            "structure": c.program.describe(),
            "physical_time": physical_now,
            "pid": os.getpid(),
        }
        directory = c.listen_dir
        if directory is None and c.rti_address.startswith("unix:"):
            directory = os.path.dirname(c.rti_address[5:])
        if c.rti_address.startswith("tcp:"):
            directory = None  # across hosts: no shared memory, payloads are streamed
        c.data_plane = DataPlane(
            sched,
            c.me.id,
            c.me.name,
            secret=c.secret,
            federation=c.federation,
            directory=directory,
            peer_names={f.id: f.name for f in c.program.federates},
        )
        c.data_plane.start(sends=bool(c.out_conns))
        hello["listen"] = self._listen_for_peers() if c.p2p_upstream else None
        hello["waits"] = c.waits
        hello["physical"] = c.promise.physical_lead is not None  # its NET is capped (grants.wanted)
        hello["reactive"] = c.reactive  # it only ever answers (grants.self_paced)
        # Ours to remove on exit; the RTI's if this process dies (SIGKILL).
        hello["sockets"] = [
            p
            for p in (
                transport.socket_path(c.data_plane.listener),
                transport.socket_path(c.peer_listener),
            )
            if p is not None
        ]
        rti = c.outbox.rti = connect_rti(c.rti_address, c.secret, hello, c.rti_wait, c.me.name)
        start = self._await_start(rti)
        c.self_paced = c.me.id in start.get("self_paced", ())
        sched.add_reader(rti.sock, c.inbound.on_rti_readable)
        if rti.has_buffered_frame():  # arrived together with START
            c.inbound.on_rti_readable()
        for fid in sorted(c.p2p_downstream):
            self._connect_downstream(fid, start["peers"][str(fid)], hello)
        c.data_plane.prefetch(sorted(c.p2p_upstream))
        log.info(
            "%s joined federation %s (%s), start time %d",
            c.me.name,
            c.federation[:8],
            c.program.coordination,
            start["start_time"],
        )
        return int(start["start_time"])

    def _await_start(self, rti: Connection) -> dict[str, Any]:
        c = self.c
        try:
            if rti.is_tcp:
                self._sync_clock(rti)  # an RTI on this host shares its clock: no offset
            # If the RTI refused the federation and hung up, its FAILED is still to read.
            with contextlib.suppress(OSError):
                rti.send(Frame.READY)
            kind, payload = rti.recv()
        except (EOFError, OSError) as exc:
            raise FederationError(
                f"lost the RTI at {c.rti_address} before the federation started ({exc})"
            ) from None
        if kind == Frame.FAILED:
            raise FederationError(bytes(payload).decode())
        if kind == Frame.REJECT:
            raise FederationError(f"the RTI refused {c.me.name}: {bytes(payload).decode()}")
        if kind != Frame.START:
            raise FederationError(f"RTI sent {kind.name} instead of START")
        start: dict[str, Any] = json.loads(bytes(payload))
        return start

    def _sync_clock(self, rti: Connection) -> None:
        c = self.c
        assert c.sched is not None
        local, peer = rti.sock.getsockname()[0], rti.sock.getpeername()[0]
        if local == peer:  # one system clock (as reactor-c, which syncs remote federates only)
            # Measured, the offset would be the round trip's asymmetry, noise of
            # up to half of it (ms on a loaded machine) that moves every
            # physical action's tag against the NETs of this federate.
            log.info("%s: on the RTI's host (%s), no clock offset", c.me.name, peer)
            return
        try:
            rtt, offset = clock_sync.measure_offset(rti)
        except ConnectionError as exc:
            raise FederationError(str(exc)) from None
        c.sched.clock_offset = offset
        log.info(
            "%s: clock offset to the RTI %+.3f ms (round trip %.3f ms)",
            c.me.name,
            offset / 1e6,
            rtt / 1e6,
        )

    def _listen_for_peers(self) -> str:
        c = self.c
        base = c.listen_dir
        if base and c.rti_address.startswith("unix:"):
            address = f"unix:{base}/fed-{c.me.id}.sock"
        else:
            host = (
                c.rti_address[4:].rpartition(":")[0]
                if c.rti_address.startswith("tcp:")
                else "127.0.0.1"
            )
            address = f"tcp:{host}:0"
        c.peer_listener, actual = transport.listen(address)
        listener = c.peer_listener
        threading.Thread(
            target=gatekeeper.serve,
            args=(listener, c.secret, c.federation, c.p2p_upstream, c.inbound.add_upstream),
            kwargs={"once": True, "name": c.me.name},
            name=f"{c.me.name}-peer-accept",
            daemon=True,
        ).start()
        return actual

    def _connect_downstream(self, fid: int, address: str, hello: dict[str, Any]) -> None:
        c = self.c
        assert c.sched is not None
        try:
            conn, _ = transport.connect(address, c.secret, {**hello, "peer_of": fid})
        except (ConnectionError, transport.ProtocolError) as exc:
            peer = c.program.federates[fid].name
            raise FederationError(
                f"{c.me.name} cannot connect to federate {peer} (id {fid}): {exc}"
            ) from None
        # Two federates must never both block sending to each other. In
        # centralized mode, what we tell the RTI waits until held-back
        # payloads have left (see FederateCoordinator.flush): wake the
        # scheduler then.
        conn.hold_back_when_full(c.sched.wake if c.centralized else None)
        c.peers[fid] = conn


def connect_rti(
    address: str, secret: bytes, hello: dict[str, Any], wait: float, name: str
) -> Connection:
    """Connect to the RTI, waiting up to ``wait`` seconds for it to listen:
    a launch system may start federates before their RTI. Only "nobody
    listens there (yet)" is retried; a refusal is final."""
    deadline = time.monotonic() + wait
    said = False
    while True:
        try:
            conn, _ = transport.connect(address, secret, hello)
            return conn
        except ConnectionError as exc:
            if time.monotonic() >= deadline:
                raise FederationError(f"no RTI at {address} after {wait:g} s ({exc})") from None
            if not said:
                said = True
                log.info("%s: waiting for the RTI at %s", name, address)
            time.sleep(0.05)
