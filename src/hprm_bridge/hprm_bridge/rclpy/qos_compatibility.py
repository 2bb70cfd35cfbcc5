"""Which publishers and subscriptions of a topic connect: DDS's requested-versus-offered
rule, as ROS 2 applies it.

Under ROS 2 a subscription that requests more than a publisher offers (a reliable
subscription and a best-effort publisher, transient-local against volatile, a shorter
deadline or liveliness lease than offered, manual liveliness against automatic) is never
matched with it: nothing flows, and each side gets an incompatible-QoS event (or rclpy's
default warning). A port that delivered anyway would let a ported system work where the
same nodes under ROS 2 do not, and the other way round once a node goes back.

So each publisher's and subscription's port carries its profile as a contract of levels
(higher: stronger), which the RTI compares before it connects anything
(:func:`hprm_core.structure.shortfall`); a refused pair stays unconnected and is in the
federation graph, from which each end fires its event at the start tag
(:meth:`Node._check_connections`). The events then come at the same logical time every
run, before any message, as discovery comes before data under ROS 2.

>>> from hprm_bridge.rclpy.qos import QoSProfile, ReliabilityPolicy
>>> contract(QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT))["reliability"]
0
"""

from __future__ import annotations

from typing import Any

from hprm_bridge.rclpy.duration import Infinite
from hprm_bridge.rclpy.qos import (
    DurabilityPolicy,
    LivelinessPolicy,
    QoSPolicyKind,
    QoSProfile,
    ReliabilityPolicy,
    qos_policy_name_from_kind,
)
from hprm_core.structure import shortfall

_INFINITE = Infinite.nanoseconds

# The terms in the order Cyclone DDS checks them (measured under Humble: a pair that
# differs in reliability and durability reports RELIABILITY, in deadline and liveliness
# DEADLINE), and the policy an event names for each.
_POLICY = {
    "reliability": QoSPolicyKind.RELIABILITY,
    "durability": QoSPolicyKind.DURABILITY,
    "deadline": QoSPolicyKind.DEADLINE,
    "liveliness": QoSPolicyKind.LIVELINESS,
    "lease": QoSPolicyKind.LIVELINESS,  # DDS's liveliness policy holds the lease too
}


def _ns(duration: Any) -> int:
    ns = int(duration.nanoseconds)
    return _INFINITE if ns <= 0 or ns >= _INFINITE else ns  # 0: rclpy's "not set"


def contract(qos: QoSProfile) -> dict[str, int]:
    """The levels a port of ``qos`` offers (a publisher's) or requests (a subscription's).
    A system-default reliability binds nothing (its DDS default differs by side)."""
    levels = {}
    if qos.reliability in (ReliabilityPolicy.RELIABLE, ReliabilityPolicy.BEST_EFFORT):
        levels["reliability"] = int(qos.reliability == ReliabilityPolicy.RELIABLE)
    levels["durability"] = int(qos.durability == DurabilityPolicy.TRANSIENT_LOCAL)
    levels["deadline"] = -_ns(qos.deadline)  # a shorter period is the stronger promise
    levels["liveliness"] = int(qos.liveliness == LivelinessPolicy.MANUAL_BY_TOPIC)
    levels["lease"] = -_ns(qos.liveliness_lease_duration)
    return levels


def policy_kind(terms: tuple[str, ...]) -> QoSPolicyKind:
    """The policy an event names for a pair refused on ``terms``: the first DDS checks."""
    return next(_POLICY[t] for t in _POLICY if t in terms)


def default_warning(side: str, topic: str, kind: int) -> str:
    """rclpy's default handler's line, where the entity has no ``incompatible_qos``
    callback: ``side`` "sub" (a publisher offers too little) or "pub"."""
    last = f"Last incompatible policy: {qos_policy_name_from_kind(kind)}"
    if side == "sub":
        return (f"New publisher discovered on topic '{topic}', offering incompatible QoS. "
                f"No messages will be received from it. {last}")  # fmt: skip
    return (f"New subscription discovered on topic '{topic}', requesting incompatible QoS. "
            f"No messages will be sent to it. {last}")  # fmt: skip


def refused_ends(
    node: Any, refused: list[Any], qualified: Any, inside: list[tuple[Any, ...]] = ()
) -> list[tuple[Any, str, int, int]]:
    """Of the federation's refused pairs (``FederationGraph.refused``), then of those
    ``inside`` its process (composed siblings, ``(output, input, topic, terms)``), those
    with an end at one of ``node``'s publishers or subscriptions (``qualified(port)``:
    the port's name in the graph), in that order: (entity, "pub" or "sub", its count so
    far, the policy). Before the start; :func:`fire` calls them at the start tag."""
    ends: dict[Any, tuple[Any, str]] = {}
    for side, entities in (("pub", node._own_publishers), ("sub", node._subscriptions)):
        for entity in entities:
            ends[id(entity._port)] = (entity, side)
            name = qualified(entity._port)
            if name:  # "": a composed node's port that only a sibling reads
                ends[name] = (entity, side)
    pairs = [((r.src, r.dst), r.terms) for r in refused]
    pairs += [((id(out), id(inp)), terms) for out, inp, _, terms in inside]
    counts: dict[int, int] = {}
    found = []
    for pair, terms in pairs:
        for end in pair:
            if end in ends:
                entity, side = ends[end]
                counts[id(entity)] = counts.get(id(entity), 0) + 1
                found.append((entity, side, counts[id(entity)], int(policy_kind(terms))))
    return found


def refused_own(node: Any) -> list[tuple[Any, Any, str, tuple[str, ...]]]:
    """The pairs of ``node``'s own publishers and subscriptions DDS would not match, as
    composition's ``refused_inside`` holds siblings': (output, input, topic, terms)."""
    return [(p._port, s._port, s.topic_name, terms)
            for s in node._subscriptions for p in node._own_publishers
            if p.topic_name == s.topic_name
            and (terms := tuple(shortfall(p._port.contract, s._port.contract)))]  # fmt: skip


def refused_peers(node: Any, entity: Any) -> int:
    """How many other ends ``entity`` (one of ``node``'s) was refused."""
    return sum(1 for e, *_ in node._incompatible if e is entity)


def fire(node: Any, ends: list[tuple[Any, str, int, int]]) -> None:
    """Each refused end's incompatible-QoS event: its callback, or rclpy's default
    warning (where the entity's event callbacks leave ``use_default_callbacks`` on)."""
    from hprm_bridge.rclpy.qos_event import QoSRequestedIncompatibleQoSInfo

    for entity, side, total, kind in ends:
        given, topic = entity._qos_events
        callback = getattr(given, "incompatible_qos", None)
        if callback is not None:
            callback(QoSRequestedIncompatibleQoSInfo(total, 1, kind))
        elif given is None or getattr(given, "use_default_callbacks", True):
            node.get_logger().warning(default_warning(side, topic, kind))
