"""How a ROS 2 action between ported nodes becomes services and topics.

As rcl_action makes it on DDS: an action ``/fibonacci`` of type
``pkg/action/Fibonacci`` is three services and two topics under
``/fibonacci/_action/``: ``send_goal`` (``Fibonacci_SendGoal``), ``get_result``
(``Fibonacci_GetResult``), ``cancel_goal`` (``action_msgs/srv/CancelGoal``),
``feedback`` (``Fibonacci_FeedbackMessage``) and ``status``
(``action_msgs/msg/GoalStatusArray``). A ported action server or client is
built from the node's services, clients, publishers and subscriptions on
those names (:mod:`hprm_bridge.service_ports` for the services), so actions
are as deterministic as they are, and cross the gateway as they do.

Example::

    >>> topics("/fibonacci")["send_goal"]
    '/fibonacci/_action/send_goal'
    >>> action_class("example_interfaces/action/Fibonacci").Goal(order=3)
    example_interfaces.action.Fibonacci_Goal(order=3)
"""

from __future__ import annotations

from typing import Any

PARTS = ("send_goal", "get_result", "cancel_goal", "feedback", "status")


def topics(action: str) -> dict[str, str]:
    """The full names of an action's services and topics (``action``: its full name)."""
    return {part: f"{action}/_action/{part}" for part in PARTS}


def action_of(name: str) -> str | None:
    """The action whose service or topic ``name`` is, or None for any other."""
    head, sep, part = name.rpartition("/_action/")
    return head if sep and part in PARTS else None


def action_class(action_type: Any) -> type:
    """HPRM's class of an action, from its class (HPRM's or rclpy's generated one) or
    its name ``pkg/action/Name``."""
    from hprm_bridge import messages
    from hprm_bridge.wire.naming import normalize_type_name
    from hprm_core.trigger import type_name

    name = normalize_type_name(type_name(action_type))
    if "/action/" not in name:
        raise TypeError(f"{name} is not an action type (pkg/action/Name)")
    return messages.action_class(name)
