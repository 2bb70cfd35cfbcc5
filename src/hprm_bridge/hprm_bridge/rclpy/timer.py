"""``rclpy.timer.Timer`` of a ported node: a reactor timer in logical time, first firing
one period after the start, as rclpy's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hprm_bridge.rclpy.exceptions import InvalidHandle
from hprm_core import Timer as _ReactorTimer


class TimerHandle:
    def __init__(self, period_ns: int, timer: _ReactorTimer, callback: Callable[..., Any]) -> None:
        self.timer_period_ns = period_ns
        self._timer = timer
        self.callback = callback
        self.cancelled = False
        self._destroyed = False

    def cancel(self) -> None:
        """As rclpy's; the timer's next firing is unscheduled too, so that a cancelled
        timer does not move a decentralized federate's logical time."""
        if self._destroyed:  # its reactor timer may be another handle's now (late_entities)
            raise InvalidHandle(f"the timer of period {self.timer_period_ns} ns")
        self.cancelled = True
        self._timer.cancel()

    def is_canceled(self) -> bool:
        return self.cancelled

    def reset(self) -> None:
        if self._destroyed:
            raise InvalidHandle(f"the timer of period {self.timer_period_ns} ns")
        self.cancelled = False
        self._timer.reset()

    def destroy(self) -> None:
        self.cancel()
        self._destroyed = True


Timer = TimerHandle  # rclpy's name
