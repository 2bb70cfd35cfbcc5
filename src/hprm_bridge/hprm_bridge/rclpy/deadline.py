"""The QoS deadline of a ported node's publisher or subscription, in logical time.

Under DDS a reader (or writer) with a deadline period counts a miss for every period
that passes with no new message after its last one, and calls the node's deadline
callback with the count (:mod:`hprm_bridge.rclpy.qos_event`). Here that is a reactor
timer per watched entity: armed one period after each message (or publish), firing
every period until the next one comes. Nothing is missed before the first message, as
a keyless DDS topic has no instance until then. The same tags in every run, where
under DDS a miss falls wherever the wall clock puts it.

A watch made after the start (a lifecycle node configured again, a subscription made
in a callback) watches with a timer of the node's wheel instead
(:mod:`hprm_bridge.rclpy.timer_wheel`): the same tags.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hprm_core import Timer


class DeadlineWatch:
    """One entity's deadline: ``seen()`` at each of its messages; the timer's reaction
    is ``missed``."""

    def __init__(self, period_ns: int, callback: Callable[[Any], None], info: type) -> None:
        self.timer: Any = Timer(offset=period_ns, period=period_ns)  # or a WheelTimer
        self.timer.cancel()  # armed by the first message
        self._callback = callback
        self._info = info
        self.total_count = 0

    def seen(self) -> None:
        """A message now: the next miss is one period on."""
        self.timer.cancel()
        self.timer.reset()

    def stop(self) -> None:
        """Its entity was destroyed: no more misses."""
        self.timer.cancel()

    def missed(self) -> None:
        self.total_count += 1
        self._callback(self._info(total_count=self.total_count, total_count_change=1))


def watch(qos: Any, event_callbacks: Any, info: type) -> DeadlineWatch | None:
    """The watch an entity of ``qos`` and ``event_callbacks`` needs, if any: a deadline
    callback and a deadline period above zero (rclpy's default, 0, is none)."""
    callback = getattr(event_callbacks, "deadline", None)
    period = qos.deadline.nanoseconds if callback is not None else 0
    return DeadlineWatch(period, callback, info) if period > 0 else None
