"""gatekeeper.py on real sockets: unauthenticated connections cannot delay an
honest peer, are bounded in number and in time, and are told why they were
refused; a peer whose listener never answers gets a clear error."""

import logging
import socket
import struct
import threading
import time

import pytest

from hprm_core import transport
from hprm_core.gatekeeper import Gatekeeper
from hprm_core.transport import HEADER, MAGIC, PROTOCOL_VERSION, Frame

SECRET = b"s3cret"
HELLO = {"federation": "fed", "federate": 0}


class Gate:
    """A Gatekeeper on a real TCP listener (what a federate's peer port is
    across hosts), recording the peers it admits."""

    def __init__(self, **kwargs):
        self.listener, self.address = transport.listen("tcp:127.0.0.1:0")
        self.accepted = []
        self.gate = Gatekeeper(
            self.listener,
            SECRET,
            lambda hello: None if hello.get("federation") == "fed" else "wrong federation",
            lambda conn, hello: self.accepted.append(conn),
            **kwargs,
        )
        self.gate.start()
        self.port = int(self.address.rsplit(":", 1)[1])

    def silent(self):
        """A connection that never says anything (it reads its challenge)."""
        return socket.create_connection(("127.0.0.1", self.port))

    def close(self):
        self.gate.close()
        for c in self.accepted:
            c.close()


@pytest.fixture
def gate_factory():
    gates = []

    def make(**kwargs):
        g = Gate(**kwargs)
        gates.append(g)
        return g

    yield make
    for g in gates:
        g.close()


def _closed_by_server(sock, within):
    """True once the server closed ``sock`` (EOF after any frames it sent)."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:
        pass
    return True


def test_silent_connections_do_not_delay_an_honest_peer(gate_factory):
    """Authenticated one after the other, each silent connection held the
    port for its whole timeout (here 60 s): three of them made the honest
    peer's connect time out. Now each has its own handshake."""
    g = gate_factory(timeout=60)
    silent = [g.silent() for _ in range(3)]
    try:
        conn, _ = transport.connect(g.address, SECRET, HELLO, timeout=30)
        conn.close()
        # still waiting, and nobody waited for them; the honest handshake's own count
        # drops once its thread hands the connection on, which a loaded machine may delay
        deadline = time.monotonic() + 10
        while g.gate.pending > 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert g.gate.pending == 3
    finally:
        for s in silent:
            s.close()


def test_a_slow_sender_is_cut_off_after_the_handshake_time_in_all(gate_factory, caplog):
    """One byte every 0.2 s resets any per-read timeout forever; the total
    deadline (1 s here) closes it regardless."""
    g = gate_factory(timeout=1.0)
    s = g.silent()
    stop = threading.Event()
    garbage = HEADER.pack(MAGIC, PROTOCOL_VERSION, Frame.HELLO, 1000)

    def trickle():
        for b in garbage * 100:
            if stop.wait(0.2):
                return
            try:
                s.send(bytes([b]))
            except OSError:
                return

    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    with caplog.at_level(logging.WARNING, logger="hprm.gatekeeper"):
        try:
            assert _closed_by_server(s, within=60), "the slow sender was never cut off"
        finally:
            stop.set()
            s.close()
            t.join()
        deadline = time.monotonic() + 10
        while "no valid hello within 1 s" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.02)
    assert "no valid hello within 1 s" in caplog.text


def test_pending_connections_are_bounded_and_the_oldest_is_dropped(gate_factory, caplog):
    """1,000 silent connections used to cost the RTI one thread each."""
    g = gate_factory(max_pending=4, timeout=60)
    threads_before = threading.active_count()
    with caplog.at_level(logging.WARNING, logger="hprm.gatekeeper"):
        silent = [g.silent() for _ in range(40)]
        try:
            silent[-1].settimeout(30)
            assert len(silent[-1].recv(HEADER.size + 32)) > 0  # the last one was admitted
            assert g.gate.pending <= 4
            # a handshake thread per pending connection, never one per connection
            deadline = time.monotonic() + 30  # dropped handshakes' threads end at once
            while threading.active_count() - threads_before > 4 + 1:
                assert time.monotonic() < deadline, threading.active_count() - threads_before
                time.sleep(0.02)
            assert _closed_by_server(silent[0], within=30)  # the oldest went first
            conn, _ = transport.connect(g.address, SECRET, HELLO, timeout=30)
            conn.close()
        finally:
            for s in silent:
                s.close()
    assert "dropped for a newer one: 4 connections were waiting" in caplog.text


def test_a_hello_shorter_than_its_mac_is_named(gate_factory):
    g = gate_factory()
    s = g.silent()
    try:
        s.recv(HEADER.size + 32)  # the challenge
        s.sendall(HEADER.pack(MAGIC, PROTOCOL_VERSION, Frame.HELLO, 5) + b"short")
        s.settimeout(30)
        answer = s.recv(4096)
        kind = struct.unpack_from("<B", answer, 3)[0]
        assert kind == Frame.REJECT
        assert b"HELLO too short (5 bytes; it starts with a 32-byte HMAC)" in answer
    finally:
        s.close()


def test_a_listener_that_never_answers_gives_a_clear_error():
    """A peer port that accepts (the kernel's backlog does) but never sends
    its challenge: the connecting side says where and how long it waited,
    not a bare ``TimeoutError: timed out``."""
    stuck = socket.socket()
    stuck.bind(("127.0.0.1", 0))
    stuck.listen(8)
    port = stuck.getsockname()[1]
    try:
        with pytest.raises(ConnectionError) as info:
            transport.connect(f"tcp:127.0.0.1:{port}", SECRET, HELLO, timeout=0.5)
        assert str(info.value) == (
            f"tcp:127.0.0.1:{port} did not complete the handshake: no answer within 0.5 s"
        )
    finally:
        stuck.close()


def test_max_pending_must_be_positive():
    listener, _ = transport.listen("tcp:127.0.0.1:0")
    try:
        with pytest.raises(ValueError, match="max_pending must be at least 1, got 0"):
            Gatekeeper(listener, SECRET, lambda h: None, lambda c, h: None, max_pending=0)
    finally:
        listener.close()
