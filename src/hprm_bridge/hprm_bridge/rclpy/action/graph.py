"""rclpy's action graph queries: an action is its three services (rcl_action's
``NAME/_action/send_goal``, ...), so they answer from the node's service queries
(:mod:`hprm_bridge.rclpy.graph`): an action is listed where a node serves or calls
its goal service, with rosidl's action type."""

from __future__ import annotations

from typing import Any

_SEND_GOAL = "/_action/send_goal"


def _actions(services: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    return [
        (name[: -len(_SEND_GOAL)], [t.removesuffix("_SendGoal") for t in types])
        for name, types in services
        if name.endswith(_SEND_GOAL)
    ]


def get_action_names_and_types(node: Any) -> list[tuple[str, list[str]]]:
    return _actions(node.get_service_names_and_types())


def get_action_server_names_and_types_by_node(
    node: Any, remote_node_name: str, remote_node_namespace: str
) -> list[tuple[str, list[str]]]:
    return _actions(node.get_service_names_and_types_by_node(remote_node_name,
                                                             remote_node_namespace))  # fmt: skip


def get_action_client_names_and_types_by_node(
    node: Any, remote_node_name: str, remote_node_namespace: str
) -> list[tuple[str, list[str]]]:
    return _actions(node.get_client_names_and_types_by_node(remote_node_name,
                                                            remote_node_namespace))  # fmt: skip
