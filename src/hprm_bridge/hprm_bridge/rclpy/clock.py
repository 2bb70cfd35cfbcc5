"""``rclpy.clock``: a ported node's clock is the federation's logical time.

``node.get_clock().now()`` inside a callback is the tag being processed, the
same value in every run; before the node runs (in ``__init__``) there is no
tag yet and it is the system time, as rclpy's ROS clock would give.
"""

from __future__ import annotations

import time
from typing import Any

from hprm_bridge.rclpy.duration import Duration
from hprm_bridge.rclpy.time import ClockType, Time

__all__ = ["Clock", "ClockType"]


class Clock:
    def __init__(self, reactor: Any = None, *, clock_type: ClockType = ClockType.ROS_TIME):
        self._reactor = reactor
        self.clock_type = clock_type

    def now_ns(self) -> int:
        if self._reactor is not None:
            try:
                return int(self._reactor.tag.time)
            except Exception:  # not running yet: no tag
                pass
        return time.time_ns()

    def logical_ns(self) -> int | None:
        """The tag's time, None before the start (``now_ns`` then says the wall clock)."""
        try:
            return int(self._reactor.tag.time)
        except Exception:
            return None

    def start_ns(self) -> int | None:
        """The federation's start in logical ns, None before it."""
        try:
            return int(self._reactor.start_time)
        except Exception:
            return None

    def now(self) -> Time:
        return Time(nanoseconds=self.now_ns(), clock_type=self.clock_type)

    def sleep_for(self, rel_time: Duration, context: Any = None) -> bool:
        """Sleep ``rel_time``: of logical time where ``time.sleep`` is logical (an action's
        execute callback, a node file's main loop: :mod:`hprm_bridge.rclpy.logical_sleep`),
        of the wall clock elsewhere. True once slept, as rclpy's."""
        from hprm_bridge import rclpy
        from hprm_bridge.rclpy.exceptions import NotInitializedException

        if not rclpy.ok():
            raise NotInitializedException()
        time.sleep(max(rel_time.nanoseconds, 0) / 1_000_000_000)
        return True

    def sleep_until(self, until: Time, context: Any = None) -> bool:
        """Sleep until this clock reads ``until`` (see :meth:`sleep_for`)."""
        if until.clock_type != self.clock_type:
            raise ValueError(
                f"sleep_until a {until.clock_type.name} time on a {self.clock_type.name} clock"
            )
        return self.sleep_for(Duration(nanoseconds=until.nanoseconds - self.now_ns()))
