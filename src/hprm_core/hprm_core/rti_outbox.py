"""The frames a federate owes its RTI, queued and sent together.

Why together: the frames of one tag (messages through the RTI, absences,
LTC, the next NET) leave in one write when the tag completes or before the
federate waits, which wakes the RTI (and through it the receivers) once per
tag instead of once per frame.

Why gated (centralized): the RTI's grants rely on every payload an LTC, NET
or RESIGN accounts for being in its receiver's socket already. A payload
sent peer to peer can be held back (a large value meeting a full socket, a
receiver falling behind): a frame queued meanwhile waits until those bytes
are in the socket. This module is compiled (:mod:`compiled`).
"""

from __future__ import annotations

import logging
from collections import deque

from hprm_core import transport
from hprm_core.transport import Connection, Frame

log = logging.getLogger("hprm.federation")


class RtiOutbox:
    """The queue of one federate's frames for its RTI (``rti``, once connected)."""

    def __init__(self, name: str, centralized: bool, peers: dict[int, Connection]) -> None:
        self.name = name
        self.centralized = centralized
        self.peers = peers  # downstream federate -> peer-to-peer connection (shared)
        self.rti: Connection | None = None
        self.batch = bytearray()
        # Centralized: (offset in batch, bytes sent on each peer link before
        # the frames from there on): those must be in the sockets first.
        self._gates: deque[tuple[int, tuple[int, ...]]] = deque()

    def add(self, kind: Frame, *parts: bytes | memoryview) -> None:
        """Queue a frame; it leaves with the next :meth:`flush`."""
        start = len(self.batch)
        transport.append_frame(self.batch, kind, *parts)
        if self.centralized:
            for conn in self.peers.values():
                if conn.held_back:
                    need = tuple(c.bytes_sent for c in self.peers.values())
                    if not self._gates or self._gates[-1][1] != need:
                        self._gates.append((start, need))
                    break

    def flush(self) -> bool:
        """Send the queued frames that may go; False if the RTI is gone.

        What can go, goes: a sender that keeps a backlog still reports its
        progress. (A NOTICE is queued just before its own payload is sent, so
        it may leave ahead of it: harmless, a NOTICE only holds grants back.)
        The peer link's writer thread wakes the scheduler once it has sent
        everything, which flushes the rest."""
        batch = self.batch
        if not batch or self.rti is None:
            return True
        end = len(batch)
        gates = self._gates
        peers = self.peers.values()
        while gates:
            start, need = gates[0]
            if any(c.bytes_sent - c.held_back < n for c, n in zip(peers, need, strict=True)):
                end = start
                break
            gates.popleft()
        if not end:
            return True
        try:
            self.rti.send_encoded(batch if end == len(batch) else batch[:end])
        except OSError as exc:
            log.debug("%s: could not send to the RTI: %s", self.name, exc)
            return False
        finally:
            del batch[:end]
            if gates:
                self._gates = deque([(s - end, n) for s, n in gates])
        return True
