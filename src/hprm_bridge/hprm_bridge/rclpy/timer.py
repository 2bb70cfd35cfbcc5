"""``rclpy.timer.Timer`` of a ported node: a reactor timer in logical time, first firing
one period after the start, as rclpy's (made after the start: one of the node's
:mod:`~hprm_bridge.rclpy.timer_wheel`, first firing one period after it is made)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hprm_bridge.rclpy.exceptions import InvalidHandle
from hprm_bridge.rclpy.logical_sleep import drive
from hprm_bridge.rclpy.rate import Rate as Rate  # rclpy.timer has it
from hprm_bridge.rclpy.timer_wheel import WheelTimer
from hprm_core import Timer as _ReactorTimer


class TimerHandle:
    """A node's timer, in logical time: its period, the times since its last call and
    until its next, and whether it is due are the federation's, the same every run.

    Changing ``timer_period_ns`` takes effect after the next call, as under rcl (whose
    next call time is fixed when the previous one runs).
    """

    def __init__(
        self, period_ns: int, timer: _ReactorTimer | WheelTimer | None,
        callback: Callable[..., Any], clock: Any,
    ) -> None:  # fmt: skip
        self._period_ns = period_ns
        self._timer = timer
        self.callback = callback
        self._clock = clock
        self.cancelled = False
        self._destroyed = False
        # logical times of the last call (or reset) and of the next: None until the
        # first call of a timer made before the start (then the start, and one period on)
        now = clock.logical_ns()
        self._last_ns: int | None = now
        self._next_ns: int | None = None if now is None else now + period_ns

    @property
    def clock(self) -> Any:
        return self._clock

    @property
    def timer_period_ns(self) -> int:
        return self._period_ns

    @timer_period_ns.setter
    def timer_period_ns(self, value: int) -> None:
        period = int(value)
        if period <= 0:
            raise ValueError(f"timer period must be > 0 ns, got {value!r}")
        self._period_ns = self._timer.period = period  # the next call stays where it was

    def _call(self) -> None:
        """The reactor timer fired: the node's callback, unless cancelled."""
        if not self.cancelled:
            self._last_ns = self._clock.logical_ns()
            self._next_ns = self._last_ns + self._period_ns
            drive(self.callback())

    def _times(self) -> tuple[int, int, int] | None:
        """(last call, next call, now) in logical ns; None before the start."""
        now = self._clock.logical_ns()
        if now is None:
            return None
        if self._last_ns is None or self._next_ns is None:  # made before the start
            start = self._clock.start_ns()
            return start, start + self._timer.offset, now
        return self._last_ns, self._next_ns, now

    def time_since_last_call(self) -> int:
        """ns of logical time since the last call (or the start, or a reset)."""
        times = self._times()
        return 0 if times is None else times[2] - times[0]

    def time_until_next_call(self) -> int | None:
        """ns of logical time until the next call; None once cancelled."""
        if self.cancelled:
            return None
        times = self._times()
        return self._period_ns if times is None else times[1] - times[2]

    def is_ready(self) -> bool:
        """Whether the timer is due (at the tag it fires, before its callback runs)."""
        until = self.time_until_next_call()
        return until is not None and until <= 0 and self._clock.logical_ns() is not None

    def cancel(self) -> None:
        """As rclpy's; the timer's next firing is unscheduled too, so that a cancelled
        timer does not move a decentralized federate's logical time."""
        if self._destroyed:
            raise InvalidHandle(f"the timer of period {self._period_ns} ns")
        self.cancelled = True
        self._timer.cancel()

    def is_canceled(self) -> bool:
        return self.cancelled

    def reset(self) -> None:
        """As rcl's: its next call one period from now, cancelled or not."""
        if self._destroyed:
            raise InvalidHandle(f"the timer of period {self._period_ns} ns")
        self.cancelled = False
        self._last_ns = self._clock.logical_ns()
        self._next_ns = None if self._last_ns is None else self._last_ns + self._period_ns
        self._timer.cancel()  # a running one too: its next firing is dropped
        self._timer.reset()

    def destroy(self) -> None:
        self.cancel()
        self._destroyed = True


Timer = TimerHandle  # rclpy's name
