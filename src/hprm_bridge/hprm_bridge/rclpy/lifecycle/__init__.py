"""``rclpy.lifecycle`` in an HPRM federate: managed nodes (:mod:`.node` says what
differs from rclpy, and why: the node is configured and activated as it joins)."""

from hprm_bridge.rclpy.lifecycle.managed_entity import ManagedEntity, SimpleManagedEntity
from hprm_bridge.rclpy.lifecycle.node import LifecycleNode, LifecycleNodeMixin, LifecycleState
from hprm_bridge.rclpy.lifecycle.publisher import LifecyclePublisher
from hprm_bridge.rclpy.lifecycle.state_machine import TransitionCallbackReturn

# rclpy's short names
Node = LifecycleNode
NodeMixin = LifecycleNodeMixin
State = LifecycleState
Publisher = LifecyclePublisher

__all__ = [
    "LifecycleNode", "LifecycleNodeMixin", "LifecyclePublisher", "LifecycleState",
    "ManagedEntity", "SimpleManagedEntity", "TransitionCallbackReturn",
]  # fmt: skip
