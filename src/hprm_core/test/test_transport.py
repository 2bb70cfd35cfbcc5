"""transport.py on real sockets: framing (eager buffer, large frames, frames
split across reads or packed into one), refusal of bad input with a clear
error, authentication, and the one-connection-per-federate rule."""

import os
import socket
import stat
import struct
import threading
import time

import pytest

from hprm_core import gatekeeper, transport
from hprm_core.transport import EAGER_BUFFER, HEADER, MAGIC, MAX_HELLO, PROTOCOL_VERSION, Frame


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield transport.Connection(a, "a"), transport.Connection(b, "b")
    a.close()
    b.close()


def _raw_header(kind: int, length: int, magic: bytes = MAGIC, version: int = PROTOCOL_VERSION):
    return HEADER.pack(magic, version, kind, length)


def test_frames_of_every_size_class_round_trip(pair):
    tx, rx = pair
    # below and above JOIN_BELOW (joined into one buffer / sent as a buffer list), the
    # receive buffer's size; each also sent in three parts, as the data plane sends
    sizes = [0, 1, 100, transport.JOIN_BELOW, transport.JOIN_BELOW + 1]
    sizes += [EAGER_BUFFER - HEADER.size, EAGER_BUFFER, 3 * EAGER_BUFFER + 7]
    payloads = [os.urandom(n) for n in sizes]
    sends = [(p,) for p in payloads] + [(p[:1], p[1:9], p[9:]) for p in payloads]
    payloads += payloads

    def send_all():
        for parts in sends:
            tx.send(Frame.MESSAGE, *parts)

    t = threading.Thread(target=send_all)
    t.start()
    for p in payloads:
        kind, got = rx.recv()
        assert kind is Frame.MESSAGE  # a Frame, not a bare int, whatever the size
        assert bytes(got) == p
    t.join()


def test_several_frames_in_one_read_are_all_handed_out(pair):
    tx, rx = pair
    frames = bytearray()
    for i in range(5):
        transport.append_frame(frames, Frame.NET, transport.pack_tag(i, 0))
    tx.send_encoded(frames)
    got = []
    while True:
        kind, payload = rx.recv()
        got.append((kind, transport.unpack_tag(payload)))
        if not rx.has_buffered_frame():
            break
    assert got == [(Frame.NET, (i, 0)) for i in range(5)]


def test_a_frame_split_across_many_writes_is_reassembled(pair):
    tx, rx = pair
    body = os.urandom(1000)
    wire = _raw_header(Frame.MESSAGE, len(body)) + body

    def trickle():  # 3 bytes per write, header included
        for i in range(0, len(wire), 3):
            tx.sock.sendall(wire[i : i + 3])

    t = threading.Thread(target=trickle)
    t.start()
    kind, got = rx.recv()
    t.join()
    assert kind is Frame.MESSAGE and bytes(got) == body


def test_an_oversized_frame_is_refused_before_anything_is_allocated(pair):
    tx, rx = pair
    rx.max_frame = 1 << 20
    tx.sock.sendall(_raw_header(Frame.MESSAGE, (1 << 20) + 1))
    with pytest.raises(transport.ProtocolError, match=r"1048577-byte frame; the limit is 1048576"):
        rx.recv()


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (_raw_header(Frame.MESSAGE, 0, magic=b"GE"), "without the HPRM magic"),
        (_raw_header(Frame.MESSAGE, 0, version=PROTOCOL_VERSION + 1), "protocol version"),
        (_raw_header(99, 0), "unknown frame type 99"),
    ],
)
def test_malformed_headers_name_the_problem(pair, header, message):
    tx, rx = pair
    tx.sock.sendall(header)
    with pytest.raises(transport.ProtocolError, match=message):
        rx.recv()


def test_a_peer_closing_mid_frame_is_an_eof_not_a_short_frame(pair):
    tx, rx = pair
    tx.sock.sendall(_raw_header(Frame.MESSAGE, 100) + b"only ten b")
    tx.sock.shutdown(socket.SHUT_WR)
    with pytest.raises(EOFError):
        rx.recv()


def test_truncated_tags_are_refused():
    with pytest.raises(transport.ProtocolError, match="truncated tag"):
        transport.unpack_tag(b"\x00" * (transport.TAG.size - 1))


@pytest.mark.parametrize("address", ["tcp:localhost", "tcp::80", "udp:1.2.3.4:5", "/tmp/x.sock"])
def test_bad_addresses_are_refused_with_the_expected_form(address):
    with pytest.raises(ValueError, match="expected"):
        transport.parse_address(address)


