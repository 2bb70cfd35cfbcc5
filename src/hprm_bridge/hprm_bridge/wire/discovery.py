"""ROS 2 graph discovery: GIDs and the ``ros_discovery_info`` topic.

DDS discovery tells a ROS 2 tool which participants, readers and writers exist,
but not which *node* owns an endpoint: ROS 2 Humble publishes that separately.
Every participant writes a ``rmw_dds_common/msg/ParticipantEntitiesInfo``
sample describing all its nodes and their endpoint GIDs; ``ros2 node list`` and
``ros2 topic info -v`` join it with DDS discovery data (rmw_dds_common
``GraphCache``). Conventions, with sources:

* Topic ``ros_discovery_info`` with no ``rt/`` prefix (rmw_cyclonedds_cpp
  ``rmw_context_impl_t::init()`` in ``src/rmw_node.cpp``, humble: created with
  ``avoid_ros_namespace_conventions = true``), type
  ``rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_``.
* Writer QoS: reliable, transient-local, keep-last 1, so late joiners get the
  latest description (same function). Readers: keep-all, ignoring the local
  participant.
* Message layout (rmw_dds_common ``msg/Gid.msg``, ``NodeEntitiesInfo.msg``,
  ``ParticipantEntitiesInfo.msg``, humble): ``Gid`` is ``char[24] data``;
  ``NodeEntitiesInfo`` is ``string<=256 node_namespace``, ``string<=256
  node_name``, ``Gid[] reader_gid_seq``, ``Gid[] writer_gid_seq``;
  ``ParticipantEntitiesInfo`` is ``Gid gid`` + ``NodeEntitiesInfo[]``.
* A GID is the entity's 16-byte DDS GUID (prefix + entity id, network order)
  zero-padded to Humble's ``RMW_GID_STORAGE_SIZE`` of 24 bytes
  (``convert_guid_to_gid()`` in rmw_cyclonedds_cpp ``src/rmw_node.cpp``;
  ``rmw/types.h`` humble).
* The participant announces the enclave in its USER_DATA QoS as
  ``enclave=/;`` (``rmw_context_impl_t::init()``); rmw_dds_common's graph
  cache only registers participants that carry it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .naming import normalize_namespace
from .qos import Durability, History, QoSProfile, to_dds

if TYPE_CHECKING:
    from cyclonedds.qos import Qos

    from .typesys import TypeRegistry

DISCOVERY_TOPIC = "ros_discovery_info"
"""DDS topic name of the ROS 2 graph information (no ``rt/`` prefix)."""
DISCOVERY_TYPE = "rmw_dds_common/msg/ParticipantEntitiesInfo"
"""ROS type of :data:`DISCOVERY_TOPIC`."""
GID_SIZE = 24
"""Humble's ``RMW_GID_STORAGE_SIZE``."""


def gid_from_guid(guid: uuid.UUID | bytes) -> bytes:
    """The 24-byte Humble GID of a DDS entity: its 16-byte GUID, then 8 zero bytes."""
    raw = guid.bytes if isinstance(guid, uuid.UUID) else bytes(guid)
    if len(raw) != 16:
        raise ValueError(f"a DDS GUID has 16 bytes, got {len(raw)}")
    return raw + bytes(GID_SIZE - 16)


def user_data(enclave: str = "/") -> bytes:
    """Participant USER_DATA rmw_cyclonedds sets: ``enclave=<enclave>;``."""
    return f"enclave={enclave};".encode()


def writer_qos() -> Qos:
    """QoS of the ``ros_discovery_info`` writer (reliable, transient-local, keep-last 1)."""
    return to_dds(QoSProfile(depth=1, durability=Durability.TRANSIENT_LOCAL))


def reader_qos() -> Qos:
    """QoS of a ``ros_discovery_info`` reader (reliable, transient-local, keep-all)."""
    return to_dds(
        QoSProfile(depth=1, durability=Durability.TRANSIENT_LOCAL, history=History.KEEP_ALL),
        ignore_local=True,
    )


@dataclass
class NodeInfo:
    """One node of a participant, as ``ros_discovery_info`` describes it."""

    namespace: str
    name: str
    reader_gids: list[bytes] = field(default_factory=list)
    writer_gids: list[bytes] = field(default_factory=list)


@dataclass
class ParticipantInfo:
    """A decoded ``ParticipantEntitiesInfo`` sample."""

    gid: bytes
    nodes: list[NodeInfo]


def encode_participant_info(types: TypeRegistry, info: ParticipantInfo) -> memoryview:
    """CDR of a ``ParticipantEntitiesInfo`` sample describing ``info``."""

    def gid(raw: bytes) -> object:
        if len(raw) != GID_SIZE:
            raise ValueError(f"GID must have {GID_SIZE} bytes, got {len(raw)}")
        return types.new("rmw_dds_common/msg/Gid", data=np.frombuffer(raw, dtype=np.uint8).copy())

    msg = types.new(
        DISCOVERY_TYPE,
        gid=gid(info.gid),
        node_entities_info_seq=[
            types.new(
                "rmw_dds_common/msg/NodeEntitiesInfo",
                node_namespace=normalize_namespace(n.namespace),
                node_name=n.name,
                reader_gid_seq=[gid(g) for g in n.reader_gids],
                writer_gid_seq=[gid(g) for g in n.writer_gids],
            )
            for n in info.nodes
        ],
    )
    return types.encode(msg, DISCOVERY_TYPE)


def decode_participant_info(types: TypeRegistry, raw: bytes | memoryview) -> ParticipantInfo:
    """Decode a ``ros_discovery_info`` sample (from us or from any ROS 2 Humble node)."""
    msg = types.decode(raw, DISCOVERY_TYPE)

    def gid(g: object) -> bytes:
        return bytes(np.asarray(g.data, dtype=np.uint8))  # type: ignore[attr-defined]

    return ParticipantInfo(
        gid=gid(msg.gid),
        nodes=[
            NodeInfo(
                namespace=n.node_namespace,
                name=n.node_name,
                reader_gids=[gid(g) for g in n.reader_gid_seq],
                writer_gids=[gid(g) for g in n.writer_gid_seq],
            )
            for n in msg.node_entities_info_seq
        ],
    )
