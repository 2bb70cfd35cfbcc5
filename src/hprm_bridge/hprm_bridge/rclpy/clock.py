"""``rclpy.clock``: a ported node's clock is the federation's logical time.

``node.get_clock().now()`` inside a callback is the tag being processed, the
same value in every run; before the node runs (in ``__init__``) there is no
tag yet and it is the system time, as rclpy's ROS clock would give.
"""

from __future__ import annotations

import enum
import time
from typing import Any

from hprm_bridge.rclpy.duration import Duration
from hprm_bridge.rclpy.time import ClockType, Time

__all__ = ["Clock", "ClockChange", "ClockType", "JumpHandle", "JumpThreshold", "ROSClock",
           "TimeJump"]  # fmt: skip


class ClockChange(enum.IntEnum):
    """rcl's kinds of clock jump (``TimeJump.clock_change``)."""

    ROS_TIME_NO_CHANGE = 1
    ROS_TIME_ACTIVATED = 2
    ROS_TIME_DEACTIVATED = 3
    SYSTEM_TIME_NO_CHANGE = 4


class JumpThreshold:
    """When a jump callback is due: a jump forward of at least ``min_forward`` (positive),
    back of at least ``min_backward`` (negative), or ROS time switched on or off."""

    def __init__(
        self, *, min_forward: Duration | None, min_backward: Duration | None,
        on_clock_change: bool = True,
    ) -> None:  # fmt: skip
        if min_forward is not None and min_forward.nanoseconds <= 0:
            raise ValueError("min_forward must be a positive non-zero duration")
        if min_backward is not None and min_backward.nanoseconds >= 0:
            raise ValueError("min_backward must be a negative non-zero duration")
        if min_forward is None and min_backward is None and not on_clock_change:
            raise ValueError("At least one jump threshold must be enabled")
        self.min_forward = min_forward
        self.min_backward = min_backward
        self.on_clock_change = on_clock_change


class TimeJump:
    def __init__(self, clock_change: ClockChange, delta: Duration) -> None:
        if not isinstance(clock_change, ClockChange):
            raise TypeError("clock_change must be an instance of rclpy.clock.ClockChange")
        self.clock_change = clock_change
        self.delta = delta


class JumpHandle:
    """A registered jump callback (``Clock.create_jump_callback``). A federate's clock never
    jumps: logical time only moves forward, tag by tag, from a start no node sets, so the
    callbacks are kept and never called (a node that resets state on a jump, as when a
    bag loops under ``use_sim_time``, needs no reset here)."""

    def __init__(
        self, *, clock: Clock, threshold: JumpThreshold, pre_callback: Any, post_callback: Any
    ) -> None:
        if pre_callback is None and post_callback is None:
            raise ValueError("One of pre_callback or post_callback must be callable")
        if pre_callback is not None and not callable(pre_callback):
            raise ValueError("pre_callback must be callable if given")
        if post_callback is not None and not callable(post_callback):
            raise ValueError("post_callback must be callable if given")
        self._clock: Clock | None = clock
        self.threshold = threshold

    def unregister(self) -> None:
        self._clock = None

    def __enter__(self) -> JumpHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unregister()


class Clock:
    """As rclpy's: ``Clock()`` reads the system clock, ``Clock(clock_type=STEADY_TIME)`` a
    monotonic one, and a ROS-time clock (a node's, or ``ROSClock()``) is a
    :class:`ROSClock`: in a ported node, the federation's logical time."""

    def __new__(cls, reactor: Any = None, *, clock_type: ClockType = ClockType.SYSTEM_TIME) -> Any:
        if not isinstance(clock_type, ClockType):
            raise TypeError("Clock type must be a ClockType enum")
        if clock_type is ClockType.ROS_TIME and not issubclass(cls, ROSClock):
            cls = ROSClock
        return super().__new__(cls)

    def __init__(self, reactor: Any = None, *, clock_type: ClockType = ClockType.SYSTEM_TIME):
        self._reactor = reactor
        self._clock_type = clock_type
        self._read = time.monotonic_ns if clock_type is ClockType.STEADY_TIME else time.time_ns

    @property
    def clock_type(self) -> ClockType:
        return self._clock_type

    def __repr__(self) -> str:
        return f"Clock(clock_type={self.clock_type.name})"

    def now_ns(self) -> int:
        if self._reactor is not None:
            try:
                return int(self._reactor.tag.time)
            except Exception:  # not running yet: no tag
                pass
        return self._read()

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

    def create_jump_callback(
        self, threshold: JumpThreshold, *, pre_callback: Any = None, post_callback: Any = None
    ) -> JumpHandle:
        """Accepted; never called in a federate (:class:`JumpHandle` says why)."""
        return JumpHandle(clock=self, threshold=threshold, pre_callback=pre_callback,
                          post_callback=post_callback)  # fmt: skip


class ROSClock(Clock):
    """A ROS-time clock. In a ported node, the federation's logical time
    (``ros_time_is_active``: whether the node was told ``use_sim_time``, which changes
    nothing here: logical time is the one clock of a federation)."""

    def __init__(self, reactor: Any = None, *, clock_type: ClockType = ClockType.ROS_TIME):
        super().__init__(reactor, clock_type=ClockType.ROS_TIME)
        self._ros_time_is_active = False

    @property
    def ros_time_is_active(self) -> bool:
        return self._ros_time_is_active

    def _set_ros_time_is_active(self, enabled: bool) -> None:
        self._ros_time_is_active = enabled