def _server(tmp_path, secret=b"s3cret", allowed=(0, 1), once=False):
    listener, address = transport.listen(f"unix:{tmp_path}/t.sock")
    accepted = []
    thread = threading.Thread(
        target=gatekeeper.serve,
        args=(listener, secret, "fed", set(allowed), lambda c, h: accepted.append((c, h))),
        kwargs={"once": once},
        daemon=True,
    )
    thread.start()
    return listener, address, accepted, thread


def _stop(listener, thread):
    transport.close_listener(listener)
    thread.join(5)
    assert not thread.is_alive(), "serve() still blocked in accept() after close_listener()"


def _wait_for(accepted, n):
    deadline = time.monotonic() + 5  # on_peer runs just after the peer got its WELCOME
    while len(accepted) < n and time.monotonic() < deadline:
        time.sleep(0.01)


def test_unix_listeners_are_private_to_the_user(tmp_path):
    listener, address, _, thread = _server(tmp_path)
    try:
        mode = stat.S_IMODE(os.stat(address[5:]).st_mode)
        assert mode & 0o077 == 0, oct(mode)
    finally:
        _stop(listener, thread)


def test_authentication_accepts_the_federation_and_refuses_everyone_else(tmp_path):
    listener, address, accepted, thread = _server(tmp_path)
    try:
        conn, welcome = transport.connect(address, b"s3cret", {"federation": "fed", "federate": 0})
        assert welcome == {}
        cases = [
            (b"wrong", {"federation": "fed", "federate": 1}, "wrong federation secret"),
            (b"s3cret", {"federation": "other", "federate": 1}, "wrong federation"),
            (b"s3cret", {"federation": "fed", "federate": 7}, "federate 7 may not connect"),
        ]
        for secret, hello, reason in cases:
            with pytest.raises(transport.Rejected, match=reason):
                transport.connect(address, secret, hello)
        _wait_for(accepted, 1)
        assert [h["federate"] for _, h in accepted] == [0]
        conn.close()
    finally:
        _stop(listener, thread)
        for c, _ in accepted:
            c.close()


def test_a_big_hello_is_accepted_and_one_over_the_limit_refused_before_sending(tmp_path):
    """A federate with many ports describes itself in a hello of hundreds of KB (a
    ported node with hundreds of topics); one over MAX_HELLO is refused where it is
    made, saying what is too big, not by the listener as a malformed frame."""
    listener, address, accepted, thread = _server(tmp_path)
    try:
        hello = {"federation": "fed", "federate": 0, "name": "big", "pad": "x" * 300_000}
        conn, _ = transport.connect(address, b"s3cret", hello)
        _wait_for(accepted, 1)
        assert len(accepted[0][1]["pad"]) == 300_000
        conn.close()
        hello.update(federate=1, pad="x" * MAX_HELLO)
        with pytest.raises(transport.ProtocolError, match=r"big's description .* is \d+ bytes"):
            transport.connect(address, b"s3cret", hello)
    finally:
        _stop(listener, thread)
        for c, _ in accepted:
            c.close()


@pytest.mark.parametrize("once", [True, False])
def test_once_refuses_a_second_connection_claiming_the_same_federate(tmp_path, once):
    listener, address, accepted, thread = _server(tmp_path, once=once)
    hello = {"federation": "fed", "federate": 1}
    conns = []
    try:
        conns.append(transport.connect(address, b"s3cret", hello)[0])
        if once:
            with pytest.raises(transport.Rejected, match="federate 1 is already connected"):
                transport.connect(address, b"s3cret", hello)
        else:  # e.g. the store channel: reconnecting is fine
            conns.append(transport.connect(address, b"s3cret", hello)[0])
        _wait_for(accepted, 1 if once else 2)
        assert len(accepted) == (1 if once else 2)
    finally:
        for c in conns:
            c.close()
        _stop(listener, thread)
        for c, _ in accepted:
            c.close()


def test_no_big_frame_is_read_before_authentication(tmp_path):
    """Before the hello is verified, a frame over MAX_HELLO is refused: an
    unauthenticated peer cannot make the listener allocate more."""
    listener, address, accepted, thread = _server(tmp_path)
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(address[5:])
        s.recv(HEADER.size + 32)  # the challenge
        s.sendall(_raw_header(Frame.HELLO, MAX_HELLO + 1))
        answer = s.recv(4096)
        s.close()
        kind = struct.unpack_from("<B", answer, 3)[0]
        assert kind == Frame.REJECT and b"the limit is" in answer
        assert accepted == []
    finally:
        _stop(listener, thread)


