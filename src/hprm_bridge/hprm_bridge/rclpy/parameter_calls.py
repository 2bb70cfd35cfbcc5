"""Calls of one ported node to another's parameter services (``/talker/get_parameters``).

Every rclpy node serves six parameter services, and a node may call another's (a
manager that tunes its peers, a node that reads a shared configuration). Between ported
nodes such a call crosses as a tagged message, as any service call does
(:mod:`hprm_bridge.service_ports`): it is answered at the tag it was made, from the
called node's parameters as they are at that tag, with what rclpy's ``ParameterService``
answers (:mod:`hprm_bridge.rclpy.parameter_service`); a set goes through the called
node's descriptors and ``add_on_set_parameters_callback`` callbacks at that tag. So every
run gives the same answers at the same tags.

Every ported node has two ports for it (:func:`~hprm_bridge.parameter_services.call_topic`
in, ``answer_topic`` out). They carry no message type, so a gateway never takes them:
``ros2 param`` reaches a node over its own two ports (``--node-services``), which are
not waited on, since its calls come from outside at any time; these are, like any input.

A client of a parameter service gets both routes before the start, since its node cannot
know then whether the called node is ported: the service's ordinary ports (a plain
ROS 2 node of that name, through the gateway) and these. At the start it keeps the one
that is connected.

Example (a node file, unchanged from rclpy)::

    client = node.create_client(GetParameters, "/talker/get_parameters")
    future = client.call_async(GetParameters.Request(names=["rate"]))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from hprm_bridge import parameter_services
from hprm_core import Input

if TYPE_CHECKING:
    from hprm_bridge.rclpy.client import Client
    from hprm_bridge.rclpy.node import Node
    from hprm_bridge.rclpy.publisher import Publisher


class Route(NamedTuple):
    """A client's way to a ported node's parameter service."""

    service: str  # its short name: get_parameters, ...
    calls: Publisher  # into the called node's call port
    answers: Input  # out of its answer port


def serve(node: Node, fqn: str) -> tuple[Input, Publisher]:
    """The node's two ports for other ported nodes' calls (in the constructor)."""
    calls = Input(topic=parameter_services.call_topic(fqn), msg_type=None)
    node._reactor.attach("parameter_calls_in", calls)
    answers = node._publisher(parameter_services.answer_topic(fqn), None, "parameter_answers")
    return calls, answers


def route(node: Node, srv_type: Any, name: str, index: int) -> Route | None:
    """The ports of a client of ``name`` if it is another node's parameter service."""
    called = parameter_services.parameter_service_of(name)
    if called is None or called[0] == node.get_fully_qualified_name():
        return None
    if getattr(srv_type, "_hprm_type", "") != parameter_services.srv_type(called[1]):
        return None
    calls = node._publisher(parameter_services.call_topic(called[0]), None,
                            f"client{index}_parameters")  # fmt: skip
    answers = Input(topic=parameter_services.answer_topic(called[0]), msg_type=None)
    node._reactor.attach(f"client{index}_parameter_answers", answers)
    return Route(called[1], calls, answers)


def receive(client: Client) -> None:
    """The reaction to the called node's answers: complete this client's futures."""
    assert client._route is not None
    for (key, sequence), fields in client._route.answers.value:
        if key == client._key:
            client._complete(sequence, client.srv_type.Response(**fields))
