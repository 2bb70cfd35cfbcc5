"""``rclpy.callback_groups``: accepted, so node code that puts its callbacks in groups
runs. Under rclpy a group says which callbacks a multi-threaded executor may run at
once; in an HPRM federate a node's callbacks run one at a time in tag order, and an
action's execute callback takes turns with the others at its sleeps
(:mod:`hprm_bridge.rclpy.logical_sleep`), so every group behaves alike: what a
reentrant group is for (a cancel request seen while a goal executes) happens anyway."""

from __future__ import annotations

from typing import Any


class CallbackGroup:
    def __init__(self) -> None:
        self.entities: list[Any] = []

    def add_entity(self, entity: Any) -> None:
        self.entities.append(entity)

    def has_entity(self, entity: Any) -> bool:
        return entity in self.entities

    def can_execute(self, entity: Any) -> bool:
        return True


class MutuallyExclusiveCallbackGroup(CallbackGroup):
    pass


class ReentrantCallbackGroup(CallbackGroup):
    pass
