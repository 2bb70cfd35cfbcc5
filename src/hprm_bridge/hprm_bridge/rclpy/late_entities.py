"""Entities a node creates after its federation started.

A federate's ports are fixed before its federation starts: the RTI connects
them once, and every federate's tag advance depends on who can send it what.
A destroyed entity keeps its port (``Node.destroy_*``). So after the start a
node may create a publisher, subscription, service or client only in the
place of a destroyed one of the same name and type. That is what a lifecycle
node does between ``on_cleanup`` and the next ``on_configure``
(:mod:`hprm_bridge.rclpy.lifecycle`), and what a node re-subscribing with
another callback does. The new entity takes the old one's ports and its place
in the node's reactions (:mod:`~hprm_bridge.rclpy.node_reactor`); the old
handle stays destroyed.

Timers are the node's own (no port): one made after the start, and the timer a QoS
deadline or a manual liveliness lease of an entity made after it needs, is on the
node's timer wheel (:mod:`~hprm_bridge.rclpy.timer_wheel`), as many as it makes.

A subscription on a topic the node did not have at the start hears its own
process's publishers (:mod:`~hprm_bridge.rclpy.late_subscriptions`). A publisher on
such a topic needs its port declared (``hprm-ros run --late-publisher
NODE=TOPIC:TYPE``, a launch file's ``PortedNode(late_publishers=[...])``): the node
then has, from the start, a publisher of that topic and type already destroyed, never
having published, whose place (and port, connected by the RTI to the topic's
subscribers in other federates) the late one takes. Anything else is refused with an
error naming it.
"""

from __future__ import annotations

from typing import Any

from hprm_bridge import messages
from hprm_bridge.rclpy.exceptions import UnsupportedError


def _identity(entity: Any) -> tuple[Any, Any]:
    if hasattr(entity, "topic_name"):  # publisher, subscription
        return entity.topic_name, entity.msg_type
    return entity.srv_name, entity.srv_type  # service, client


# what "after the start" means to a node file
STARTED = (
    "after its node started (by spin, a spin_once, or the first sleep of a main that never spins)"
)


def place(entities: list[Any], call: str, name: str, type_: Any) -> int:
    """The index in ``entities`` of a destroyed entity the new one (``name`` of
    ``type_``) may replace."""
    found = _free(entities, (name, type_))
    if found is not None:
        return found
    raise UnsupportedError(
        f"Node.{call}({name}) {STARTED}: an HPRM federate's ports are fixed "
        "before its federation starts, and this node has no destroyed entity of that name "
        "and type to take the place of (create it before spin, or in a lifecycle node's "
        "on_configure/on_activate, which run before the node joins"
        + (
            f"; or declare its port: hprm-ros run --late-publisher NODE={name}:{type_}, "
            "PortedNode(late_publishers=[...]))"
            if call == "create_publisher"
            else ")"
        )
    )


def declare_publishers(node: Any, specs: list[str]) -> None:
    """The publishers ``specs`` (``TOPIC:TYPE`` each, ``--late-publisher``) declare on
    ``node`` (the first of its process), before the start: each destroyed at once, so a
    ``create_publisher`` after the start takes its place. No QoS contract (any
    subscriber's is connected: what the node will offer is not known yet), and not in
    the graph other federates see (the late publisher's liveliness event tells its
    subscriptions it came)."""
    for spec in specs:
        topic, _, ros_type = spec.partition(":")
        messages.message_class(ros_type)  # an unknown type: its clear error, before the start
        if any(p.topic_name == topic for p in node._own_publishers):
            raise UnsupportedError(
                f"--late-publisher {topic}: node {node.get_name()} publishes it from the start"
            )
        pub = node._publisher(topic, ros_type, f"pub{len(node._own_publishers)}")
        pub._destroyed = True
        node._own_publishers.append(pub)


def free(entities: list[Any], name: str, type_: Any) -> int | None:
    """The index in ``entities`` of a destroyed publisher, subscription, service or client
    of ``name`` and ``type_``, if there is one."""
    return _free(entities, (name, type_))


def _free(entities: list[Any], want: tuple[Any, Any]) -> int | None:
    for i, entity in enumerate(entities):
        if entity._destroyed and _identity(entity) == want:
            return i
    return None


def destroy(entity: Any) -> bool:
    """``Node.destroy_*``: the entity stops, its port stays (a federate's are fixed); True
    the first time, as rclpy's."""
    if entity._destroyed:
        return False
    entity.destroy()
    return True
