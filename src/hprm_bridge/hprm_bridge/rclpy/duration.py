"""``rclpy.duration.Duration``: a signed span of time in ns."""

from __future__ import annotations

from typing import Any

from hprm_bridge.rclpy.constants import S_TO_NS as S_TO_NS  # rclpy.duration has it


class Duration:
    def __init__(self, *, seconds: float = 0, nanoseconds: int = 0) -> None:
        self._ns = int(seconds * 1_000_000_000) + int(nanoseconds)

    @property
    def nanoseconds(self) -> int:
        return self._ns

    def to_msg(self) -> Any:
        from hprm_bridge.messages import message_class

        sec, nanosec = divmod(self._ns, 1_000_000_000)
        return message_class("builtin_interfaces/msg/Duration")(sec=sec, nanosec=nanosec)

    @classmethod
    def from_msg(cls, msg: Any) -> Duration:
        """The span a ``builtin_interfaces/msg/Duration`` holds."""
        return cls(seconds=msg.sec, nanoseconds=msg.nanosec)

    def __add__(self, other: Duration) -> Duration:
        if not isinstance(other, Duration):
            return NotImplemented
        return Duration(nanoseconds=self._ns + other._ns)

    def __sub__(self, other: Duration) -> Duration:
        if not isinstance(other, Duration):
            return NotImplemented
        return Duration(nanoseconds=self._ns - other._ns)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Duration):
            raise TypeError(f"cannot compare a Duration with {type(other).__name__}")
        return self._ns == other._ns

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __lt__(self, other: Duration) -> bool:
        return self._ns < other._ns if isinstance(other, Duration) else NotImplemented

    def __le__(self, other: Duration) -> bool:
        return self._ns <= other._ns if isinstance(other, Duration) else NotImplemented

    def __gt__(self, other: Duration) -> bool:
        return self._ns > other._ns if isinstance(other, Duration) else NotImplemented

    def __ge__(self, other: Duration) -> bool:
        return self._ns >= other._ns if isinstance(other, Duration) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._ns)

    def __repr__(self) -> str:
        return f"Duration(nanoseconds={self._ns})"

    def __str__(self) -> str:
        return "Infinite" if self == Infinite else f"{self._ns} nanoseconds"


# rmw's RMW_DURATION_INFINITE: what a zero ("default") QoS duration resolves to
Infinite = Duration(nanoseconds=2**63 - 1)
