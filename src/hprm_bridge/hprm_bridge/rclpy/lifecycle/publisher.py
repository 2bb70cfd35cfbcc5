"""rclpy's ``LifecyclePublisher``: publishes only while its node is active (a publish
while inactive is dropped, as rclpy drops it)."""

from __future__ import annotations

from typing import Any

from hprm_bridge.rclpy.lifecycle.managed_entity import SimpleManagedEntity
from hprm_bridge.rclpy.publisher import Publisher


class LifecyclePublisher(SimpleManagedEntity, Publisher):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        SimpleManagedEntity.__init__(self)
        Publisher.__init__(self, *args, **kwargs)

    @SimpleManagedEntity.when_enabled
    def publish(self, msg: Any) -> None:
        Publisher.publish(self, msg)
