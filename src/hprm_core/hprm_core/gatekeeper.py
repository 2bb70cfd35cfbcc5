"""Admitting connections: authenticate what a listener accepts, without letting
one peer delay another.

Anyone who can reach a listening socket (a TCP port, across hosts) can connect
to it and then say nothing, or one byte a second. Authenticating connections
one after the other, each with a read timeout, let three silent connections
hold a federate's peer port long enough for its real upstream to give up. So:

- every accepted connection is authenticated in a thread of its own, and an
  honest peer (a few hundred microseconds on one host) never queues behind a
  slow one;
- at most ``max_pending`` connections may be unauthenticated at once; to admit
  another, the one waiting longest is closed (a flood can delay honest peers
  only for as long as it keeps flooding, and never costs more than
  ``max_pending`` threads);
- each gets ``timeout`` seconds *in all* to authenticate (a per-read timeout
  would let a one-byte-a-second sender stay forever), then it is closed.

Nothing an unauthenticated peer sends is ever unpickled or handed on: only
connections whose hello carries the federation secret's HMAC reach
``on_peer``.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

from hprm_core import transport
from hprm_core.transport import Connection

log = logging.getLogger("hprm.gatekeeper")

MAX_PENDING = 16
"""Unauthenticated connections held at once, per listener."""

_TICK_S = 0.2  # how often overdue handshakes are looked for

OnPeer = Callable[[Connection, dict[str, Any]], None]
Check = Callable[[dict[str, Any]], str | None]


class Gatekeeper:
    """Accepts on ``listener`` until it is closed (:meth:`close` or
    :func:`transport.close_listener`), hands every authenticated connection to
    ``on_peer(conn, hello)`` (from a handshake thread), and refuses the rest
    with a logged reason. ``check(hello)`` may refuse an authenticated hello
    (wrong federation, unknown federate) by returning why.

    >>> gate = Gatekeeper(listener, secret, check, on_peer)  # doctest: +SKIP
    >>> gate.start()  # doctest: +SKIP
    """

    def __init__(
        self,
        listener: socket.socket,
        secret: bytes,
        check: Check,
        on_peer: OnPeer,
        *,
        max_pending: int = MAX_PENDING,
        timeout: float = transport.HANDSHAKE_TIMEOUT_S,
        name: str = "hprm",
    ) -> None:
        if max_pending < 1:
            raise ValueError(f"max_pending must be at least 1, got {max_pending}")
        self.listener = listener
        self.secret = secret
        self.check = check
        self.on_peer = on_peer
        self.max_pending = max_pending
        self.timeout = timeout
        self.name = name
        self._lock = threading.Lock()
        # socket -> its deadline, in admission order (oldest first)
        self._pending: dict[socket.socket, float] = {}
        # why a handshake was ended from outside, for its thread to report
        self._why: dict[socket.socket, str] = {}
        self._thread: threading.Thread | None = None

    @property
    def pending(self) -> int:
        """Connections accepted and not yet authenticated or refused."""
        with self._lock:
            return len(self._pending)

    def start(self) -> None:
        """Accept in a background thread."""
        self._thread = threading.Thread(target=self.run, name=f"{self.name}-accept", daemon=True)
        self._thread.start()

    def run(self) -> None:
        """Accept until the listener is closed (blocking)."""
        listener = self.listener
        while True:
            try:
                ready, _, _ = select.select([listener], [], [], _TICK_S)
            except (OSError, ValueError):  # closed under us
                break
            self._expire(time.monotonic())
            if not ready:
                continue
            try:
                raw, _ = listener.accept()
            except BlockingIOError:
                continue
            except OSError:
                break
            self._admit(raw)
        self._expire(float("inf"))  # closing: drop every handshake in progress

    def close(self) -> None:
        transport.close_listener(self.listener)
        t = self._thread
        # ident: started (a signal may interrupt start() itself, then close() runs)
        if t is not None and t.ident is not None and t is not threading.current_thread():
            t.join(5)

    def _admit(self, raw: socket.socket) -> None:
        peer = _describe(raw)
        with self._lock:
            if len(self._pending) >= self.max_pending:
                oldest = next(iter(self._pending))
                del self._pending[oldest]
                self._why[oldest] = (
                    f"dropped for a newer one: {self.max_pending} connections were waiting "
                    "to authenticate (the limit)"
                )
                _shut(oldest)
            self._pending[raw] = time.monotonic() + self.timeout
        threading.Thread(
            target=self._handshake, args=(raw, peer), name=f"{self.name}-auth", daemon=True
        ).start()

    def _handshake(self, raw: socket.socket, peer: str) -> None:
        try:
            accepted: tuple[Connection, dict[str, Any]] | None = transport.authenticate(
                raw, self.secret, self.check, peer=peer
            )
            error = ""
        except (transport.ProtocolError, OSError, EOFError) as exc:
            accepted, error = None, str(exc) or type(exc).__name__
        with self._lock:
            self._pending.pop(raw, None)
            why = self._why.pop(raw, None)  # closed from outside: expired or evicted
        if why is not None or accepted is None:
            if accepted is not None:
                accepted[0].close()
            log.warning("%s: refused connection from %s: %s", self.name, peer, why or error)
            return
        self.on_peer(*accepted)

    def _expire(self, now: float) -> None:
        with self._lock:
            overdue = [s for s, deadline in self._pending.items() if deadline <= now]
            for s in overdue:
                del self._pending[s]
                self._why[s] = f"no valid hello within {self.timeout:g} s"
        for s in overdue:  # its handshake thread sees EOF and logs the refusal
            _shut(s)


def serve(
    listener: socket.socket,
    secret: bytes,
    federation: str,
    allowed: Collection[Any],
    on_peer: OnPeer,
    *,
    once: bool = False,
    name: str = "hprm",
) -> None:
    """Admit federates of ``federation`` whose id is in ``allowed`` until the
    listener is closed (blocking: run it in a thread).

    ``once``: one connection per federate, ever (peer-to-peer data links:
    receivers rely on one connection's messages arriving in tag order, and
    take its end to mean that federate is done; a second connection claiming
    the same federate would break both, so it is refused)."""
    connected: set[Any] = set()
    lock = threading.Lock()

    def check(hello: dict[str, Any]) -> str | None:
        who = hello.get("federate")
        if hello.get("federation") != federation:
            return "wrong federation"
        if who not in allowed:
            return f"federate {who!r} may not connect here"
        if once:
            with lock:
                if who in connected:
                    return f"federate {who!r} is already connected"
                connected.add(who)
        return None

    Gatekeeper(listener, secret, check, on_peer, name=name).run()


def _describe(raw: socket.socket) -> str:
    try:
        return str(raw.getpeername() or "a local process")
    except OSError:
        return "an unknown peer"


def _shut(sock: socket.socket) -> None:
    """End a handshake from outside its thread: its blocked read returns."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
