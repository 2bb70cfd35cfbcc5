"""``rclpy.guard_condition.GuardCondition``: a callback the node's own code asks for.

Under rclpy, ``trigger()`` wakes the executor, which calls the guard condition's
callback at its next wait (ros2/examples' ``trigger_guard_condition``: a timer
triggers it, its callback shuts down). A guard condition is a flag: triggered
twice before the executor looks, it calls back once.

In a federate a callback runs at a tag, so the question is which one:

- triggered in the node's turn (one of its callbacks, a task, or the node file's
  main loop between two ``spin_once``), it calls back one microstep later, at the
  same logical time: the same tag in every run, after the tag's other callbacks
  (as rclpy's executor takes it at its next wait, after the callback that
  triggered it). Triggered twice at one tag, it calls back once;
- triggered before the start, it calls back at the start (the first wait);
- triggered by a thread of the node file's own, outside any turn (the usual way to
  wake an executor from a worker thread), it is an event from outside logical time,
  a physical action: tagged by the wall clock when it comes, like a sensor's. A node
  with a guard condition tells the RTI no more than the wall clock allows (in
  centralized coordination its promises then follow physical time), which is why
  only nodes that create one pay for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hprm_bridge.rclpy.exceptions import InvalidHandle
from hprm_bridge.rclpy.logical_sleep import drive, holds_turn
from hprm_core import LogicalAction, PhysicalAction


class GuardCondition:
    """As rclpy's: ``trigger()``, ``callback``, ``callback_group``; made by
    ``node.create_guard_condition(callback)``."""

    def __init__(self, callback: Callable[[], Any] | None, reactor_thread: Callable[[], Any]):
        self.callback = callback
        self.callback_group: Any = None
        self._reactor_thread = reactor_thread  # the thread running the node's reactions
        self._triggered = False  # in the node's turn: called back at the next microstep
        self._soon = LogicalAction()
        self._outside = PhysicalAction()
        self._destroyed = False

    def trigger(self) -> None:
        if self._destroyed:
            raise InvalidHandle("the guard condition")
        if self._in_turn():
            self._triggered = True
        else:
            self._outside.schedule()

    def _in_turn(self) -> bool:
        return holds_turn(self._reactor_thread())  # not started: called back at the start

    def _call(self) -> None:
        if not self._destroyed and self.callback is not None:
            drive(self.callback())

    def destroy(self) -> None:
        self._destroyed = True


def schedule(guards: list[GuardCondition]) -> None:
    """A reaction after the tag's callbacks: each guard condition they triggered calls
    back at the next microstep (once, however often it was triggered)."""
    for guard in guards:
        if guard._triggered:
            guard._triggered = False
            guard._soon.schedule()
