"""``rclpy.rate.Rate`` of a ported node: ``node.create_rate(hz)``, for the loops of
action execute callbacks and of a node file's main (one that drives its node with
``spin_once``, or spins it on a thread of its own: :mod:`hprm_bridge.rclpy.main_loop`).

``sleep()`` inside an execute callback or such a main sleeps in logical time until the next
period boundary (:mod:`hprm_bridge.rclpy.logical_sleep`), so a loop at 10 Hz steps
at exactly 100 ms of logical time however long each step computes, the same in
every run. Anywhere else it is refused: a callback that blocks holds its whole
node (under rclpy it deadlocks a single-threaded executor); use a timer.
"""

from __future__ import annotations

from collections.abc import Callable

from hprm_bridge.rclpy import logical_sleep
from hprm_bridge.rclpy.exceptions import UnsupportedError


class Rate:
    def __init__(self, period_ns: int, now_ns: Callable[[], int | None]) -> None:
        self._period = period_ns
        self._now_ns = now_ns  # logical time; None before the start
        self._anchor: int | None = None  # the logical time of the first sleep
        self._from_start = False  # the first sleep came before the start: it is the anchor

    def sleep(self) -> None:
        now = self._now_ns()
        if now is None:  # a main's first sleep, before the start: one period after it
            self._from_start = True
            delay = self._period
        else:
            if self._anchor is None:
                self._anchor = now - self._period if self._from_start else now
            wake = self._anchor + ((now - self._anchor) // self._period + 1) * self._period
            delay = wake - now
        if not logical_sleep.sleep(delay / 1_000_000_000):
            raise UnsupportedError(
                "Rate.sleep outside an action's execute callback or a spin_once main loop is not "
                "supported in an HPRM federate: a callback that blocks holds its node (under "
                "rclpy it deadlocks a single-threaded executor); use create_timer"
            )

    def destroy(self) -> None:
        pass
