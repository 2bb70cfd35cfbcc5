"""``rclpy.qos``: profiles are accepted and recorded; between HPRM federates
every message is delivered in order (reliable, unbounded by depth), which is
what deterministic execution needs."""

from hprm_bridge.wire.qos import (
    QOS_DEFAULT as qos_profile_default,
)
from hprm_bridge.wire.qos import (
    QOS_SENSOR_DATA as qos_profile_sensor_data,
)
from hprm_bridge.wire.qos import (
    QOS_SYSTEM_DEFAULT as qos_profile_system_default,
)
from hprm_bridge.wire.qos import Durability as DurabilityPolicy
from hprm_bridge.wire.qos import History as HistoryPolicy
from hprm_bridge.wire.qos import QoSProfile
from hprm_bridge.wire.qos import Reliability as ReliabilityPolicy

__all__ = [
    "DurabilityPolicy",
    "HistoryPolicy",
    "QoSProfile",
    "ReliabilityPolicy",
    "qos_profile_default",
    "qos_profile_sensor_data",
    "qos_profile_system_default",
]
