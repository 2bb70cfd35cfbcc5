"""Services: what rmw_cyclonedds makes of a ROS 2 service, without ROS.

A service ``/talker/get_parameters`` is two DDS topics (rmw_cyclonedds_cpp
``rmw_node.cpp``, humble, ``rmw_init_cs``): requests arrive on
``rq/talker/get_parametersRequest`` and replies leave on
``rr/talker/get_parametersReply``, of types ``pkg::srv::dds_::Name_Request_`` /
``Name_Response_``. Each sample starts with rmw_cyclonedds' request header,
``uint64 client_guid`` and ``int64 sequence_number`` (``cdds_request_header_t``,
``serdata.cpp``), which the reply repeats so that the calling client picks its
own reply. The request reader and reply writer carry ``serviceid=ID;`` in their
USER_DATA: a client counts the service as available once it has matched a
request reader and a reply writer with the same id (``rmw_service_server_is_available``).

The request and reply types are registered here as messages with those two
header fields first (:func:`envelope_types`). Like rmw_cyclonedds'
``rmw_send_response``, a reply waits briefly for the client's reply reader to
be matched, or it would be lost (volatile, reliable).

A :class:`Client` is the mirror image: it writes requests on ``rq/...Request``
with ``clientid=ID;`` in its endpoints' USER_DATA (rmw_cyclonedds' servers look
for the reply reader of that id before they answer) and takes the replies that
carry its own ``client_guid``. A request made while no server is matched would be
lost, so it waits in the client until one is (``rclpy``'s users call
``wait_for_service`` first for the same reason), and a little longer
(:data:`SETTLE_S`): the client sees the server before the server has matched the
client, and a volatile reader drops what was written before it matched (seen in
tests: of 17 calls queued before discovery, the 4th to the 17th were lost). And
no more than the services' history depth are in flight at once: both ends keep
the last 10 (rmw's service QoS), so a burst of more loses the oldest (seen too:
of 56 queued calls the server got the first 9 and the last).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cyclonedds._clayer import ddspy_take, ddspy_write
from cyclonedds.core import InstanceState, ReadCondition, SampleState, ViewState
from cyclonedds.pub import DataWriter
from cyclonedds.qos import Policy, Qos
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from . import discovery, naming
from .errors import MalformedSampleError
from .qos import QoSProfile, to_dds

if TYPE_CHECKING:
    from .node import Node
    from .typesys import TypeRegistry

_HEADER = "uint64 client_guid\nint64 sequence_number\n"
_ANY = SampleState.Any | ViewState.Any | InstanceState.Any
SERVICES_QOS = QoSProfile(depth=10)  # rmw_qos_profile_services_default
REPLY_WAIT_S = 1.0  # longest wait for the caller's reply reader
SETTLE_S = 0.25  # from seeing a server to sending it requests (its side of discovery)


def envelope_types(
    types: TypeRegistry, srv_type: str, request: str, response: str
) -> tuple[str, str]:
    """Register ``srv_type``'s request and response (``.srv`` halves) with the
    request header first; returns their type names. Their DDS names are the
    halves' (``pkg::srv::dds_::Name_Request_``), their registry names their own
    (``pkg/srv/Name_RequestEnvelope``): the halves themselves, without the header,
    are what a ported node's calls carry."""

    def envelope(half: str, fields: str) -> str:
        dds_name = naming.dds_type_name(f"{srv_type}{half}")
        return types.define(f"{srv_type}{half}Envelope", _HEADER + fields, dds_name=dds_name)

    return envelope("_Request", request), envelope("_Response", response)


class _Endpoints:
    """The reader and writer of one end of a service: a server reads requests and
    writes replies, a client the other way round. Both carry ``ROLE=ID;`` in their
    USER_DATA, as rmw_cyclonedds' do."""

    def __init__(self, node: Node, srv_type: str, request: str, response: str, name: str,
                 role: str) -> None:  # fmt: skip
        self.node = node
        self.request_type, self.response_type = envelope_types(node.types, srv_type, request,
                                                               response)  # fmt: skip
        self.service_name = naming.expand_topic_name(name, node.name, node.namespace)
        self.malformed_count = 0
        ident = Qos(Policy.Userdata(f"{role}={secrets.token_hex(16)};".encode()))
        participant = node._participant
        rq = Topic(participant, f"rq{self.service_name}Request",
                   node.types.idl_struct(self.request_type))  # fmt: skip
        rr = Topic(participant, f"rr{self.service_name}Reply",
                   node.types.idl_struct(self.response_type))  # fmt: skip
        self._topics = (rq, rr)
        server = role == "serviceid"
        self._reader = DataReader(participant, rq if server else rr, to_dds(SERVICES_QOS) + ident)
        self._writer = DataWriter(
            participant,
            rr if server else rq,
            to_dds(SERVICES_QOS)
            + ident
            + Qos(Policy.DataRepresentation(use_cdrv0_representation=True)),
        )
        self._condition = ReadCondition(self._reader, _ANY)
        self._read_type = self.request_type if server else self.response_type

    @property
    def gids(self) -> tuple[bytes, bytes]:
        """(reader, writer) GIDs, for ``ros_discovery_info``."""
        return (discovery.gid_from_guid(self._reader.guid),
                discovery.gid_from_guid(self._writer.guid))  # fmt: skip

    def _taken(self) -> list[Any]:
        """What the reader holds, decoded; a malformed sample is counted and logged."""
        taken = ddspy_take(self._reader._ref, _ANY, 64)
        if isinstance(taken, int):
            return []
        decoded = []
        for data, info in taken:
            if not info.valid_data:
                continue
            try:
                decoded.append(self.node.types.decode(data, self._read_type))
            except MalformedSampleError as exc:
                self.malformed_count += 1
                self.node.get_logger().warning("%s: dropped a malformed sample: %s",
                                               self.service_name, exc)  # fmt: skip
        return decoded

    def _write(self, msg: Any, ros_type: str) -> None:
        ddspy_write(self._writer._ref, self.node.types.encode(msg, ros_type))


