"""ROS 2 QoS profiles, their DDS form, and ROS 2's QoS compatibility rules.

Sources:

* Profile values: ``rmw_qos_profile_default``, ``rmw_qos_profile_sensor_data``,
  ``rmw_qos_profile_system_default`` in rmw ``include/rmw/qos_profiles.h``
  (humble): default = reliable, keep-last 10, volatile; sensor data =
  best-effort, keep-last 5, volatile; system default leaves every policy to the
  middleware, which rmw_cyclonedds resolves as reliable, keep-last 1, volatile.
  "Latched" (transient-local, keep-last 1, reliable) is how ROS 2 users spell
  ROS 1 latching (ROS 2 docs, "About Quality of Service settings").
* DDS mapping: ``create_readwrite_qos()`` in rmw_cyclonedds_cpp
  ``src/rmw_node.cpp`` (humble): auto-dispose off, depth 0 -> keep-last 1,
  reliable with infinite max-blocking time, transient-local also sets the
  durability-service history to the same depth, liveliness automatic with an
  infinite lease unless given, deadline/lifespan only when specified.
* Compatibility: ``rmw_qos_profile_check_compatible()`` in rmw
  ``src/qos_profiles.c`` and the table in the ROS 2 docs "About Quality of
  Service settings" (QoS compatibilities): a best-effort publisher cannot feed a
  reliable subscription, volatile cannot feed transient-local, a publisher's
  deadline / liveliness lease must not exceed the subscription's, automatic
  liveliness cannot feed manual-by-topic.
* Incompatibility reports copy rclcpp's wording (``rclcpp/src/rclcpp/
  qos_event.cpp``: "New subscription discovered on topic '...', requesting
  incompatible QoS. No messages will be sent to it. Last incompatible policy:
  RELIABILITY_QOS_POLICY").
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from cyclonedds.qos import Policy, Qos

INFINITE: float = float("inf")
"""Duration meaning "not set / unlimited" (ROS 2 ``RMW_DURATION_INFINITE``)."""

_DDS_INFINITY = 0x7FFFFFFFFFFFFFFF


class Reliability(enum.Enum):
    """Reliability policy (``RMW_QOS_POLICY_RELIABILITY_*``)."""

    RELIABLE = "reliable"
    BEST_EFFORT = "best_effort"


class Durability(enum.Enum):
    """Durability policy (``RMW_QOS_POLICY_DURABILITY_*``)."""

    VOLATILE = "volatile"
    TRANSIENT_LOCAL = "transient_local"


class History(enum.Enum):
    """History policy (``RMW_QOS_POLICY_HISTORY_*``)."""

    KEEP_LAST = "keep_last"
    KEEP_ALL = "keep_all"


class Liveliness(enum.Enum):
    """Liveliness policy (``RMW_QOS_POLICY_LIVELINESS_*``)."""

    AUTOMATIC = "automatic"
    MANUAL_BY_TOPIC = "manual_by_topic"


@dataclass(frozen=True)
class QoSProfile:
    """A ROS 2 QoS profile; durations in seconds, ``INFINITE`` when unset.

    Example::

        QoSProfile(depth=1, durability=Durability.TRANSIENT_LOCAL)
        QOS_SENSOR_DATA.with_(depth=1)
    """

    depth: int = 10
    reliability: Reliability = Reliability.RELIABLE
    durability: Durability = Durability.VOLATILE
    history: History = History.KEEP_LAST
    deadline: float = INFINITE
    lifespan: float = INFINITE
    liveliness: Liveliness = Liveliness.AUTOMATIC
    liveliness_lease_duration: float = INFINITE

    def __post_init__(self) -> None:
        if self.history is History.KEEP_LAST and self.depth < 0:
            raise ValueError(f"QoS depth must be >= 0 (0 = system default), got {self.depth}")

    def with_(self, **changes: object) -> QoSProfile:
        """A copy with some policies changed."""
        return replace(self, **changes)  # type: ignore[arg-type]


QOS_DEFAULT = QoSProfile()
"""``rmw_qos_profile_default``: reliable, keep-last 10, volatile."""
QOS_SENSOR_DATA = QoSProfile(depth=5, reliability=Reliability.BEST_EFFORT)
"""``rmw_qos_profile_sensor_data``: best-effort, keep-last 5, volatile."""
QOS_SYSTEM_DEFAULT = QoSProfile(depth=0)
"""``rmw_qos_profile_system_default`` as rmw_cyclonedds resolves it (keep-last 1)."""
QOS_LATCHED = QoSProfile(depth=1, durability=Durability.TRANSIENT_LOCAL)
"""Transient-local keep-last 1: late joiners get the last sample (ROS 1 latching)."""

PROFILES: dict[str, QoSProfile] = {
    "default": QOS_DEFAULT,
    "sensor_data": QOS_SENSOR_DATA,
    "system_default": QOS_SYSTEM_DEFAULT,
    "latched": QOS_LATCHED,
    "transient_local": QOS_LATCHED,
}


def resolve(qos: QoSProfile | str | int) -> QoSProfile:
    """Accept a profile, a profile name, or a depth (as rclpy does with an int)."""
    if isinstance(qos, QoSProfile):
        return qos
    if isinstance(qos, bool):
        raise TypeError("qos must be a QoSProfile, a profile name or a depth")
    if isinstance(qos, int):
        return QOS_DEFAULT.with_(depth=qos)
    if isinstance(qos, str):
        try:
            return PROFILES[qos]
        except KeyError:
            raise ValueError(f"unknown QoS profile {qos!r}; known: {sorted(PROFILES)}") from None
    raise TypeError("qos must be a QoSProfile, a profile name or a depth")


def _ns(seconds: float) -> int:
    if seconds == INFINITE:
        return _DDS_INFINITY
    return round(seconds * 1e9)


def to_dds(qos: QoSProfile, *, ignore_local: bool = False) -> Qos:
    """The Cyclone DDS reader/writer QoS rmw_cyclonedds would use for ``qos``."""
    if qos.history is History.KEEP_ALL:
        history = Policy.History.KeepAll
    else:
        history = Policy.History.KeepLast(max(1, qos.depth))
    policies: list[object] = [
        Policy.WriterDataLifecycle(autodispose=False),
        history,
        Policy.Reliability.Reliable(_DDS_INFINITY)
        if qos.reliability is Reliability.RELIABLE
        else Policy.Reliability.BestEffort,
    ]
    if qos.durability is Durability.TRANSIENT_LOCAL:
        policies.append(Policy.Durability.TransientLocal)
        policies.append(
            Policy.DurabilityService(
                cleanup_delay=0,
                history=history,
                max_samples=-1,
                max_instances=-1,
                max_samples_per_instance=-1,
            )
        )
    else:
        policies.append(Policy.Durability.Volatile)
    if qos.lifespan != INFINITE:
        policies.append(Policy.Lifespan(_ns(qos.lifespan)))
    if qos.deadline != INFINITE:
        policies.append(Policy.Deadline(_ns(qos.deadline)))
    lease = _ns(qos.liveliness_lease_duration)
    if qos.liveliness is Liveliness.AUTOMATIC:
        policies.append(Policy.Liveliness.Automatic(lease))
    else:
        policies.append(Policy.Liveliness.ManualByTopic(lease))
    if ignore_local:
        policies.append(Policy.IgnoreLocal.Participant)
    return Qos(*policies)


# DDS QosPolicyId_t values (DDS 1.4 section 2.2.3, Cyclone ``dds_qos_policy_id_t``)
# named the way ROS 2 tools print them (``rmw_qos_policy_kind_t`` -> string in
# rmw ``qos_string_conversions.c``, suffixed ``_QOS_POLICY`` by rclcpp).
POLICY_NAMES: dict[int, str] = {
    2: "DURABILITY_QOS_POLICY",
    4: "DEADLINE_QOS_POLICY",
    8: "LIVELINESS_QOS_POLICY",
    11: "RELIABILITY_QOS_POLICY",
    13: "HISTORY_QOS_POLICY",
    21: "LIFESPAN_QOS_POLICY",
    25: "DATA_REPRESENTATION_QOS_POLICY",
}


def policy_name(policy_id: int) -> str:
    """ROS 2 tool spelling of a DDS QoS policy id (``INVALID_QOS_POLICY`` if unknown)."""
    return POLICY_NAMES.get(policy_id, "INVALID_QOS_POLICY")


def check_compatible(publisher: QoSProfile, subscription: QoSProfile) -> tuple[bool, str]:
    """ROS 2's rule: can a publisher with ``publisher`` QoS feed this subscription?

    Returns ``(compatible, reason)``; the reason names the offending policy the
    way ``rmw_qos_profile_check_compatible`` does.
    """
    pub, sub = publisher, subscription
    if pub.reliability is Reliability.BEST_EFFORT and sub.reliability is Reliability.RELIABLE:
        return False, "Best effort publisher and reliable subscription"
    if pub.durability is Durability.VOLATILE and sub.durability is Durability.TRANSIENT_LOCAL:
        return False, "Volatile publisher and transient local subscription"
    if pub.deadline > sub.deadline:
        return False, "Subscription deadline is less than publisher deadline"
    if pub.liveliness is Liveliness.AUTOMATIC and sub.liveliness is Liveliness.MANUAL_BY_TOPIC:
        return False, "Publisher's liveliness is automatic and subscription's is manual by topic"
    if pub.liveliness_lease_duration > sub.liveliness_lease_duration:
        return False, "Subscription liveliness lease duration is less than publisher"
    return True, ""


def from_dds(qos: Qos) -> QoSProfile:
    """The ROS 2 profile of a DDS endpoint's QoS (as discovery reports a remote one)."""

    def seconds(ns: int) -> float:
        return INFINITE if ns >= _DDS_INFINITY else ns / 1e9

    def policy(kind: object) -> object:
        try:  # cyclonedds' Qos: a mapping without .get
            return qos[kind]
        except KeyError:
            return None

    history = policy(Policy.History)
    keep_all = history is not None and not hasattr(history, "depth")
    liveliness = policy(Policy.Liveliness)
    reliability = policy(Policy.Reliability)
    deadline, lifespan = policy(Policy.Deadline), policy(Policy.Lifespan)
    return QoSProfile(
        depth=0 if keep_all or history is None else history.depth,  # type: ignore[attr-defined]
        history=History.KEEP_ALL if keep_all else History.KEEP_LAST,
        reliability=Reliability.BEST_EFFORT
        if reliability is not None and not hasattr(reliability, "max_blocking_time")
        else Reliability.RELIABLE,
        durability=Durability.TRANSIENT_LOCAL
        if policy(Policy.Durability) == Policy.Durability.TransientLocal
        else Durability.VOLATILE,
        deadline=INFINITE if deadline is None else seconds(deadline.deadline),  # type: ignore[attr-defined]
        lifespan=INFINITE if lifespan is None else seconds(lifespan.lifespan),  # type: ignore[attr-defined]
        liveliness=Liveliness.MANUAL_BY_TOPIC
        if liveliness is not None and "ManualByTopic" in type(liveliness).__name__
        else Liveliness.AUTOMATIC,
        liveliness_lease_duration=INFINITE
        if liveliness is None
        else seconds(liveliness.lease_duration),  # type: ignore[attr-defined]
    )


