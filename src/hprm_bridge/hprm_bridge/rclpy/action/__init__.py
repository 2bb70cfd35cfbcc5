"""``rclpy.action`` of a ported node: action servers and clients as rclpy (Humble) has
them, on the node's services and topics (:mod:`hprm_bridge.action_ports`); an execute
callback sleeps in logical time (:mod:`hprm_bridge.rclpy.logical_sleep`)."""

from hprm_bridge.rclpy.action.client import ActionClient, ClientGoalHandle
from hprm_bridge.rclpy.action.server import (
    ActionServer,
    CancelResponse,
    GoalResponse,
    ServerGoalHandle,
)
from hprm_bridge.rclpy.node import _unsupported

__all__ = [
    "ActionClient",
    "ActionServer",
    "CancelResponse",
    "ClientGoalHandle",
    "GoalResponse",
    "ServerGoalHandle",
    "get_action_client_names_and_types_by_node",
    "get_action_names_and_types",
    "get_action_server_names_and_types_by_node",
]

_GRAPH = "the action graph is not ported yet (the topic graph is: Node.get_topic_names_and_types)"
get_action_names_and_types = _unsupported("rclpy.action.get_action_names_and_types", _GRAPH)
get_action_client_names_and_types_by_node = _unsupported(
    "rclpy.action.get_action_client_names_and_types_by_node", _GRAPH
)
get_action_server_names_and_types_by_node = _unsupported(
    "rclpy.action.get_action_server_names_and_types_by_node", _GRAPH
)
