"""``rclpy.clock``: a ported node's clock is the federation's logical time.

``node.get_clock().now()`` inside a callback is the tag being processed, the
same value in every run; before the node runs (in ``__init__``) there is no
tag yet and it is the system time, as rclpy's ROS clock would give.
"""

from __future__ import annotations

import enum
import time
from typing import Any

from hprm_bridge.rclpy.time import Time

__all__ = ["Clock", "ClockType"]


class ClockType(enum.IntEnum):
    UNINITIALIZED = 0
    ROS_TIME = 1
    SYSTEM_TIME = 2
    STEADY_TIME = 3


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
        return Time(nanoseconds=self.now_ns())
