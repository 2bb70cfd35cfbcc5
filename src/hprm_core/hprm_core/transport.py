"""Framed, authenticated, versioned sockets between federates and the RTI.

Unix domain sockets on one host (in a directory only the user can open), TCP
with ``TCP_NODELAY`` across hosts. Every frame is::

    magic "HP" | version u8 | type u8 | length u32 (little-endian) | payload

The eager protocol: a receiver reads into one pre-allocated 64 KB buffer and
hands out payloads as views into it, so small frames (control, tags, small
values, and, with the object store, references to large ones) cost no
allocation and no handshake. Larger frames are read into a buffer of their own;
frames beyond ``max_frame`` are refused before anything is allocated. Senders
use scatter-gather (``sendmsg``) so header and payload are not concatenated.

Authentication: the accepting side sends a random nonce; the connecting side
answers with ``HMAC-SHA256(secret, nonce + hello)`` and its hello (JSON: who
it is, which federation). A wrong MAC, another federation, another protocol
version or a malformed frame is refused with a REJECT frame naming the reason,
logged, and the connection closed; the listener keeps serving. Only
authenticated peers are ever handed to code that unpickles their payloads.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import hashlib
import hmac
import json
import logging
import os
import secrets
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Final

from hprm_core.errors import HprmError

log = logging.getLogger("hprm.transport")

PROTOCOL_VERSION = 2
MAGIC = b"HP"
HEADER = struct.Struct("<2sBBI")
EAGER_BUFFER = 64 * 1024
# A hello (a federate's ports and labels) may be this big: read before authentication,
# so bounded; a ported node with a thousand topics stays under it.
MAX_HELLO = 1 << 20
#: bytes a data link may hold back (see Connection.hold_back_when_full) before
#: its sender blocks after all
MAX_BACKLOG = 64 * 1024 * 1024
CLOSE_DRAIN_S = 10.0  # how long close() waits for held-back bytes to leave
DEFAULT_MAX_FRAME = 1 << 30
#: frames up to this size are joined into one buffer and sent with one send(): copying a
#: few KB costs less than building sendmsg's buffer list (docs/carla_ab.md); larger ones
#: go out as they are, never copied
JOIN_BELOW: Final = 4096
HANDSHAKE_TIMEOUT_S = 5.0
TAG = struct.Struct("<qI")  # a tag on the wire: int64 time, uint32 microstep


class Frame(enum.IntEnum):
    """Frame types (cf. reactor-c's federation protocol)."""

    CHALLENGE = 1  # nonce
    HELLO = 2  # mac(32) + json
    WELCOME = 3  # json
    REJECT = 4  # utf-8 reason
    START = 5  # json: start time, peers
    READY = 6  # (empty): clock synchronized, ready for START
    GRAPH = 7  # json: the federation the RTI assembled from the federates' self-descriptions
    NET = 10  # tag: next event tag
    LTC = 11  # tag: latest tag complete
    TAG = 12  # tag: tag advance grant
    PTAG = 13  # tag: provisional tag advance grant
    WANTED = 14  # tag: a federate downstream waits for your NET to pass it (grants.wanted)
    ACTS_ALONE = 15  # (empty): a reaction started a timer; it may send unasked (grants.self_paced)
    PACE_OFF = 16  # (empty): ask for every grant again, a federate upstream acts alone now
    MESSAGE = 20  # tag + dst federate u16 + port u32 + payload
    ABSENT = 21  # tag + dst federate u16 + port u32
    NOTICE = 22  # tag + dst federate u16 + port u32: a MESSAGE went peer to peer (centralized)
    STOP_REQUEST = 30  # tag
    STOP_REPLY = 31  # tag
    STOP_GRANTED = 32  # tag
    RESIGN = 40  # (empty): clean exit
    FAILED = 41  # utf-8: which federate failed and why
    IDLE = 42  # json: nothing to do; bytes sent to each peer, read from each (decentralized)
    QUIESCENT = 43  # (empty): nothing can happen in the federation any more: finish
    CLOCK_QUERY = 50  # t1
    CLOCK_REPLY = 51  # t1 + server time
    ARENA_REQUEST = 60  # store channel: send me your arena fds (SCM_RIGHTS follows)
    RELEASE = 61  # store channel: n x 40-byte Ref, released by the receiver


_FRAMES = {f.value: f for f in Frame}  # wire byte -> Frame, without Enum's slow call
_HEADER_SIZE = HEADER.size
_unpack_header = HEADER.unpack_from

ROUTE = struct.Struct("<qIHI")  # tag time, microstep, destination federate, port id
CLOCK = struct.Struct("<qq")  # the query's t1, the server's clock when it answered


class ProtocolError(HprmError):
    """A peer sent something this side cannot accept; the connection is dropped."""


class Rejected(HprmError):
    """The other side refused our connection (its reason is the message)."""


def parse_address(address: str) -> tuple[int, Any]:
    """``unix:/path`` or ``tcp:host:port`` -> (family, sockaddr)."""
    if address.startswith("unix:"):
        return socket.AF_UNIX, address[5:]
    if address.startswith("tcp:"):
        host, _, port = address[4:].rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"bad TCP address {address!r}: expected tcp:HOST:PORT")
        return socket.AF_INET, (host, int(port))
    raise ValueError(f"bad address {address!r}: expected unix:/path or tcp:host:port")


