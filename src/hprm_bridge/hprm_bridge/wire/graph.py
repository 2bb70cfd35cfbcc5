"""The endpoints other participants have on the ROS 2 graph, with their QoS.

DDS discovery already knows every remote writer and reader, its topic, type
and QoS: the built-in ``DCPSPublication`` / ``DCPSSubscription`` topics carry
them. This is what rclpy's ``get_publishers_info_by_topic`` reports and what
``ros2 topic info -v`` prints. A node reads them here so that an endpoint
created with ``match_qos=True`` can follow them (:func:`.qos.match_publishers`,
:func:`.qos.match_subscriptions`): a best-effort camera driver or a latched
map publisher is then heard without anyone writing its QoS down.

Only endpoints of other participants are listed; which *node* owns one is in
``ros_discovery_info`` (:mod:`.discovery`), not read here, so node names are
reported as ROS 2 reports an unknown one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cyclonedds.builtin import (
    BuiltinDataReader,
    BuiltinTopicDcpsPublication,
    BuiltinTopicDcpsSubscription,
)
from cyclonedds.core import InstanceState, ReadCondition, SampleState, ViewState

from .discovery import gid_from_guid
from .naming import dds_topic_name
from .qos import QoSProfile, from_dds

UNKNOWN_NODE = "_NODE_NAME_UNKNOWN_"
"""The name ROS 2 tools print for an endpoint whose node is not known."""
_BATCH = 1024


@dataclass(frozen=True)
class TopicEndpointInfo:
    """One remote endpoint (the fields of rclpy's ``TopicEndpointInfo`` we know)."""

    topic_type: str  # the DDS type name, pkg::msg::dds_::Name_
    endpoint_gid: bytes
    qos_profile: QoSProfile
    node_name: str = UNKNOWN_NODE


class Graph:
    """The remote publishers and subscriptions a participant has discovered.

    :attr:`condition` triggers when one appears or leaves; :meth:`refresh`
    then reads the current set. Cheap to keep: two built-in readers per node.
    """

    def __init__(self, participant: Any) -> None:
        self._own = participant.guid
        self._readers = {
            "publishers": BuiltinDataReader(participant, BuiltinTopicDcpsPublication),
            "subscriptions": BuiltinDataReader(participant, BuiltinTopicDcpsSubscription),
        }
        self._news = [
            ReadCondition(r, SampleState.NotRead | ViewState.Any | InstanceState.Any)
            for r in self._readers.values()
        ]
        self._alive = [
            ReadCondition(r, SampleState.Any | ViewState.Any | InstanceState.Alive)
            for r in self._readers.values()
        ]
        self._known: dict[str, dict[str, list[TopicEndpointInfo]]] = {}
        self.refresh()

    @property
    def conditions(self) -> list[Any]:
        """Conditions a node's wait set attaches, to wake when the graph changes."""
        return list(self._news)

    def changed(self) -> bool:
        """Whether an endpoint appeared or left since the last :meth:`refresh`."""
        return any(c.triggered for c in self._news)

    def refresh(self) -> None:
        """Read the remote endpoints alive now (marks the news read)."""
        for (kind, reader), news, alive in zip(
            self._readers.items(), self._news, self._alive, strict=True
        ):
            if news.triggered:
                reader.read(N=_BATCH, condition=news)  # marks departures read, too
            by_topic: dict[str, list[TopicEndpointInfo]] = {}
            for e in reader.read(N=_BATCH, condition=alive):
                if e.participant_key == self._own:
                    continue
                by_topic.setdefault(e.topic_name, []).append(
                    TopicEndpointInfo(e.type_name, gid_from_guid(e.key), from_dds(e.qos))
                )
            self._known[kind] = by_topic

    def publishers(self, topic: str) -> list[TopicEndpointInfo]:
        """Remote publishers on ROS topic ``topic`` (an absolute name)."""
        return list(self._known["publishers"].get(dds_topic_name(topic), ()))

    def subscriptions(self, topic: str) -> list[TopicEndpointInfo]:
        """Remote subscriptions on ROS topic ``topic`` (an absolute name)."""
        return list(self._known["subscriptions"].get(dds_topic_name(topic), ()))
