"""Passing arena fds between processes over a Unix socket (``SCM_RIGHTS``):
the only way an arena reaches a consumer, since arenas have no name."""

from __future__ import annotations

import logging
import os
import socket
import struct
from collections.abc import Iterable

from hprm_core.object_store.ref import (
    ArenaInfo,
    ObjectStoreError,
)

log = logging.getLogger("hprm.object_store")


_FDMSG = struct.Struct("<4sI")  # magic, count
_FDENT = struct.Struct("<QQ")  # arena_id, size
_FDMAGIC = b"HPAF"
_MAX_FDS = 250  # SCM_MAX_FD is 253 per message


def send_arena_fds(sock: socket.socket, arenas: Iterable[ArenaInfo]) -> None:
    """Send arena fds (and their ids and sizes) over a connected Unix socket
    with ``SCM_RIGHTS``; the peer calls :func:`recv_arena_fds`. The kernel
    duplicates the fds into the peer, so each side closes its own. Sends one
    message per 250 arenas; the socket must be blocking.

    >>> from hprm_core.object_store import Store
    >>> a, b = socket.socketpair()
    >>> with Store(1 << 20) as s:
    ...     send_arena_fds(a, s.arenas)
    ...     got = recv_arena_fds(b)
    ...     [(i.arena_id, i.size) for i in got] == [(i.arena_id, i.size) for i in s.arenas]
    True
    >>> for i in got: os.close(i.fd)
    >>> a.close(); b.close()
    """
    items = list(arenas)
    for i in range(0, max(len(items), 1), _MAX_FDS):
        chunk = items[i : i + _MAX_FDS]
        body = _FDMSG.pack(_FDMAGIC, len(chunk)) + b"".join(
            _FDENT.pack(a.arena_id, a.size) for a in chunk
        )
        sent = socket.send_fds(sock, [body], [a.fd for a in chunk])
        if sent < len(body):
            sock.sendall(body[sent:])
        if not chunk:
            break


def recv_arena_fds(sock: socket.socket) -> list[ArenaInfo]:
    """Receive one message of :func:`send_arena_fds` (call it once per message
    sent, i.e. once per 250 arenas). On a stream socket it consumes exactly
    that message's bytes, so it can sit between the transport's own frames.
    The caller owns the returned fds (hand them to :meth:`ArenaMap.attach`)."""
    stream = sock.type == socket.SOCK_STREAM
    first = _FDMSG.size if stream else _FDMSG.size + _MAX_FDS * _FDENT.size
    data, fds, _flags, _addr = socket.recv_fds(sock, first, _MAX_FDS)
    try:
        if not data:
            raise ObjectStoreError("peer closed the socket before sending arena fds")
        if stream and len(data) < _FDMSG.size:
            data += _recv_exact(sock, _FDMSG.size - len(data))
        magic, count = _FDMSG.unpack_from(data)
        if magic != _FDMAGIC or count > _MAX_FDS:
            raise ObjectStoreError(f"not an arena-fd message (magic {magic!r}, count {count})")
        if stream:
            data += _recv_exact(sock, count * _FDENT.size)
        if len(data) != _FDMSG.size + count * _FDENT.size or len(fds) != count:
            raise ObjectStoreError(
                f"arena-fd message announces {count} arenas, carries {len(fds)} fds and "
                f"{len(data) - _FDMSG.size} bytes of descriptors"
            )
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    out = []
    for k in range(count):
        arena_id, size = _FDENT.unpack_from(data, _FDMSG.size + k * _FDENT.size)
        out.append(ArenaInfo(arena_id, fds[k], size))
    return out


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ObjectStoreError("peer closed the socket in the middle of an arena-fd message")
        buf += chunk
    return bytes(buf)