def listen(address: str) -> tuple[socket.socket, str]:
    """A listening socket; returns it with its actual address (port 0 resolved).

    Unix sockets are created mode 0600 inside the caller's private directory.
    A socket file left by a process that died is replaced; one that a live
    process still serves is an error (the same federate or RTI started twice).
    """
    family, addr = parse_address(address)
    sock = socket.socket(family, socket.SOCK_STREAM)
    if family == socket.AF_UNIX:
        old = os.umask(0o177)
        try:
            _bind_unix(sock, addr, address)
        except BaseException:
            sock.close()
            raise
        finally:
            os.umask(old)
        actual = address
    else:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        host, port = sock.getsockname()[:2]
        actual = f"tcp:{host}:{port}"
    sock.listen(64)
    return sock, actual


class Connection:
    """One framed connection. ``send`` is thread-safe; ``recv`` belongs to one reader.

    A payload returned by :meth:`recv` is a view into the receive buffer, valid
    until the next ``recv``: consume (unpickle, copy) it before reading again.
    """

    def __init__(self, sock: socket.socket, peer: str, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.sock = sock
        self.peer = peer
        self.max_frame = max_frame
        self.is_tcp = sock.family != socket.AF_UNIX
        if self.is_tcp:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = bytearray(EAGER_BUFFER)
        self._view = memoryview(self._buf)
        self._start = 0
        self._end = 0
        self._send_lock = threading.Lock()
        self.closed = False
        self.bytes_sent = 0  # frames' bytes, headers included: proves what stays off the wire
        self.bytes_received = 0  # frames' bytes returned by recv(), headers included
        self._send_flags = 0  # MSG_DONTWAIT once hold_back_when_full() was called
        self._backlog: deque[bytes] = deque()  # held-back bytes, in order
        self._backlog_bytes = 0
        self._drained = threading.Condition(self._send_lock)
        self._writer: threading.Thread | None = None
        self._send_error: OSError | None = None
        self._on_drained: Callable[[], None] | None = None

    # -- sending ------------------------------------------------------------------

    def hold_back_when_full(self, on_drained: Callable[[], None] | None = None) -> None:
        """For data links: when the socket is full, hand the rest of a frame
        to a writer thread instead of blocking the caller (up to
        ``MAX_BACKLOG`` bytes). Two federates streaming large values to each
        other at once would otherwise both block in send, neither reading.
        ``on_drained`` is called (from the writer thread) once nothing is
        held back any more, sent or dropped because the peer is gone."""
        self._send_flags = socket.MSG_DONTWAIT
        self._on_drained = on_drained

    @property
    def held_back(self) -> int:
        """Bytes accepted by :meth:`send` that are not in the socket yet (0
        once closed: what was still held back then will never leave)."""
        return 0 if self.closed else self._backlog_bytes

    def send(self, kind: Frame, *parts: bytes | bytearray | memoryview) -> None:
        length = sum(map(len, parts))
        header = HEADER.pack(MAGIC, PROTOCOL_VERSION, kind, length)
        with self._send_lock:
            self.bytes_sent += HEADER.size + length
            if length <= JOIN_BELOW and not self._backlog and self._send_error is None:
                # The per-message path: one syscall, nothing else.
                data = header + b"".join(parts)
                try:
                    sent = self.sock.send(data, self._send_flags)
                except BlockingIOError:
                    sent = 0
                if sent < len(data):
                    self._write([memoryview(data)[sent:]])
            else:
                self._write([memoryview(header), *[memoryview(p).cast("B") for p in parts]])

    def send_encoded(self, frames: bytes | bytearray) -> None:
        """Send frames queued with :func:`append_frame` (several at once: one syscall)."""
        with self._send_lock:
            self.bytes_sent += len(frames)
            self._write([frames])

    def _write(self, chunks: list[Any]) -> None:
        """Write ``chunks`` in order (caller holds ``_send_lock``)."""
        if self._send_error is not None:
            raise OSError(self._send_error.errno, f"{self.peer}: {self._send_error}")
        if not self._backlog:
            try:
                while chunks:
                    sent = self.sock.sendmsg(chunks, [], self._send_flags)
                    while chunks and sent >= len(chunks[0]):
                        sent -= len(chunks[0])
                        chunks.pop(0)
                    if chunks and sent:
                        chunks[0] = chunks[0][sent:]
                return
            except BlockingIOError:
                pass
        # The socket is full (or bytes are already held back: keep the order).
        while self._backlog_bytes > MAX_BACKLOG and self._send_error is None:
            self._drained.wait()
        for c in chunks:
            data = bytes(c)  # the caller may reuse its buffer once we return
            self._backlog.append(data)
            self._backlog_bytes += len(data)
        if self._writer is None:
            self._writer = threading.Thread(
                target=self._write_backlog, name=f"send-{self.peer}", daemon=True
            )
            self._writer.start()
        self._drained.notify_all()

    def _write_backlog(self) -> None:
        """Writer thread: send held-back bytes, blocking (it has nothing else to do)."""
        while True:
            with self._send_lock:
                while not self._backlog and not self.closed:
                    self._drained.wait()
                if not self._backlog:
                    self._writer = None
                    return
                data = self._backlog[0]
            try:
                sent = self.sock.send(data)
            except OSError as exc:
                with self._send_lock:
                    self._send_error = exc
                    self._backlog.clear()
                    self._backlog_bytes = 0
                    self._writer = None
                    self._drained.notify_all()
                if self._on_drained is not None:
                    self._on_drained()
                return
            with self._send_lock:
                if sent >= len(data):
                    self._backlog.popleft()
                else:
                    self._backlog[0] = data[sent:]
                self._backlog_bytes -= sent
                self._drained.notify_all()
                drained = not self._backlog
            if drained and self._on_drained is not None:
                self._on_drained()

    def send_tag(self, kind: Frame, time_ns: int, microstep: int) -> None:
        self.send(kind, TAG.pack(time_ns, microstep))

    # -- receiving ------------------------------------------------------------------

    def _fill(self, need: int) -> None:
        """Make at least ``need`` bytes available from ``_start`` (need <= buffer)."""
        if self._start + need > len(self._buf):
            n = self._end - self._start
            self._buf[:n] = self._buf[self._start : self._end]
            self._start, self._end = 0, n
        while self._end - self._start < need:
            got = self.sock.recv_into(self._view[self._end :])
            if got == 0:
                raise EOFError(f"connection to {self.peer} closed")
            self._end += got

    def has_buffered_frame(self) -> bool:
        """True when a whole frame already sits in the receive buffer (a
        selector would not report the socket readable for it)."""
        have = self._end - self._start
        if have < HEADER.size:
            return False
        length = HEADER.unpack_from(self._buf, self._start)[3]
        return have >= HEADER.size + length

    def recv(self) -> tuple[Frame, memoryview]:
        """The next frame. Raises EOFError on a clean close, ProtocolError on garbage.

        Written for the common case, a whole small frame already (or, after
        one read, now) in the buffer: it is on every message's path.
        """
        start = self._start
        if self._end - start < _HEADER_SIZE:
            self._fill(_HEADER_SIZE)
            start = self._start
        magic, version, kind, length = _unpack_header(self._buf, start)
        frame = _FRAMES.get(kind)
        if magic != MAGIC or version != PROTOCOL_VERSION or frame is None:
            raise self._bad_header(magic, version, kind)
        if length > self.max_frame:
            raise ProtocolError(
                f"{self.peer} sent a {length}-byte frame; the limit is {self.max_frame} bytes"
            )
        self.bytes_received += _HEADER_SIZE + length
        start += _HEADER_SIZE
        end = start + length
        if end <= self._end:  # already here
            self._start = end
            return frame, self._view[start:end]
        self._start = start
        if length <= len(self._buf):
            self._fill(length)
            start = self._start
            self._start = start + length
            return frame, self._view[start : start + length]
        # Larger than the eager buffer: read it into a buffer of its own.
        big = bytearray(length)
        have = self._end - self._start
        big[:have] = self._buf[self._start : self._end]
        self._start = self._end = 0
        view = memoryview(big)
        while have < length:
            got = self.sock.recv_into(view[have:])
            if got == 0:
                raise EOFError(f"connection to {self.peer} closed mid-frame")
            have += got
        return frame, view

    def _bad_header(self, magic: bytes, version: int, kind: int) -> ProtocolError:
        if magic != MAGIC:
            return ProtocolError(f"{self.peer} sent a frame without the HPRM magic (not HPRM?)")
        if version != PROTOCOL_VERSION:
            return ProtocolError(
                f"{self.peer} speaks HPRM protocol version {version}; this side speaks "
                f"{PROTOCOL_VERSION}: run the same hprm_core version everywhere"
            )
        return ProtocolError(f"{self.peer} sent unknown frame type {kind}")

    def close(self) -> None:
        if not self.closed:
            with self._send_lock:  # let held-back bytes leave first (a RESIGN, say)
                deadline = time.monotonic() + CLOSE_DRAIN_S
                while self._backlog and self._send_error is None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._drained.wait(left)
                self.closed = True
                self._drained.notify_all()
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()


def append_frame(out: bytearray, kind: Frame, *parts: bytes | bytearray | memoryview) -> None:
    """Append one whole frame to ``out``, for senders that queue frames and
    write them together (one syscall, one wake-up of the receiver)."""
    out += HEADER.pack(MAGIC, PROTOCOL_VERSION, kind, sum(map(len, parts)))
    for p in parts:
        out += p


class AddressInUse(HprmError):
    """Another live process listens on the address we must listen on."""


def _bind_unix(sock: socket.socket, path: str, address: str) -> None:
    try:
        sock.bind(path)
        return
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
    if not remove_stale_socket(path):
        raise AddressInUse(f"{address} is in use by a running process (started twice?)")
    sock.bind(path)


def remove_stale_socket(path: str) -> bool:
    """Remove a Unix socket file nobody listens on any more (its process
    died); True when ``path`` is free now, False when a live process serves it."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except FileNotFoundError:
        return True
    except OSError:  # nobody listens: a file left by a process that died
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return True
    finally:
        probe.close()
    return False


def _mac(secret: bytes, nonce: bytes, hello: bytes) -> bytes:
    return hmac.new(secret, nonce + hello, hashlib.sha256).digest()


def connect(
    address: str, secret: bytes, hello: dict[str, Any], timeout: float = 10.0
) -> tuple[Connection, dict[str, Any]]:
    """Connect and authenticate; returns the connection and the peer's welcome."""
    family, addr = parse_address(address)
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(addr)
    except OSError as exc:
        sock.close()
        raise ConnectionError(f"cannot connect to {address}: {exc}") from exc
    conn = Connection(sock, address)
    try:
        kind, nonce = conn.recv()
        if kind != Frame.CHALLENGE:
            raise ProtocolError(f"{address} did not start with an authentication challenge")
        body = json.dumps(hello).encode()
        if len(body) + 32 > MAX_HELLO:
            raise ProtocolError(
                f"{hello.get('name', 'this peer')}'s description (its ports and labels) is "
                f"{len(body)} bytes, over the {MAX_HELLO}-byte limit of a hello: too many ports"
            )
        conn.send(Frame.HELLO, _mac(secret, bytes(nonce), body), body)
        kind, payload = conn.recv()
        if kind == Frame.REJECT:
            raise Rejected(f"{address} refused the connection: {bytes(payload).decode()}")
        if kind != Frame.WELCOME:
            raise ProtocolError(f"{address} answered the hello with {kind.name}")
        welcome = json.loads(bytes(payload))
    except (OSError, EOFError) as exc:
        # A listener that never answers (stuck, or flooded by unauthenticated
        # connections) or closes on us: say where, not just "timed out".
        conn.close()
        what = f"no answer within {timeout:g} s" if isinstance(exc, TimeoutError) else exc
        raise ConnectionError(f"{address} did not complete the handshake: {what}") from exc
    except BaseException:
        conn.close()
        raise
    sock.settimeout(None)
    return conn, welcome


def authenticate(
    raw: socket.socket,
    secret: bytes,
    check: Any,
    welcome: dict[str, Any] | None = None,
    *,
    peer: str = "peer",
) -> tuple[Connection, dict[str, Any]]:
    """Authenticate a freshly accepted socket (blocking; see
    :mod:`hprm_core.gatekeeper`, which bounds how long and how many).

    ``check(hello) -> str | None`` returns a reason to refuse a correctly
    authenticated hello (wrong federation, unknown federate, ...). A refused
    peer is told why (REJECT), its socket closed, and the reason raised as
    :class:`ProtocolError` (or the ``OSError``/``EOFError`` of a peer gone).
    """
    raw.settimeout(HANDSHAKE_TIMEOUT_S)
    conn = Connection(raw, peer, max_frame=MAX_HELLO)  # no bigger frame before auth
    try:
        nonce = secrets.token_bytes(32)
        conn.send(Frame.CHALLENGE, nonce)
        kind, payload = conn.recv()
        if kind != Frame.HELLO:
            raise ProtocolError(f"expected HELLO, got {kind.name}")
        if len(payload) < 32:
            raise ProtocolError(
                f"HELLO too short ({len(payload)} bytes; it starts with a 32-byte HMAC)"
            )
        mac, body = bytes(payload[:32]), bytes(payload[32:])
        if not hmac.compare_digest(mac, _mac(secret, nonce, body)):
            raise ProtocolError("authentication failed (wrong federation secret)")
        try:
            hello = json.loads(body)
        except ValueError:
            raise ProtocolError("malformed hello") from None
        reason = check(hello) if isinstance(hello, dict) else "malformed hello"
        if reason:
            raise ProtocolError(reason)
        conn.send(Frame.WELCOME, json.dumps(welcome or {}).encode())
    except (ProtocolError, OSError, EOFError) as exc:
        with contextlib.suppress(OSError):
            conn.send(Frame.REJECT, str(exc).encode())
        conn.close()
        raise
    raw.settimeout(None)
    conn.max_frame = DEFAULT_MAX_FRAME
    conn.peer = str(hello.get("name", peer))
    return conn, hello


def close_listener(listener: socket.socket) -> None:
    """Close a listening socket and end the :func:`serve` loop blocked in its
    ``accept()``: on Linux, ``close()`` alone leaves that thread blocked (and
    the socket open) until the process exits. A Unix socket's file goes with
    it: a clean exit leaves nothing in the (possibly user-given) directory."""
    path = socket_path(listener)
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)
    listener.close()
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)


def socket_path(sock: socket.socket | None) -> str | None:
    """The file of a Unix socket bound to a path (None for TCP or unbound)."""
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    with contextlib.suppress(OSError):
        path = sock.getsockname()
        if isinstance(path, str) and path:
            return path
    return None


def pack_tag(time_ns: int, microstep: int) -> bytes:
    return TAG.pack(time_ns, microstep)


def unpack_tag(payload: memoryview | bytes) -> tuple[int, int]:
    if len(payload) < TAG.size:
        raise ProtocolError(f"truncated tag ({len(payload)} bytes)")
    return TAG.unpack_from(payload)
