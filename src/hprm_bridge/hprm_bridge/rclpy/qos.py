"""``rclpy.qos``: QoS profiles as rclpy spells them, accepted and recorded.

Between HPRM federates every message is delivered, in tag order, whatever
the profile says: a ``depth`` of 1 does not drop frames, ``BEST_EFFORT``
does not lose any. That is what deterministic execution needs (the same
inputs, every run); the profile matters again where a topic leaves the
federation for plain ROS 2 (the bridge). The names, values and checks are
rclpy's, so ``QoSProfile(depth=5)``, ``qos_profile_sensor_data`` and a
``QoSProfile()`` missing its depth behave as node code expects.

Example::

    >>> from hprm_bridge.rclpy.qos import QoSProfile, ReliabilityPolicy
    >>> QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT).depth
    5
"""

from __future__ import annotations

import enum
from typing import Any

from hprm_bridge.rclpy.duration import Duration

__all__ = [
    "DurabilityPolicy",
    "HistoryPolicy",
    "InvalidQoSProfileException",
    "LivelinessPolicy",
    "QoSDurabilityPolicy",
    "QoSHistoryPolicy",
    "QoSLivelinessPolicy",
    "QoSPolicyEnum",
    "QoSPolicyKind",
    "QoSPresetProfiles",
    "QoSProfile",
    "QoSReliabilityPolicy",
    "ReliabilityPolicy",
    "qos_policy_name_from_kind",
    "qos_profile_action_status_default",
    "qos_profile_parameter_events",
    "qos_profile_parameters",
    "qos_profile_sensor_data",
    "qos_profile_services_default",
    "qos_profile_system_default",
    "qos_profile_unknown",
]


class QoSPolicyKind(enum.IntEnum):
    """rmw's bit for each policy (which one an incompatible-QoS event is about)."""

    INVALID = 1 << 0
    DURABILITY = 1 << 1
    DEADLINE = 1 << 2
    LIVELINESS = 1 << 3
    RELIABILITY = 1 << 4
    HISTORY = 1 << 5
    LIFESPAN = 1 << 6
    DEPTH = 1 << 7
    LIVELINESS_LEASE_DURATION = 1 << 8
    AVOID_ROS_NAMESPACE_CONVENTIONS = 1 << 9


def qos_policy_name_from_kind(policy_kind: QoSPolicyKind | int) -> str:
    return QoSPolicyKind(policy_kind).name


class QoSPolicyEnum(enum.IntEnum):
    """A policy's values, with the lower-case names command lines use (``best_effort``)."""

    @classmethod
    def short_keys(cls) -> list[str]:
        return [k.lower() for k in cls.__members__]

    @classmethod
    def get_from_short_key(cls, name: str) -> int:
        return cls[name.upper()].value

    @property
    def short_key(self) -> str:
        return self.name.lower()


class HistoryPolicy(QoSPolicyEnum):
    SYSTEM_DEFAULT = 0
    KEEP_LAST = 1
    KEEP_ALL = 2
    UNKNOWN = 3


class ReliabilityPolicy(QoSPolicyEnum):
    SYSTEM_DEFAULT = 0
    RELIABLE = 1
    BEST_EFFORT = 2
    UNKNOWN = 3


class DurabilityPolicy(QoSPolicyEnum):
    SYSTEM_DEFAULT = 0
    TRANSIENT_LOCAL = 1
    VOLATILE = 2
    UNKNOWN = 3


class LivelinessPolicy(QoSPolicyEnum):
    SYSTEM_DEFAULT = 0
    AUTOMATIC = 1
    MANUAL_BY_TOPIC = 3
    UNKNOWN = 4


# rclpy's older names, still common in node code
QoSHistoryPolicy = HistoryPolicy
QoSReliabilityPolicy = ReliabilityPolicy
QoSDurabilityPolicy = DurabilityPolicy
QoSLivelinessPolicy = LivelinessPolicy


class InvalidQoSProfileException(Exception):
    def __init__(self, *args: Any) -> None:
        Exception.__init__(self, "Invalid QoSProfile", *args)