def test_a_stale_unix_socket_file_is_replaced_and_a_live_one_refused(tmp_path):
    """A process that died (SIGKILL) leaves its socket file: the next one to
    listen there takes it over. One that a live process serves is refused:
    the same federate or RTI started twice."""
    path = tmp_path / "x.sock"
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(path))  # bound, never listening, then gone: a stale file
    dead.close()
    assert path.exists()
    live, _ = transport.listen(f"unix:{path}")
    try:
        with pytest.raises(transport.AddressInUse, match="in use by a running process"):
            transport.listen(f"unix:{path}")
    finally:
        live.close()


def test_a_data_link_holds_back_what_a_full_socket_cannot_take_and_keeps_order(pair):
    """With hold_back_when_full, sending 8 MB to a peer that reads nothing
    returns at once (a writer thread sends the rest); frames sent after it
    stay behind it; everything arrives intact and in order."""
    tx, rx = pair
    tx.hold_back_when_full()
    big = os.urandom(8 * 1024 * 1024)
    done = threading.Event()

    def send_all():
        tx.send(Frame.MESSAGE, big)  # far more than the socket buffers hold
        for i in range(3):
            tx.send(Frame.NET, transport.pack_tag(i, 0))
        done.set()

    t = threading.Thread(target=send_all)
    t.start()
    assert done.wait(10), "send blocked on a full socket"
    kind, got = rx.recv()
    assert kind is Frame.MESSAGE and bytes(got) == big
    assert [transport.unpack_tag(rx.recv()[1]) for _ in range(3)] == [(0, 0), (1, 0), (2, 0)]
    t.join()


def test_a_data_link_keeps_joined_frames_whole_when_the_socket_fills_mid_frame(pair):
    """Frames up to JOIN_BELOW go out with one send(); when the socket takes only part
    of one, the rest is held back like any frame's: nothing blocks, every frame arrives
    whole and in order."""
    tx, rx = pair
    tx.hold_back_when_full()
    frames = [os.urandom(transport.JOIN_BELOW - i % 7) for i in range(200)]  # ~800 KB
    for f in frames:
        tx.send(Frame.MESSAGE, f[:5], f[5:])  # the reader is not reading yet
    assert tx.held_back > 0, "the socket took everything: the test filled nothing"
    for f in frames:
        kind, got = rx.recv()
        assert kind is Frame.MESSAGE and bytes(got) == f


def test_a_data_link_reports_held_back_bytes_and_says_when_they_left(pair):
    """What centralized federates rely on: ``held_back`` is non-zero exactly
    while sent bytes are not in the socket yet, and ``on_drained`` fires once
    they are (also when the peer vanished and they never will be)."""
    tx, rx = pair
    drained = threading.Event()
    tx.hold_back_when_full(drained.set)
    tx.send(Frame.NET, transport.pack_tag(1, 0))  # fits: nothing held back
    assert tx.held_back == 0 and not drained.is_set()
    big = os.urandom(8 * 1024 * 1024)
    tx.send(Frame.MESSAGE, big)
    assert 0 < tx.held_back <= len(big) + transport.HEADER.size
    assert not drained.wait(0.2), "drained while nobody read"
    assert rx.recv()[0] is Frame.NET
    kind, got = rx.recv()  # reading lets the writer thread finish
    assert kind is Frame.MESSAGE and bytes(got) == big
    assert drained.wait(10) and tx.held_back == 0
    drained.clear()
    tx.send(Frame.MESSAGE, big)
    rx.close()  # the peer is gone: the bytes are dropped, and that is said too
    assert drained.wait(10) and tx.held_back == 0


def test_closing_a_data_link_lets_held_back_bytes_leave_first(pair):
    tx, rx = pair
    tx.hold_back_when_full()
    big = os.urandom(4 * 1024 * 1024)
    tx.send(Frame.MESSAGE, big)
    tx.send(Frame.RESIGN)
    got = []

    def read():
        got.append(rx.recv())
        got.append(rx.recv())

    t = threading.Thread(target=read)
    t.start()
    tx.close()  # waits until the writer thread has sent everything
    t.join(10)
    assert bytes(got[0][1]) == big and got[1][0] is Frame.RESIGN


def test_a_data_link_whose_peer_vanished_reports_it_on_the_next_send(pair):
    tx, rx = pair
    tx.hold_back_when_full()
    tx.send(Frame.MESSAGE, os.urandom(4 * 1024 * 1024))  # held back: nobody reads
    rx.close()
    with pytest.raises(OSError):
        for _ in range(200):  # the writer thread notices first; sends then fail
            tx.send(Frame.NET, transport.pack_tag(0, 0))
            time.sleep(0.01)
