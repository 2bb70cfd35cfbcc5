"""The data plane: how a federate's values cross process boundaries.

Small values travel in-band inside the eager MESSAGE frame. Buffers above a
threshold (64 KB by default, per connection) are placed in the sending
federate's shared-memory :class:`~hprm_core.object_store.Store` and only a
40-byte reference travels (paper section IV-C). Each federate on a Unix socket
runs a *store channel* (``store-<id>.sock`` in the federation's private
directory) through which

- a receiver fetches the fds of arenas it has not mapped yet (``SCM_RIGHTS``,
  once per arena; from the federate that sent it the reference, which may be
  forwarding an arena of a third federate). It asks each upstream federate
  right after START (:meth:`DataPlane.prefetch`), without waiting for the
  answer: an arena must reach a receiver while its producer still runs, and a
  producer may send once and finish before a busy receiver reads its message.
  A producer that closes while a live receiver holds references into an arena
  it has not been given yet serves its store channel a while longer
  (:data:`HANDOVER_S`);
- a receiver returns release tokens when user code dropped a received array,
  so the sender can reuse the block (see ``object_store`` for the lifetime rule);
- a dead receiver's holds are dropped when its channel closes.

Across hosts (TCP) there is no shared memory: the same serializer streams the
buffers inside the frame instead, transparently to reactions.

Per connection, ``serialization="safe"`` selects the pickle-free encoding
(msgpack + raw arrays + Arrow IPC); a receiver decodes such a connection's
frames with pickle disabled, whatever the frame claims.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import pickle
import select
import socket
import struct
import threading
import time
from typing import TYPE_CHECKING, Any

from hprm_core import gatekeeper, transport
from hprm_core.object_store import (
    ArenaMap,
    ObjectStoreError,
    Ref,
    Store,
    recv_arena_fds,
    send_arena_fds,
)
from hprm_core.serialization import (
    ITEM_REF,
    Item,
    PlainPickler,
    SerializationError,
    deserialize,
    load_pickle_extensions,
    serialize,
)
from hprm_core.transport import Connection, Frame

if TYPE_CHECKING:
    from hprm_core.scheduler import Scheduler

log = logging.getLogger("hprm.data_plane")

_INLINE = b"\x00"  # then plain pickle bytes (small value, no out-of-band buffer)
_FULL = b"\x01"  # then u32 header length, serialized header, streamed buffers
#: the payload-kind byte as a receiver reads it (an int, no slice); federation's
#: peer fast path checks it too
INLINE_KIND, _FULL_KIND = _INLINE[0], _FULL[0]
_HEADER_LEN = struct.Struct("<I")
#: how long a closing producer serves receivers that hold references into arenas
#: they have not mapped yet (each asks as soon as it reads the message)
HANDOVER_S = 10.0


class DataPlane:
    """One federate's store, arena map and store channel."""

    def __init__(
        self,
        sched: Scheduler,
        me: int,
        name: str,
        *,
        secret: bytes,
        federation: str,
        directory: str | None,
        peer_names: dict[int, str],
    ) -> None:
        self.sched = sched
        self.me = me
        self.name = name
        self.secret = secret
        self.federation = federation
        self.directory = directory  # None: no shared memory (TCP), stream instead
        self.peer_names = peer_names
        self.store: Store | None = None
        self.arenas = ArenaMap(notify=sched.wake_from_any_thread)
        self._listener: socket.socket | None = None
        self._clients: dict[int, Connection] = {}  # producer federate -> our channel to it
        self._served: dict[int, Connection] = {}  # consumer federate -> its channel to us
        self._served_early: set[int] = set()  # consumers served by _serve_until_readable
        self._given: dict[int, set[int]] = {}  # consumer federate -> arenas sent to it
        self._asked: set[int] = set()  # producers whose answer we have not read yet
        self._lock = threading.Lock()
        self._plain = PlainPickler()  # reused: sends happen in the scheduler thread

    # -- lifecycle ----------------------------------------------------------------------

    def start(self, sends: bool) -> None:
        """Listen on the store channel (Unix only). A federate that ``sends``
        creates its store now: pre-faulting an arena takes a few hundred ms,
        which must not land in its first reaction."""
        load_pickle_extensions()  # the codes of what peers may send us (serialization)
        if self.directory is None:
            return
        if sends:
            self.local_store()
        self._listener, _ = transport.listen(self._address(self.me))
        threading.Thread(target=self._serve, name=f"{self.name}-store-accept", daemon=True).start()

    def prefetch(self, producers: list[int]) -> None:
        """Ask each upstream producer for its arenas now (its first one exists
        from its start), reading the answer whenever it comes: the first large
        message then finds its arena mapped, even if its producer has finished
        by the time this federate reads it."""
        if self.directory is None:
            return
        for src in producers:
            try:
                conn = self._channel(src)
                conn.send(Frame.ARENA_REQUEST)
            except (OSError, transport.ProtocolError) as exc:
                # A producer that died is the RTI's to report; its first message, if
                # any, then names the problem (_ensure_mapped).
                log.debug("%s: no arenas from federate %s yet: %s", self.name, src, exc)
                continue
            self._asked.add(src)

    def close(self, hand_over: bool = True) -> None:
        """Stop serving and unmap. ``hand_over``: first serve, for up to
        :data:`HANDOVER_S`, receivers that hold references into arenas they have
        not mapped yet (the memory goes with this process, not the references)."""
        if hand_over and self._listener is not None:
            self._hand_over()
        if self._listener is not None:
            transport.close_listener(self._listener)
            self._listener = None
        for conn in [*self._clients.values(), *self._served.values()]:
            with contextlib.suppress(KeyError, ValueError):
                self.sched.remove_reader(conn.sock)
            conn.close()
        self.arenas.close()
        if self.store is not None:
            self.store.close()

    def local_store(self) -> Store | None:
        """This federate's object store (created at start by federates with
        outputs, else on first use), or None where there is no shared memory
        (TCP)."""
        if self.store is None and self.directory is not None:
            self.store = Store()
        return self.store

    @property
    def listener(self) -> socket.socket | None:
        """The store channel's listening socket (None over TCP)."""
        return self._listener

    def _address(self, fid: int) -> str:
        return f"unix:{self.directory}/store-{fid}.sock"

    # -- sending ----------------------------------------------------------------------

    def encode(
        self, value: Any, receivers: list[int], threshold: int, mode: str
    ) -> list[bytes | memoryview]:
        """Frame payload parts for ``value`` going to ``receivers`` (one hold
        each). References when shared memory is available, else streamed."""
        store = self.local_store()
        arenas = self.arenas if self.directory is not None else None
        # pickle mode: one C-level pass for nearly every value (see PlainPickler), which
        # holds what already lies in shared memory for the receivers at once
        s = self._plain.dumps(value, threshold, store, arenas, receivers) if mode == "pickle" \
            else None  # fmt: skip
        if isinstance(s, bytes):
            return [_INLINE, s]
        if s is None:
            s = serialize(value, store=store, arenas=arenas, threshold=threshold, mode=mode)
        with s:
            for r in receivers:
                s.share(r)
            header = s.pack_header()
            raw = s.raw
            parts: list[bytes | memoryview] = [_FULL, _HEADER_LEN.pack(len(header)), header]
            if raw:
                parts.append(b"".join(raw))
            return parts

    # -- receiving ----------------------------------------------------------------------

    def decode(self, src: int, payload: memoryview, mode: str, copy_raw: bool) -> Any:
        """Rebuild a value sent by federate ``src``. ``copy_raw``: the payload
        lives in a reused receive buffer, so streamed buffers must be copied."""
        if len(payload) < 1:
            raise SerializationError("empty payload")
        kind = payload[0]
        payload = payload[1:]
        if kind == INLINE_KIND:
            if mode != "pickle":
                raise SerializationError(
                    "refused a pickle payload on a safe-mode link (pickle can run arbitrary code)"
                )
            try:
                return pickle.loads(payload)
            except Exception as exc:
                raise SerializationError(
                    f"corrupt pickle payload: {type(exc).__name__}: {exc}"
                ) from exc
        if kind != _FULL_KIND:
            raise SerializationError(f"unknown payload kind {kind}")
        if len(payload) < _HEADER_LEN.size:
            raise SerializationError("truncated payload: no serialized-header length")
        (hlen,) = _HEADER_LEN.unpack_from(payload)
        header = payload[_HEADER_LEN.size : _HEADER_LEN.size + hlen]
        rest = payload[_HEADER_LEN.size + hlen :]
        pos = 0

        # deserialize() parses the header once and asks for each item in order
        def resolve(item: Item) -> Any:
            nonlocal pos
            if item.kind == ITEM_REF:
                assert item.ref is not None
                self._ensure_mapped(src, item.ref)
                return self.arenas.buffer(item.ref, src)
            chunk = rest[pos : pos + item.length]
            if len(chunk) != item.length:
                raise SerializationError(
                    f"streamed buffer {item.raw_index} truncated ({len(chunk)} of "
                    f"{item.length} bytes)"
                )
            pos += item.length
            return bytearray(chunk) if copy_raw else chunk

        return deserialize(header, resolve, mode=mode)

    def _ensure_mapped(self, src: int, ref: Ref) -> None:
        if ref.arena_id in self.arenas:
            return
        if self.directory is None:
            raise SerializationError(f"{ref.describe()}: shared memory reference over a TCP link")
        who = self.peer_names.get(src, src)
        try:
            conn = self._channel(src)
            if src in self._asked:  # the answer to prefetch() may hold it
                self._read_answer(src, conn)
            if ref.arena_id not in self.arenas:
                # Strict request/response on this channel: the fds follow the request.
                conn.send(Frame.ARENA_REQUEST)
                self._asked.add(src)
                self._read_answer(src, conn)
        except (OSError, ObjectStoreError, transport.ProtocolError) as exc:
            self._drop_channel(src)
            raise SerializationError(
                f"{ref.describe()}: federate {who} left before this federate could map the "
                f"shared memory it sent ({exc})"
            ) from None
        if ref.arena_id not in self.arenas:
            raise SerializationError(f"{ref.describe()}: federate {who} does not have that arena")

    def _channel(self, src: int) -> Connection:
        """Our store channel to producer ``src`` (connected on first use)."""
        conn = self._clients.get(src)
        if conn is None:
            conn, _ = transport.connect(
                self._address(src),
                self.secret,
                {"federation": self.federation, "federate": self.me, "name": self.name},
            )
            self._clients[src] = conn
            self.sched.add_reader(conn.sock, functools.partial(self._on_client_readable, src))
        return conn

    def _read_answer(self, src: int, conn: Connection) -> None:
        """Map the arenas producer ``src`` sent in answer to our request."""
        self._serve_until_readable(conn)
        self._asked.discard(src)
        for info in recv_arena_fds(conn.sock):
            self.arenas.attach(info.arena_id, info.fd, info.size, owner=src)

    def _serve_until_readable(self, conn: Connection) -> None:
        """Wait for the answer on ``conn``, serving requests to our own store
        meanwhile. Our store is served by the scheduler thread, which is the
        one waiting here: when two federates decode each other's first arrays
        at the same moment, each waits for the other's answer, and neither
        would ever serve the other's request."""
        while True:
            with self._lock:  # re-read: the other side may be connecting to us right now
                served = [(p, c) for p, c in self._served.items() if not c.closed]
            ready, _, _ = select.select([conn.sock, *[c.sock for _, c in served]], [], [], 0.05)
            if conn.sock in ready:
                return
            for peer, c in served:
                if c.sock in ready:
                    self._on_served(peer, c)
                    self._served_early.add(peer)  # after: its own check is not needed here

    def send_releases(self) -> None:
        """Return the release tokens of received arrays that user code dropped."""
        if not self.arenas.has_releases():
            return
        releases = self.arenas.take_releases()
        by_owner: dict[Any, list[bytes]] = {}
        for rel in releases:
            by_owner.setdefault(rel.owner, []).append(rel.ref.pack())
        for owner, refs in by_owner.items():
            conn = self._clients.get(owner)
            if conn is None:
                continue  # that producer is gone; its memory went with it
            with contextlib.suppress(OSError):
                conn.send(Frame.RELEASE, *refs)

    def _on_client_readable(self, src: int) -> None:
        """The answer to :meth:`prefetch`; else the producer closed our channel to
        it (it sends nothing else)."""
        conn = self._clients.get(src)
        if conn is not None and src in self._asked:
            with contextlib.suppress(OSError, ObjectStoreError):
                self._read_answer(src, conn)
                return
        self._drop_channel(src)

    def _drop_channel(self, src: int) -> None:
        self._asked.discard(src)
        conn = self._clients.pop(src, None)
        if conn is not None:
            with contextlib.suppress(KeyError, ValueError):
                self.sched.remove_reader(conn.sock)
            conn.close()

    # -- serving other federates ----------------------------------------------------------

    def _serve(self) -> None:
        assert self._listener is not None
        gatekeeper.serve(
            self._listener,
            self.secret,
            self.federation,
            self.peer_names,
            self._add_consumer,
            name=f"{self.name} store",
        )

    def _add_consumer(self, conn: Connection, hello: dict[str, Any]) -> None:
        peer = hello["federate"]
        with self._lock:
            self._served[peer] = conn
        self.sched.add_reader(conn.sock, functools.partial(self._on_served, peer, conn))

    def _on_served(self, peer: int, conn: Connection) -> None:
        """Requests from a consumer, handled in the scheduler thread."""
        if peer in self._served_early:
            # Maybe reported readable, then served by _serve_until_readable in
            # an earlier callback of the same wake-up: read only what is there.
            self._served_early.discard(peer)
            if not conn.has_buffered_frame() and not select.select([conn.sock], [], [], 0)[0]:
                return
        try:
            while True:
                kind, payload = conn.recv()
                if kind == Frame.ARENA_REQUEST:
                    arenas = (self.store.arenas if self.store else []) + self.arenas.arenas
                    send_arena_fds(conn.sock, arenas)
                    self._given.setdefault(peer, set()).update(a.arena_id for a in arenas)
                elif kind == Frame.RELEASE:
                    self._release(peer, payload)
                else:
                    raise transport.ProtocolError(f"unexpected {kind.name} on the store channel")
                if not conn.has_buffered_frame():
                    return
        except (EOFError, OSError, transport.ProtocolError, SerializationError) as exc:
            if not isinstance(exc, EOFError):
                log.warning("%s: store channel of federate %s: %s", self.name, peer, exc)
            self.sched.remove_reader(conn.sock)
            conn.close()
            with self._lock:
                self._served.pop(peer, None)
            dropped = self.store.release_all_for(peer) if self.store else 0
            dropped += self.arenas.release_all_for(peer)
            if dropped:
                log.info("%s: dropped %d holds of departed federate %s", self.name, dropped, peer)

    def _unmapped(self) -> dict[Any, set[int]]:
        """Receivers still holding references into arenas they were never sent."""
        held = self.arenas.forwarded_arenas()
        if self.store is not None:
            for peer, ids in self.store.held_arenas().items():
                held.setdefault(peer, set()).update(ids)
        out: dict[Any, set[int]] = {}
        for peer, ids in held.items():
            if isinstance(peer, int):  # not our own holds (None)
                missing = ids - self._given.get(peer, set())
                if missing:
                    out[peer] = missing
        return out

    def _hand_over(self) -> None:
        """Serve our store channel until every live receiver holding a reference
        into one of our arenas has been given that arena: it asks as soon as it
        reads the message, and its channel closes if it finishes first (its holds
        go with it, :meth:`_on_served`)."""
        unmapped = self._unmapped()
        if not unmapped:
            return
        names = ", ".join(str(self.peer_names.get(p, p)) for p in unmapped)
        log.info("%s: waiting for %s to map what it was sent", self.name, names)
        deadline = time.monotonic() + HANDOVER_S
        while unmapped:
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning(
                    "%s: leaving after %g s although %s did not map what it was sent: "
                    "those messages are lost",
                    self.name,
                    HANDOVER_S,
                    ", ".join(str(self.peer_names.get(p, p)) for p in unmapped),
                )
                return
            with self._lock:
                served = [(p, c) for p, c in self._served.items() if not c.closed]
            ready = select.select([c.sock for _, c in served], [], [], min(left, 0.05))[0]
            for peer, c in served:
                if c.sock in ready:
                    self._on_served(peer, c)
            unmapped = self._unmapped()

    def _release(self, peer: int, payload: memoryview) -> None:
        if len(payload) % Ref.SIZE:
            raise SerializationError(f"RELEASE of {len(payload)} bytes is not a list of refs")
        for i in range(0, len(payload), Ref.SIZE):
            ref = Ref.unpack(payload[i : i + Ref.SIZE])
            if self.store is not None and self.store.owns(ref):
                self.store.release(ref, peer)
            else:
                self.arenas.release(ref, peer)


def link_options(threshold: Any, serialization: Any) -> tuple[int, str]:
    """Validated per-connection data-plane options (defaults: 64 KB, pickle).
    The arguments are the user's, as given to ``connect``: typed ``Any`` so
    that the compiled build reaches the checks below too."""
    from hprm_core.serialization import DEFAULT_THRESHOLD

    mode = serialization or "pickle"
    if mode not in ("pickle", "safe"):
        raise ValueError(f"serialization must be 'pickle' or 'safe', got {mode!r}")
    try:
        t = DEFAULT_THRESHOLD if threshold is None else int(threshold)
    except (TypeError, ValueError):
        raise ValueError(f"threshold must be a number of bytes, got {threshold!r}") from None
    if t < 0:
        raise ValueError(f"threshold must not be negative, got {t}")
    return t, mode
