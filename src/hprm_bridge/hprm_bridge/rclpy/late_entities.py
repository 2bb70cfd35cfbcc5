"""Entities a node creates after its federation started.

A federate's ports are fixed before its federation starts: the RTI connects
them once, and every federate's tag advance depends on who can send it what.
A destroyed entity keeps its port (``Node.destroy_*``). So after the start a
node may create a publisher, subscription, service or client only in the
place of a destroyed one of the same name and type, and a timer in the place
of any destroyed timer (with its own period, first firing one period after
it is created, as rclpy's). That is what a lifecycle node does between
``on_cleanup`` and the next ``on_configure``
(:mod:`hprm_bridge.rclpy.lifecycle`), and what a node re-subscribing with
another callback does. The new entity takes the old one's ports and its place
in the node's reactions (:mod:`~hprm_bridge.rclpy.node_reactor`); the old
handle stays destroyed.

Anything else, a topic the node did not have at the start, is refused with
an error naming it.
"""

from __future__ import annotations

from typing import Any

from hprm_bridge.rclpy.exceptions import UnsupportedError


def _identity(entity: Any) -> tuple[Any, Any]:
    if hasattr(entity, "topic_name"):  # publisher, subscription
        return entity.topic_name, entity.msg_type
    if hasattr(entity, "srv_name"):  # service, client
        return entity.srv_name, entity.srv_type
    return None, None  # a timer: any destroyed one will do


def place(entities: list[Any], call: str, name: str, type_: Any = None) -> int:
    """The index in ``entities`` of a destroyed entity the new one (``name`` of
    ``type_``; a timer gives none) may replace."""
    want = (None, None) if type_ is None else (name, type_)
    for i, entity in enumerate(entities):
        if entity._destroyed and _identity(entity) == want:
            return i
    raise UnsupportedError(
        f"Node.{call}({name}) after spin() started: an HPRM federate's ports are fixed "
        "before its federation starts, and this node has no destroyed entity of that name "
        "and type to take the place of (create it before spin, or in a lifecycle node's "
        "on_configure/on_activate, which run before the node joins)"
    )
