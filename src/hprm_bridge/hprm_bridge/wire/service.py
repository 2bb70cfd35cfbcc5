"""Service servers: what rmw_cyclonedds makes of a ROS 2 service, without ROS.

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
"""

from __future__ import annotations

import secrets
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


def envelope_types(
    types: TypeRegistry, srv_type: str, request: str, response: str
) -> tuple[str, str]:
    """Register ``srv_type``'s request and response (``.srv`` halves) with the
    request header first; returns their type names."""
    return (
        types.define(f"{srv_type}_Request", _HEADER + request),
        types.define(f"{srv_type}_Response", _HEADER + response),
    )


class Service:
    """A service server; create with :meth:`Node.create_service`. ``callback``
    gets each request (with ``client_guid`` and ``sequence_number``), in
    :meth:`Node.spin_once`, and answers later or at once with :meth:`reply`."""

    def __init__(self, node: Node, srv_type: str, request: str, response: str, name: str,
                 callback: Callable[[Service, Any], None]) -> None:  # fmt: skip
        self.node = node
        self.request_type, self.response_type = envelope_types(node.types, srv_type, request,
                                                               response)  # fmt: skip
        self.service_name = naming.expand_topic_name(name, node.name, node.namespace)
        self.callback = callback
        self.malformed_count = 0
        ident = Qos(Policy.Userdata(f"serviceid={secrets.token_hex(16)};".encode()))
        participant = node._participant
        rq = Topic(participant, f"rq{self.service_name}Request",
                   node.types.idl_struct(self.request_type))  # fmt: skip
        rr = Topic(participant, f"rr{self.service_name}Reply",
                   node.types.idl_struct(self.response_type))  # fmt: skip
        self._topics = (rq, rr)
        self._reader = DataReader(participant, rq, to_dds(SERVICES_QOS) + ident)
        self._writer = DataWriter(
            participant,
            rr,
            to_dds(SERVICES_QOS)
            + ident
            + Qos(Policy.DataRepresentation(use_cdrv0_representation=True)),
        )
        self._condition = ReadCondition(self._reader, _ANY)

    @property
    def gids(self) -> tuple[bytes, bytes]:
        """(request reader, reply writer) GIDs, for ``ros_discovery_info``."""
        return (discovery.gid_from_guid(self._reader.guid),
                discovery.gid_from_guid(self._writer.guid))  # fmt: skip

    def _serve(self) -> int:
        taken = ddspy_take(self._reader._ref, _ANY, 64)
        if isinstance(taken, int):
            return 0
        served = 0
        for data, info in taken:
            if not info.valid_data:
                continue
            try:
                request = self.node.types.decode(data, self.request_type)
            except MalformedSampleError as exc:
                self.malformed_count += 1
                self.node.get_logger().warning("%s: dropped a malformed request: %s",
                                               self.service_name, exc)  # fmt: skip
                continue
            self.callback(self, request)
            served += 1
        return served

    def reply(self, request: Any, **fields: Any) -> None:
        """Answer ``request`` with a response made of ``fields``."""
        header = {"client_guid": request.client_guid, "sequence_number": request.sequence_number}
        response = self.node.types.new(self.response_type, **header, **fields)
        deadline = time.monotonic() + REPLY_WAIT_S
        while not self._writer.get_matched_subscriptions() and time.monotonic() < deadline:
            time.sleep(0.01)
        ddspy_write(self._writer._ref, self.node.types.encode(response, self.response_type))
