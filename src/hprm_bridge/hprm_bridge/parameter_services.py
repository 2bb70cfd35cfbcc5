"""The parameter services of ported nodes, as ``ros2 param`` reaches them.

Every rclpy node serves six services under its name (``/talker/get_parameters``
and so on, types from ``rcl_interfaces/srv``); ``ros2 param list/get/set`` and
rqt's parameter plugin call them. A ported node's parameters live in its own
federate process, so the gateway serves the services for every node behind it
and carries each call into the federation and back over two ports of that
node (:func:`request_topic`, :func:`reply_topic`):

- a request enters the federation as a tagged event at its arrival (like any
  ROS 2 message at the gateway), so a ``ros2 param set`` takes effect at one
  tag, between two callbacks, never in the middle of one, and a recorded
  run says at which tag;
- the node answers at that tag with what rclpy would answer; the gateway sends
  the reply to the caller.

Values on the ports: a request is ``(token, service, request)``, a reply
``(token, response fields)``; the token lets the gateway find the caller. Other ported
nodes' calls come over two more ports of the node, the same way
(:func:`call_topic`, :func:`answer_topic`; :mod:`hprm_bridge.rclpy.parameter_calls`).
"""

from __future__ import annotations

# the six services and their types, rcl_interfaces/srv/<type> (wire/typesys.py has them)
SERVICES: dict[str, str] = {
    "describe_parameters": "DescribeParameters",
    "get_parameters": "GetParameters",
    "get_parameter_types": "GetParameterTypes",
    "list_parameters": "ListParameters",
    "set_parameters": "SetParameters",
    "set_parameters_atomically": "SetParametersAtomically",
}

PORT_TYPE = "hprm_bridge/srv/ParameterCall"  # what the two ports carry (a label)
_PREFIX = "/_hprm/parameters"


def request_topic(node_fqn: str) -> str:
    """The port topic that carries calls into the node ``node_fqn`` (``/ns/name``)."""
    return f"{_PREFIX}{node_fqn}/request"


def reply_topic(node_fqn: str) -> str:
    return f"{_PREFIX}{node_fqn}/reply"


def node_of(topic: str) -> str | None:
    """The node whose request topic this is, or None for any other topic."""
    if topic.startswith(_PREFIX + "/") and topic.endswith("/request"):
        return topic[len(_PREFIX) : -len("/request")]
    return None


def is_parameter_topic(topic: str) -> bool:
    return topic.startswith(_PREFIX + "/")


def srv_type(service: str) -> str:
    return f"rcl_interfaces/srv/{SERVICES[service]}"


# Calls from one ported node to another's parameter services (rclpy/parameter_calls.py):
# two more ports of every node, untyped so that a gateway never takes them.
def call_topic(node_fqn: str) -> str:
    """The port topic of other ported nodes' calls into node ``node_fqn``."""
    return f"{_PREFIX}{node_fqn}/call"


def answer_topic(node_fqn: str) -> str:
    return f"{_PREFIX}{node_fqn}/answer"


def parameter_service_of(service: str) -> tuple[str, str] | None:
    """``(node, short name)`` when ``service`` (``/ns/node/get_parameters``) is one of a
    node's parameter services, else None."""
    node, _, short = service.rpartition("/")
    return (node, short) if node and short in SERVICES else None
