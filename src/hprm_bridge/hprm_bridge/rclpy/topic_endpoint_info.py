"""``rclpy.topic_endpoint_info``: who publishes or subscribes a topic, and with what QoS.

``Node.get_publishers_info_by_topic`` answers with these, as ``ros2 topic info -v``
prints them. In a federation the answer comes from the federation graph (every ported
node labels itself with its endpoints and their QoS), so it is the same at every tag
of every run. The QoS is the one the node asked for, resolved as rmw_cyclonedds
reports it (a system default becomes the policy DDS applies, a zero duration
``Infinite``, a subscription has no lifespan), so a node that adapts its QoS to its
publishers' (as rosbag2 and rviz do) finds what it would under rclpy. The gid is
derived from the node, topic and place of the endpoint: stable from run to run.

Example::

    >>> from hprm_bridge.rclpy.qos import QoSProfile
    >>> info = endpoint_info("/talker", "pub", "/chatter", "std_msgs/msg/String",
    ...                      qos_fields(QoSProfile(depth=10)), 0)
    >>> (info.node_name, info.endpoint_type.name, info.qos_profile.depth)
    ('talker', 'PUBLISHER', 10)
    >>> str(info.qos_profile.deadline)  # no deadline asked for
    'Infinite'
"""

from __future__ import annotations

import enum
import hashlib
from typing import Any

from hprm_bridge.rclpy.duration import Duration, Infinite
from hprm_bridge.rclpy.qos import (
    _DURATIONS,
    DurabilityPolicy,
    HistoryPolicy,
    LivelinessPolicy,
    QoSProfile,
    ReliabilityPolicy,
    qos_profile_unknown,
)

__all__ = ["TopicEndpointInfo", "TopicEndpointTypeEnum"]

GID_SIZE = 24  # rmw's RMW_GID_STORAGE_SIZE in Humble


class TopicEndpointTypeEnum(enum.IntEnum):
    INVALID = 0
    PUBLISHER = 1
    SUBSCRIPTION = 2


class TopicEndpointInfo:
    """One endpoint of a topic: its node, type, kind, gid and QoS (rclpy's fields)."""

    def __init__(self, **kwargs: Any) -> None:
        unknown = set(kwargs) - {"node_name", "node_namespace", "topic_type", "endpoint_type",
                                 "endpoint_gid", "qos_profile"}  # fmt: skip
        if unknown:
            raise TypeError(f"TopicEndpointInfo got unexpected keyword(s): {sorted(unknown)}")
        self.node_name: str = kwargs.get("node_name", "")
        self.node_namespace: str = kwargs.get("node_namespace", "")
        self.topic_type: str = kwargs.get("topic_type", "")
        self.endpoint_type = TopicEndpointTypeEnum(
            kwargs.get("endpoint_type", TopicEndpointTypeEnum.INVALID)
        )
        self.endpoint_gid: list[int] = list(kwargs.get("endpoint_gid", []))
        qos = kwargs.get("qos_profile", qos_profile_unknown)
        self.qos_profile: QoSProfile = qos if isinstance(qos, QoSProfile) else QoSProfile(**qos)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopicEndpointInfo) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:  # as rclpy prints it (ros2 topic info -v)
        q = self.qos_profile
        history = q.history.name
        if q.history == HistoryPolicy.KEEP_LAST:
            history += f" ({q.depth})"
        return "\n".join([
            f"Node name: {self.node_name}",
            f"Node namespace: {self.node_namespace}",
            f"Topic type: {self.topic_type}",
            f"Endpoint type: {self.endpoint_type.name}",
            f"GID: {'.'.join(format(x, '02x') for x in self.endpoint_gid)}",
            "QoS profile:",
            f"  Reliability: {q.reliability.name}",
            f"  History (Depth): {history}",
            f"  Durability: {q.durability.name}",
            f"  Lifespan: {q.lifespan}",
            f"  Deadline: {q.deadline}",
            f"  Liveliness: {q.liveliness.name}",
            f"  Liveliness lease duration: {q.liveliness_lease_duration}",
        ])  # fmt: skip


def qos_fields(qos: QoSProfile) -> list[int]:
    """The profile as a node gave it, compact for its label (durations in ns)."""
    return [int(qos.history), qos.depth, int(qos.reliability), int(qos.durability),
            int(qos.liveliness), *(getattr(qos, d).nanoseconds for d in _DURATIONS)]  # fmt: skip


def resolved(fields: list[int], kind: str) -> QoSProfile:
    """The profile as rmw_cyclonedds reports an endpoint's (seen under Humble)."""
    history, depth, reliability, durability, liveliness, *spans = fields
    if history == HistoryPolicy.SYSTEM_DEFAULT:
        history = HistoryPolicy.KEEP_LAST
    durations = {
        name: Duration(nanoseconds=ns if ns > 0 else Infinite.nanoseconds)
        for name, ns in zip(_DURATIONS, spans, strict=True)
    }
    if kind == "sub":  # a writer's policy
        durations["lifespan"] = Infinite
    return QoSProfile(
        history=history,
        depth=0 if history == HistoryPolicy.KEEP_ALL else max(depth, 1),
        reliability=reliability or ReliabilityPolicy.RELIABLE,
        durability=durability or DurabilityPolicy.VOLATILE,
        liveliness=liveliness or LivelinessPolicy.AUTOMATIC,
        **durations,
    )


def endpoint_info(
    node: str, kind: str, topic: str, ros_type: str, qos: list[int] | None, place: int
) -> TopicEndpointInfo:
    """One endpoint of the graph (``node`` fully qualified; ``qos`` its
    :func:`qos_fields`, or None: unknown, as for the gateway's, which stand for plain
    ROS 2 endpoints that come and go; ``place`` its rank among the node's endpoints of
    that kind on that topic, so that every node derives the same gid for it)."""
    namespace, _, name = node.rpartition("/")
    kinds = TopicEndpointTypeEnum
    gid = hashlib.sha256(f"{node}\0{kind}\0{topic}\0{place}".encode()).digest()[:16]
    return TopicEndpointInfo(
        node_name=name,
        node_namespace=namespace or "/",
        topic_type=ros_type,
        endpoint_type=kinds.PUBLISHER if kind == "pub" else kinds.SUBSCRIPTION,
        endpoint_gid=list(gid) + [0] * (GID_SIZE - len(gid)),
        qos_profile=qos_profile_unknown if qos is None else resolved(qos, kind),
    )
