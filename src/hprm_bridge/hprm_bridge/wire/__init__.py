"""A ROS-free ROS 2 Humble wire client: topics over DDS, spoken like rmw_cyclonedds.

Public API (see the package README for examples)::

    from hprm_bridge.wire import Node, QoSProfile, QOS_SENSOR_DATA

Modules, one per concept: :mod:`.naming` (topic/type name mangling),
:mod:`.qos` (profiles, DDS mapping, compatibility), :mod:`.typesys` (message
types, ``.msg`` discovery), :mod:`.cdr` (XCDR1 codec), :mod:`.idl` (DDS type
declarations), :mod:`.discovery` (``ros_discovery_info``, GIDs),
:mod:`.dds_config` (generated Cyclone XML), :mod:`.node` (Node),
:mod:`.endpoint` (Publisher, Subscription), :mod:`.graph` (remote endpoints
and their QoS), :mod:`.service` (service servers).
"""

import importlib
from typing import TYPE_CHECKING, Any

# Where each public name lives. Loaded on first use (PEP 562): most of them need
# cyclonedds, which takes a quarter of a second to import, and every ported node imports
# this package for its message types (``.typesys``) without ever speaking DDS.
_HOMES = {
    "DdsConfig": "dds_config",
    "NodeInfo": "discovery",
    "ParticipantInfo": "discovery",
    "decode_participant_info": "discovery",
    "gid_from_guid": "discovery",
    "MalformedSampleError": "errors",
    "MsgParseError": "errors",
    "UnknownTypeError": "errors",
    "WireError": "errors",
    "InvalidNameError": "naming",
    "dds_topic_name": "naming",
    "dds_type_name": "naming",
    "Node": "node",
    "Publisher": "node",
    "Subscription": "node",
    "INFINITE": "qos",
    "QOS_DEFAULT": "qos",
    "QOS_LATCHED": "qos",
    "QOS_SENSOR_DATA": "qos",
    "QOS_SYSTEM_DEFAULT": "qos",
    "Durability": "qos",
    "History": "qos",
    "Liveliness": "qos",
    "QoSProfile": "qos",
    "Reliability": "qos",
    "check_compatible": "qos",
    "TypeRegistry": "typesys",
    "default_registry": "typesys",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


if TYPE_CHECKING:
    from .dds_config import DdsConfig
    from .discovery import NodeInfo, ParticipantInfo, decode_participant_info, gid_from_guid
    from .errors import MalformedSampleError, MsgParseError, UnknownTypeError, WireError
    from .naming import InvalidNameError, dds_topic_name, dds_type_name
    from .node import Node, Publisher, Subscription
    from .qos import (
        INFINITE,
        QOS_DEFAULT,
        QOS_LATCHED,
        QOS_SENSOR_DATA,
        QOS_SYSTEM_DEFAULT,
        Durability,
        History,
        Liveliness,
        QoSProfile,
        Reliability,
        check_compatible,
    )
    from .typesys import TypeRegistry, default_registry

__all__ = [
    "INFINITE",
    "QOS_DEFAULT",
    "QOS_LATCHED",
    "QOS_SENSOR_DATA",
    "QOS_SYSTEM_DEFAULT",
    "DdsConfig",
    "Durability",
    "History",
    "InvalidNameError",
    "Liveliness",
    "MalformedSampleError",
    "MsgParseError",
    "Node",
    "NodeInfo",
    "ParticipantInfo",
    "Publisher",
    "QoSProfile",
    "Reliability",
    "Subscription",
    "TypeRegistry",
    "UnknownTypeError",
    "WireError",
    "check_compatible",
    "dds_topic_name",
    "dds_type_name",
    "decode_participant_info",
    "default_registry",
    "gid_from_guid",
]