class Service(_Endpoints):
    """A service server; create with :meth:`Node.create_service`. ``callback``
    gets each request (with ``client_guid`` and ``sequence_number``), in
    :meth:`Node.spin_once`, and answers later or at once with :meth:`reply`."""

    def __init__(self, node: Node, srv_type: str, request: str, response: str, name: str,
                 callback: Callable[[Service, Any], None]) -> None:  # fmt: skip
        super().__init__(node, srv_type, request, response, name, "serviceid")
        self.callback = callback

    def _serve(self) -> int:
        requests = self._taken()
        for request in requests:
            self.callback(self, request)
        return len(requests)

    def reply(self, request: Any, **fields: Any) -> None:
        """Answer ``request`` with a response made of ``fields``."""
        header = {"client_guid": request.client_guid, "sequence_number": request.sequence_number}
        response = self.node.types.new(self.response_type, **header, **fields)
        deadline = time.monotonic() + REPLY_WAIT_S
        while not self._writer.get_matched_subscriptions() and time.monotonic() < deadline:
            time.sleep(0.01)
        self._write(response, self.response_type)


class Client(_Endpoints):
    """A service client; create with :meth:`Node.create_client`. :meth:`call`
    sends a request; its ``done`` gets the reply (with its header fields), in
    :meth:`Node.spin_once`."""

    def __init__(self, node: Node, srv_type: str, request: str, response: str,
                 name: str) -> None:  # fmt: skip
        super().__init__(node, srv_type, request, response, name, "clientid")
        self._guid = int.from_bytes(secrets.token_bytes(8), "little") >> 1  # fits int64 too
        self._sequence = 0
        self._pending: dict[int, Callable[[Any], None]] = {}
        self._unsent: list[Any] = []  # requests made before a server was matched
        self._ready_since: float | None = None  # when service_is_ready() turned True
        self._in_flight = 0  # sent, not yet answered
        self._lock = threading.Lock()

    def service_is_ready(self) -> bool:
        """A server's request reader and reply writer are matched (rclpy's meaning)."""
        return bool(self._writer.get_matched_subscriptions()) and bool(
            self._reader.get_matched_publications()
        )

    def call(self, done: Callable[[Any], None], **fields: Any) -> None:
        """Send a request made of ``fields``; ``done(reply)`` runs when it is answered."""
        with self._lock:
            self._sequence += 1
            header = {"client_guid": self._guid, "sequence_number": self._sequence}
            request = self.node.types.new(self.request_type, **header, **fields)
            self._pending[self._sequence] = done
            self._unsent.append(request)
        self._send()

    def _send(self) -> None:
        with self._lock:
            room = SERVICES_QOS.depth - self._in_flight
            if not self._unsent or room <= 0 or not self._settled():
                return
            batch, self._unsent = self._unsent[:room], self._unsent[room:]
            self._in_flight += len(batch)
        for request in batch:
            self._write(request, self.request_type)

    def _settled(self) -> bool:
        """A server matched, and for long enough to have matched this client too."""
        if not self.service_is_ready():
            self._ready_since = None
            return False
        now = time.monotonic()
        if self._ready_since is None:
            self._ready_since = now
        return now - self._ready_since >= SETTLE_S

    def _take(self) -> int:
        self._send()
        answered = 0
        for reply in self._taken():
            if reply.client_guid != self._guid:
                continue  # another client's: every client reads every reply
            with self._lock:
                done = self._pending.pop(reply.sequence_number, None)
                self._in_flight -= done is not None
            if done is not None:
                done(reply)
                answered += 1
        if answered:
            self._send()  # what waited for room
        return answered
