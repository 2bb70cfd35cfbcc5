"""``rclpy.time.Time``: a point in time in ns, of a clock type, as a ported node's clock
gives it.

Inside an HPRM federate ``node.get_clock().now()`` is the current logical
time: the same value at every run, whatever the machine's load. Its clock type is
``ROS_TIME`` (a node's clock), while a ``Time`` made by hand is ``SYSTEM_TIME``, as in
rclpy; times of two clock types neither compare nor subtract (``TypeError``), as there.
"""

from __future__ import annotations

import enum
from typing import Any

from hprm_bridge.rclpy.duration import Duration

CONVERSION_CONSTANT = 10**9  # ns in a second, as rclpy.time names it


class ClockType(enum.IntEnum):
    """rcl's clock types (``rclpy.clock.ClockType``)."""

    UNINITIALIZED = 0
    ROS_TIME = 1
    SYSTEM_TIME = 2
    STEADY_TIME = 3


class Time:
    """As rclpy's: ``Time(seconds=..., nanoseconds=..., clock_type=...)``, arithmetic
    with :class:`Duration`, comparison, ``to_msg()``.

    >>> t = Time(seconds=1, clock_type=ClockType.ROS_TIME) + Duration(seconds=0.5)
    >>> t, t.seconds_nanoseconds()
    (Time(nanoseconds=1500000000, clock_type=ROS_TIME), (1, 500000000))
    """

    def __init__(
        self, *, seconds: float = 0, nanoseconds: int = 0,
        clock_type: ClockType = ClockType.SYSTEM_TIME,
    ) -> None:  # fmt: skip
        if seconds < 0 or nanoseconds < 0:
            raise ValueError("Time cannot be negative (seconds and nanoseconds must be >= 0)")
        self._ns = int(seconds * 1_000_000_000) + int(nanoseconds)
        if self._ns >= 2**63:
            raise OverflowError(f"{self._ns} ns is past the largest time rcl holds (2**63 - 1)")
        self._clock_type = ClockType(clock_type)

    @property
    def nanoseconds(self) -> int:
        return self._ns

    @property
    def clock_type(self) -> ClockType:
        return self._clock_type

    def seconds_nanoseconds(self) -> tuple[int, int]:
        return divmod(self._ns, 1_000_000_000)

    def to_msg(self) -> Any:
        from hprm_bridge.messages import message_class

        sec, nanosec = self.seconds_nanoseconds()
        return message_class("builtin_interfaces/msg/Time")(sec=sec, nanosec=nanosec)

    @classmethod
    def from_msg(cls, msg: Any, clock_type: ClockType = ClockType.ROS_TIME) -> Time:
        return cls(seconds=msg.sec, nanoseconds=msg.nanosec, clock_type=clock_type)

    def _same_clock(self, other: Time, doing: str) -> None:
        if self._clock_type != other._clock_type:
            raise TypeError(
                f"cannot {doing} a {self._clock_type.name} time and a "
                f"{other._clock_type.name} one (different clock types)"
            )

    def __add__(self, other: Duration) -> Time:
        if not isinstance(other, Duration):
            return NotImplemented
        return Time(nanoseconds=self._ns + other.nanoseconds, clock_type=self._clock_type)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, Time):
            self._same_clock(other, "subtract")
            return Duration(nanoseconds=self._ns - other._ns)
        if isinstance(other, Duration):
            return Time(nanoseconds=self._ns - other.nanoseconds, clock_type=self._clock_type)
        return NotImplemented

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Time):
            raise TypeError(f"cannot compare a Time with {type(other).__name__}")
        self._same_clock(other, "compare")
        return self._ns == other._ns

    def __ne__(self, other: object) -> bool:
        return not self == other

    def _key(self, other: Any) -> int:
        self._same_clock(other, "compare")
        return other._ns

    def __lt__(self, other: Time) -> bool:
        return self._ns < self._key(other) if isinstance(other, Time) else NotImplemented

    def __le__(self, other: Time) -> bool:
        return self._ns <= self._key(other) if isinstance(other, Time) else NotImplemented

    def __gt__(self, other: Time) -> bool:
        return self._ns > self._key(other) if isinstance(other, Time) else NotImplemented

    def __ge__(self, other: Time) -> bool:
        return self._ns >= self._key(other) if isinstance(other, Time) else NotImplemented

    def __hash__(self) -> int:
        return hash((self._ns, self._clock_type))

    def __repr__(self) -> str:
        return f"Time(nanoseconds={self._ns}, clock_type={self._clock_type.name})"
