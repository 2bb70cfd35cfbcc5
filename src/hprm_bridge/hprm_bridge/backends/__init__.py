"""The gateway's two ways onto the ROS 2 graph, behind one interface.

The gateway (:mod:`hprm_bridge.gateway`) decides what crosses and when; a
backend owns the ROS 2 endpoints that carry it:

- ``rclpy`` (:mod:`.rclpy`): real rclpy and the sourced rmw, so the
  federation's edge is exactly what ROS 2 itself does (security enclaves,
  another rmw, shared-memory transports of the sourced middleware);
- ``wire`` (:mod:`.wire`): the ROS-free client of :mod:`hprm_bridge.wire`, so a
  machine without ROS 2 still bridges.

``auto`` (the default) takes rclpy when it is importable and knows every
message type the gateway carries, the wire client otherwise (and says why).
Both behave the same: messages cross as CDR both ways (a subscription hands
its callback the CDR bytes; the gateway forwards small ones undecoded and
decodes the rest once, :mod:`hprm_bridge.raw_message`); QoS follows
the endpoints discovered on the ROS 2 side (:func:`hprm_bridge.wire.qos.follow`);
each ported node appears as a node of its own name, owning the endpoints the
gateway keeps for it; service calls are answered later, when the federation
has the answer.

The interface, as the gateway uses it::

    backend = open_backend("auto", "hprm_gateway", msg_types, loop=gateway_reactor)
    publish = backend.publisher(msg_type, topic, qos, match=True, owners=["/talker"])
    backend.subscription(msg_type, topic, callback, qos, match=True, owners=["/listener"])
                                                 # callback(cdr_bytes)
    backend.service(srv_type, request_text, response_text, "/tuner/get_parameters",
                    called, owner="/tuner")      # called(reply, fields); reply(**response)
    backend.announce(["/talker", "/listener", "/tuner"])
    backend.spin_once(0.05)                      # in the gateway's ROS 2 thread
    backend.close()
"""

from __future__ import annotations

import importlib
import logging
import re
from typing import Any

__all__ = ["KINDS", "open_backend"]

KINDS = ("auto", "rclpy", "wire")
log = logging.getLogger("hprm.gateway")


def open_backend(kind: str, node_name: str, msg_types: list[str], loop: Any = None) -> Any:
    """The backend ``kind`` (one of :data:`KINDS`) for a gateway node named
    ``node_name`` that carries ``msg_types`` (``pkg/msg/Name`` or ``pkg/srv/Name``).

    ``loop`` (``add_reader``/``remove_reader``, as a reactor has): where the
    rclpy backend can, the subscriptions' callbacks run in that loop's thread,
    woken by the rmw itself, rather than in a thread of the backend's, which
    would have to wake the loop's for every message. The wire client's
    callbacks run in its own thread whatever is given."""
    if kind not in KINDS:
        raise ValueError(f"backend must be one of {KINDS}, not {kind!r}")
    if kind in ("auto", "rclpy"):
        why = rclpy_unusable(msg_types)
        if why is None:
            from hprm_bridge.backends.rclpy import RclpyBackend

            return RclpyBackend(node_name, loop)
        if kind == "rclpy":
            raise RuntimeError(f"the rclpy backend cannot run here: {why}")
        log.info("gateway: the wire client carries the topics (%s)", why)
    from hprm_bridge.backends.wire import WireBackend

    return WireBackend(node_name)


def rclpy_unusable(msg_types: list[str]) -> str | None:
    """Why real rclpy cannot carry ``msg_types`` here, or None if it can."""
    try:
        importlib.import_module("rclpy")
    except ImportError:
        return "rclpy is not importable: source a ROS 2 Humble to use it"
    for ros_type in sorted(set(msg_types)):
        if ros_class(ros_type) is None:
            return f"{ros_type} is not in the sourced ROS 2 (build and source its package)"
    return None


def ros_class(ros_type: str) -> Any | None:
    """The rosidl-generated class of ``pkg/msg/Name``, ``pkg/srv/Name`` or an action's
    part ``pkg/action/Name_Part`` (rosidl keeps those in the action's own module,
    ``pkg.action._name``), or None."""
    pkg, kind, name = ros_type.split("/")
    module = f"{pkg}.{kind}"
    if kind == "action":
        action = name.split("_", 1)[0]  # interface names have no '_' (rosidl)
        # rosidl's module name for it (convert_camel_case_to_lower_case_underscore)
        words = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", action)
        module += "._" + re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", words).lower()
    try:
        cls = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    # rosidl's, not HPRM's own classes of a ported node's process (hprm_bridge.messages)
    return cls if hasattr(cls, "__import_type_support__") else None
