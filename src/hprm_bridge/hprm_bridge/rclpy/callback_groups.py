"""``rclpy.callback_groups``: which of a node's callbacks may run while another waits.

In an HPRM federate a node's callbacks run one at a time in tag order, so a group
matters only where a callback can wait across tags: in a node whose callbacks run as
tasks (spun by a ``MultiThreadedExecutor``, or with ``async def`` callbacks;
:mod:`hprm_bridge.rclpy.logical_sleep`), a callback blocked in ``client.call()`` holds
its group until it returns, as under rclpy. While a ``MutuallyExclusiveCallbackGroup``
(a node's default group) is held, its other callbacks, and the same callback's next
tick or message, wait for it and then run in the order they came, as soon as it
returns (at that tag, or its next microstep); a timer that fired several times
meanwhile is called once, as rcl calls a late timer once. A
``ReentrantCallbackGroup``'s callbacks start at once, each in a task of its own.

Unlike rclpy, a client's answer never waits for its group (it is no callback of the
node here): a node whose timer calls a client of the same group, which deadlocks under
rclpy (the "Using callback groups" tutorial), gets its answer ported.

Example (the tutorial's fix, which reads the same under rclpy)::

    calls, ticks = MutuallyExclusiveCallbackGroup(), MutuallyExclusiveCallbackGroup()
    self.client = self.create_client(AddTwoInts, "add", callback_group=calls)
    self.timer = self.create_timer(1.0, self.call_it, callback_group=ticks)
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Callable
from typing import Any


class CallbackGroup:
    """Entities and the calls of theirs that wait for the group to be free."""

    def __init__(self) -> None:
        self.entities: weakref.WeakSet[Any] = weakref.WeakSet()  # as rclpy's: not kept alive
        self._waiting: deque[tuple[Any, Callable[[], None]]] = deque()

    def add_entity(self, entity: Any) -> None:
        self.entities.add(entity)

    def has_entity(self, entity: Any) -> bool:
        return entity in self.entities

    def can_execute(self, entity: Any) -> bool:
        return True

    def beginning_execution(self, entity: Any) -> bool:
        """Take the group for ``entity``'s callback; False where it must wait."""
        return True

    def ending_execution(self, entity: Any) -> None:
        """``entity``'s callback has returned."""


class MutuallyExclusiveCallbackGroup(CallbackGroup):
    def __init__(self) -> None:
        super().__init__()
        self._active: Any = None

    def can_execute(self, entity: Any) -> bool:
        return self._active is None

    def beginning_execution(self, entity: Any) -> bool:
        if self._active is not None:
            return False
        self._active = entity
        return True

    def ending_execution(self, entity: Any) -> None:
        self._active = None


class ReentrantCallbackGroup(CallbackGroup):
    pass


def run_in_group(tasks: Any, entity: Any, call: Callable[[], None], once: bool = False) -> None:
    """From the reactor, in ``entity``'s place among the tag's callbacks: ``call`` as a
    task of ``tasks`` (a Sleeper) holding ``entity.callback_group``, or, while another
    callback holds it, later, once it is free. ``once``: a call of ``entity`` already
    waiting stands for this one (a timer's)."""
    group = entity.callback_group
    if group.beginning_execution(entity):
        tasks.run_now(_holding(tasks, group, entity, call))
    elif not (once and any(e is entity for e, _ in group._waiting)):
        group._waiting.append((entity, call))


def _holding(
    tasks: Any, group: CallbackGroup, entity: Any, call: Callable[[], None]
) -> Callable[[], None]:
    def task() -> None:
        try:
            call()
        finally:
            group.ending_execution(entity)
            if group._waiting:  # the first that waits takes the group now: nothing overtakes it
                entity_, call_ = group._waiting.popleft()
                group.beginning_execution(entity_)
                tasks.start(_holding(tasks, group, entity_, call_))

    return task
