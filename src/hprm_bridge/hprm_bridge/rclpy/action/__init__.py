"""``rclpy.action`` of a ported node: action servers and clients as rclpy (Humble) has
them, on the node's services and topics (:mod:`hprm_bridge.action_ports`); an execute
callback sleeps in logical time (:mod:`hprm_bridge.rclpy.logical_sleep`)."""

from hprm_bridge.rclpy.action.client import ActionClient, ClientGoalHandle
from hprm_bridge.rclpy.action.graph import (
    get_action_client_names_and_types_by_node,
    get_action_names_and_types,
    get_action_server_names_and_types_by_node,
)
from hprm_bridge.rclpy.action.server import (
    ActionServer,
    CancelResponse,
    GoalResponse,
    ServerGoalHandle,
)

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