_POLICIES = {
    "history": HistoryPolicy,
    "reliability": ReliabilityPolicy,
    "durability": DurabilityPolicy,
    "liveliness": LivelinessPolicy,
}
_DURATIONS = ("lifespan", "deadline", "liveliness_lease_duration")
_FIELDS = ("history", "depth", "reliability", "durability", *_DURATIONS[:2], "liveliness",
           _DURATIONS[2], "avoid_ros_namespace_conventions")  # fmt: skip


class QoSProfile:
    def __init__(self, **kwargs: Any) -> None:
        unknown = set(kwargs) - {*_POLICIES, *_DURATIONS, "depth",
                                 "avoid_ros_namespace_conventions"}  # fmt: skip
        if unknown:
            raise TypeError(f"QoSProfile got unexpected keyword(s): {', '.join(sorted(unknown))}")
        if "history" not in kwargs:
            if "depth" not in kwargs:
                raise InvalidQoSProfileException("History and/or depth settings are required.")
            kwargs["history"] = HistoryPolicy.KEEP_LAST
        if kwargs["history"] == HistoryPolicy.KEEP_LAST and "depth" not in kwargs:
            raise InvalidQoSProfileException("History set to KEEP_LAST without a depth setting.")
        self.depth: int = int(kwargs.get("depth", 0))
        self.history = HistoryPolicy(kwargs["history"])
        self.reliability = ReliabilityPolicy(kwargs.get("reliability", ReliabilityPolicy.RELIABLE))
        self.durability = DurabilityPolicy(kwargs.get("durability", DurabilityPolicy.VOLATILE))
        self.liveliness = LivelinessPolicy(
            kwargs.get("liveliness", LivelinessPolicy.SYSTEM_DEFAULT)
        )
        for name in _DURATIONS:
            setattr(self, name, kwargs.get(name, Duration()))
        self.avoid_ros_namespace_conventions = bool(
            kwargs.get("avoid_ros_namespace_conventions", False)
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QoSProfile) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:  # as rclpy prints it
        fields = ", ".join(
            f"{k}={int(v) if isinstance(v, enum.IntEnum) else v}"
            for k, v in ((k, getattr(self, k)) for k in _FIELDS)
        )
        return f"QoSProfile({fields})"

    __repr__ = __str__


def as_profile(qos: Any) -> QoSProfile:
    """What ``create_publisher``/``create_subscription`` take: a profile, or a
    depth (an int, as rclpy: KEEP_LAST of that depth)."""
    if isinstance(qos, QoSProfile):
        return qos
    if isinstance(qos, int) and not isinstance(qos, bool) and qos >= 0:
        return QoSProfile(depth=qos)
    raise TypeError(f"qos_profile must be a QoSProfile or a depth (int >= 0), got {qos!r}")


qos_profile_unknown = QoSProfile(
    history=HistoryPolicy.UNKNOWN,
    reliability=ReliabilityPolicy.UNKNOWN,
    durability=DurabilityPolicy.UNKNOWN,
    liveliness=LivelinessPolicy.UNKNOWN,
)
qos_profile_system_default = QoSProfile(
    history=HistoryPolicy.SYSTEM_DEFAULT,
    reliability=ReliabilityPolicy.SYSTEM_DEFAULT,
    durability=DurabilityPolicy.SYSTEM_DEFAULT,
)
qos_profile_sensor_data = QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT)
qos_profile_services_default = QoSProfile(depth=10)
qos_profile_parameters = QoSProfile(depth=1000)
qos_profile_parameter_events = QoSProfile(depth=1000)
qos_profile_action_status_default = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class QoSPresetProfiles(enum.Enum):
    """The predefined profiles by name (``QoSPresetProfiles.get_from_short_key("sensor_data")``)."""

    UNKNOWN = qos_profile_unknown
    SYSTEM_DEFAULT = qos_profile_system_default
    SENSOR_DATA = qos_profile_sensor_data
    SERVICES_DEFAULT = qos_profile_services_default
    PARAMETERS = qos_profile_parameters
    PARAMETER_EVENTS = qos_profile_parameter_events
    ACTION_STATUS_DEFAULT = qos_profile_action_status_default

    @classmethod
    def short_keys(cls) -> list[str]:
        return [k.lower() for k in cls.__members__]

    @classmethod
    def get_from_short_key(cls, name: str) -> QoSProfile:
        return cls[name.upper()].value  # type: ignore[no-any-return]