def match_publishers(base: QoSProfile, publishers: list[QoSProfile]) -> QoSProfile:
    """A subscription's QoS that every discovered publisher can feed, and that
    asks for what they all offer.

    Reliable only if every publisher is reliable (one best-effort publisher
    cannot feed a reliable subscription); transient-local only if every one
    is (then the subscription gets what they kept for late joiners). The
    rule rosbag2 and domain_bridge apply; with no publisher known, ``base``.
    """
    if not publishers:
        return base
    reliable = all(p.reliability is Reliability.RELIABLE for p in publishers)
    kept = all(p.durability is Durability.TRANSIENT_LOCAL for p in publishers)
    return base.with_(
        reliability=Reliability.RELIABLE if reliable else Reliability.BEST_EFFORT,
        durability=Durability.TRANSIENT_LOCAL if kept else Durability.VOLATILE,
    )


def match_subscriptions(base: QoSProfile, subscriptions: list[QoSProfile]) -> QoSProfile:
    """A publisher's QoS that every discovered subscription accepts, and no more.

    Reliable if any subscription asks for it (a reliable publisher feeds
    best-effort ones too), best-effort when all are best-effort (no
    retransmission nobody wants); transient-local if any asks for it (a
    volatile subscription simply gets no history); the shortest deadline
    asked for. With no subscription known, ``base``.
    """
    if not subscriptions:
        return base
    reliable = any(s.reliability is Reliability.RELIABLE for s in subscriptions)
    kept = any(s.durability is Durability.TRANSIENT_LOCAL for s in subscriptions)
    return base.with_(
        reliability=Reliability.RELIABLE if reliable else Reliability.BEST_EFFORT,
        durability=Durability.TRANSIENT_LOCAL if kept else Durability.VOLATILE,
        deadline=min(base.deadline, *(s.deadline for s in subscriptions)),
    )


def follow(
    current: QoSProfile, base: QoSProfile, peers: list[QoSProfile], *, publisher: bool
) -> QoSProfile | None:
    """What an endpoint that follows its remote peers (``match_qos``) changes to,
    or None to stay: a publisher matches the subscriptions, a subscription the
    publishers, starting from ``base`` (what was asked for). With no peer left
    nothing changes (keep what works), and a publisher keeps transient-local
    once it has it (a late joiner may ask for its history)."""
    if not peers:
        return None
    want = match_subscriptions(base, peers) if publisher else match_publishers(base, peers)
    if publisher and current.durability is Durability.TRANSIENT_LOCAL:
        want = want.with_(durability=Durability.TRANSIENT_LOCAL)
    return None if want == current else want


def follow_note(publisher: bool, topic: str, qos: QoSProfile, peers: int) -> str:
    """The log line of an endpoint that changed to follow its ``peers`` remote ones."""
    kind, remote = ("publisher", "subscription") if publisher else ("subscription", "publisher")
    return (f"{kind} on '{topic}' now {qos.reliability.value}, {qos.durability.value}: "
            f"matched to {peers} remote {remote}(s)")  # fmt: skip
