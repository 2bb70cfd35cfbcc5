"""The gateway on the ROS-free wire client: one DDS participant, every ported
node announced as a node of it (``ros_discovery_info``, as an rclpy context
announces the nodes it holds), with the endpoints the gateway keeps for it."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from hprm_bridge import messages
from hprm_bridge.wire import Node, NodeInfo, QoSProfile


class WireBackend:
    """See :mod:`hprm_bridge.backends` for the interface."""

    name = "wire"

    def __init__(self, node_name: str) -> None:
        self._node = Node(node_name)
        self._owned: dict[str, tuple[list[Any], list[Any]]] = {}  # node -> (readers, writers)

    def _own(self, owners: list[str], reader: Any = None, writer: Any = None) -> None:
        for fqn in owners:
            readers, writers = self._owned.setdefault(fqn, ([], []))
            if reader is not None:
                readers.append(reader)
            if writer is not None:
                writers.append(writer)

    def publisher(
        self, msg_type: str, topic: str, qos: QoSProfile, *, match: bool, owners: list[str]
    ) -> Callable[[Any], None]:
        pub = self._node.create_publisher(msg_type, topic, qos, match_qos=match)
        self._own(owners, writer=pub)
        return pub.publish

    def subscription(
        self,
        msg_type: str,
        topic: str,
        callback: Callable[[Any], None],
        qos: QoSProfile,
        *,
        match: bool,
        owners: list[str],
    ) -> None:
        sub = self._node.create_subscription(msg_type, topic, callback, qos, raw=True,
                                             match_qos=match)  # fmt: skip
        self._own(owners, reader=sub)

    def service(
        self,
        srv_type: str,
        request: str,
        response: str,
        name: str,
        called: Callable[[Callable[..., None], Any], None],
        owner: str,
    ) -> None:
        def arrived(srv: Any, req: Any) -> None:
            called(lambda **answer: srv.reply(req, **answer), _fields(req))

        srv = self._node.create_service(srv_type, request, response, name, arrived)
        reader, writer = _Gid(srv, 0), _Gid(srv, 1)
        self._own([owner], reader=reader, writer=writer)

    def client(
        self, srv_type: str, request: str, response: str, name: str, owner: str
    ) -> Callable[[dict[str, Any], Callable[[Any], None]], None]:
        client = self._node.create_client(srv_type, request, response, name)
        self._own([owner], reader=_Gid(client, 0), writer=_Gid(client, 1))

        def call(fields: dict[str, Any], done: Callable[[Any], None]) -> None:
            client.call(lambda reply: done(_fields(reply)), **fields)

        return call

    def announce(self, nodes: list[str]) -> None:
        self._node.announce_nodes([
            NodeInfo(*fqn.rsplit("/", 1), reader_gids=[e.gid for e in self._owned.get(fqn,
                     ([], []))[0]], writer_gids=[e.gid for e in self._owned.get(fqn, ([], []))[1]])
            for fqn in nodes
        ])  # fmt: skip

    def spin_once(self, timeout: float) -> None:
        self._node.spin_once(timeout)

    def close(self) -> None:
        self._node.close()


def _fields(envelope: Any) -> SimpleNamespace:
    """A request's or reply's fields without rmw's header, as HPRM's message classes."""
    fields = {f: getattr(envelope, f) for f in envelope.__dataclass_fields__
              if f not in ("client_guid", "sequence_number")}  # fmt: skip
    for value in fields.values():
        for item in value if isinstance(value, list) else [value]:
            messages.adopt(item)  # a message as HPRM's class; anything else as it is
    return SimpleNamespace(**fields)


class _Gid:
    """One of a service's or a client's two endpoints, by its GID."""

    def __init__(self, srv: Any, end: int) -> None:
        self.gid = srv.gids[end]
