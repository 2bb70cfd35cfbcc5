"""``rclpy.time.Time``: a point in time in ns, as a ported node's clock gives it.

Inside an HPRM federate ``node.get_clock().now()`` is the current logical
time: the same value at every run, whatever the machine's load.
"""

from __future__ import annotations

from typing import Any

from hprm_bridge.rclpy.duration import Duration


class Time:
    """As rclpy's: ``Time(seconds=..., nanoseconds=...)``, arithmetic with
    :class:`Duration`, comparison, ``to_msg()``."""

    def __init__(self, *, seconds: float = 0, nanoseconds: int = 0) -> None:
        if seconds < 0 or nanoseconds < 0:
            raise ValueError("Time cannot be negative (seconds and nanoseconds must be >= 0)")
        self._ns = int(seconds * 1_000_000_000) + int(nanoseconds)

    @property
    def nanoseconds(self) -> int:
        return self._ns

    def seconds_nanoseconds(self) -> tuple[int, int]:
        return divmod(self._ns, 1_000_000_000)

    def to_msg(self) -> Any:
        from hprm_bridge.messages import message_class

        sec, nanosec = self.seconds_nanoseconds()
        return message_class("builtin_interfaces/msg/Time")(sec=sec, nanosec=nanosec)

    @classmethod
    def from_msg(cls, msg: Any) -> Time:
        return cls(seconds=msg.sec, nanoseconds=msg.nanosec)

    def __add__(self, other: Duration) -> Time:
        if not isinstance(other, Duration):
            return NotImplemented
        return Time(nanoseconds=self._ns + other.nanoseconds)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, Time):
            return Duration(nanoseconds=self._ns - other._ns)
        if isinstance(other, Duration):
            return Time(nanoseconds=self._ns - other.nanoseconds)
        return NotImplemented

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Time) and self._ns == other._ns

    def __lt__(self, other: Time) -> bool:
        return self._ns < other._ns

    def __le__(self, other: Time) -> bool:
        return self._ns <= other._ns

    def __hash__(self) -> int:
        return hash(self._ns)

    def __repr__(self) -> str:
        return f"<Time(nanoseconds={self._ns}, clock_type=ROS_TIME)>"
