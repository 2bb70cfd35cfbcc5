"""A ported node's answers to ``ros2 param``: rclpy's parameter services.

The gateway carries each call to the node's federate as a tagged event
(:mod:`hprm_bridge.parameter_services`); this module answers it at that tag
from the node's :class:`~hprm_bridge.rclpy.node_parameters.NodeParameters`,
with what rclpy's ``ParameterService`` (Humble) answers: a set goes through
the same descriptor checks and ``add_on_set_parameters_callback`` callbacks as
``node.set_parameters``, a read naming an undeclared parameter answers an empty list, and
``list_parameters`` filters by prefixes and depth the way rclpy does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hprm_bridge import messages
from hprm_bridge.rclpy.exceptions import (
    ParameterNotDeclaredException,
    ParameterUninitializedException,
)
from hprm_bridge.rclpy.node_parameters import NodeParameters, _result
from hprm_bridge.rclpy.parameter import PARAMETER_SEPARATOR_STRING, Parameter

EVENTS_TOPIC = "/parameter_events"
EVENT_TYPE = "rcl_interfaces/msg/ParameterEvent"


def event(
    node: str, now_ns: int, new: list[Parameter], changed: list[Parameter],
    deleted: list[Parameter],
) -> Any:  # fmt: skip
    """The ``rcl_interfaces/msg/ParameterEvent`` rclpy publishes on ``/parameter_events``
    when node ``node`` (its full name) declares, sets or deletes parameters."""

    def msgs(params: list[Parameter]) -> list[Any]:
        return [p.to_parameter_msg() for p in params]

    stamp = messages.message_class("builtin_interfaces/msg/Time")(
        sec=now_ns // 1_000_000_000, nanosec=now_ns % 1_000_000_000
    )
    return messages.message_class(EVENT_TYPE)(
        stamp=stamp, node=node, new_parameters=msgs(new), changed_parameters=msgs(changed),
        deleted_parameters=msgs(deleted),
    )  # fmt: skip


def answer(params: NodeParameters, service: str, request: Any) -> dict[str, Any]:
    """The response fields for one call of ``service`` (its short name)."""
    if service == "get_parameters":
        return {"values": [p.get_parameter_value() for p in _each(params.get, request.names)]}
    if service == "get_parameter_types":
        return {"types": [int(t) for t in _each(params.get_type, request.names)]}
    if service == "describe_parameters":
        return {"descriptors": _each(params.describe, request.names)}
    if service == "set_parameters":
        return {
            "results": [_set(params, [Parameter.from_parameter_msg(p)]) for p in request.parameters]
        }
    if service == "set_parameters_atomically":
        return {
            "result": _set(params, [Parameter.from_parameter_msg(p) for p in request.parameters])
        }
    if service == "list_parameters":
        return {"result": _list(list(params.values), list(request.prefixes),
                                int(request.depth))}  # fmt: skip
    raise ValueError(f"no parameter service {service!r}")


def _each(read: Callable[[str], Any], names: list[str]) -> list[Any]:
    """``read`` of every name, or nothing at all if one is not declared or has no value
    yet (an empty list, not one entry per name: Humble's ParameterService). Where the node
    allows undeclared parameters, an undeclared name reads as NOT_SET."""
    try:
        return [read(n) for n in names]
    except (ParameterNotDeclaredException, ParameterUninitializedException):
        return []


def _set(params: NodeParameters, given: list[Parameter]) -> Any:
    try:
        return params.set_atomically(given)
    except ParameterNotDeclaredException as exc:
        return _result(False, f"parameter not declared: {exc}")


def _list(names: list[str], prefixes: list[str], depth: int) -> Any:
    """rclpy's rules: names without a separator match a prefix they start
    with (all of them when no prefix is given); dotted names within ``depth``
    separators (0: any) match ``prefix.``, and report their prefixes too."""
    found: list[str] = []
    found_prefixes: list[str] = []

    def add_prefix(p: str) -> None:
        if p not in found_prefixes:
            found_prefixes.append(p)

    dotted = []
    for name in names:
        if PARAMETER_SEPARATOR_STRING in name:
            dotted.append(name)
        elif not prefixes or any(name.startswith(p) for p in prefixes):
            found.append(name)
    if depth != 1:
        for name in dotted:
            if depth and name.count(PARAMETER_SEPARATOR_STRING) >= depth:
                continue
            own = name.rsplit(PARAMETER_SEPARATOR_STRING, 1)[0]
            if not prefixes:
                found.append(name)
                add_prefix(own)
                continue
            for p in prefixes:
                if name.startswith(p + PARAMETER_SEPARATOR_STRING):
                    found.append(name)
                    add_prefix(own)
                    add_prefix(p)
    result = messages.message_class("rcl_interfaces/msg/ListParametersResult")
    return result(names=found, prefixes=found_prefixes)


def answer_calls(params: NodeParameters, calls: Any, replies: Any) -> None:
    """A reaction to calls on port ``calls`` (an Input): each ``(token, service, request)``
    answered at this tag on ``replies`` (a Publisher) as ``(token, response fields)``;
    the gateway's (``ros2 param``) and other ported nodes' calls alike."""
    for token, service, request in calls.value:
        replies.publish((token, answer(params, service, request)))
