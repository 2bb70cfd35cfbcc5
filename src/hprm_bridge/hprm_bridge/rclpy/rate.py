"""``rclpy.rate.Rate`` of a ported node: ``node.create_rate(hz)``, for the loops of
action execute callbacks and of a main that drives its node with ``spin_once``.

``sleep()`` inside an execute callback or such a main (after its first ``spin_once``:
:mod:`hprm_bridge.rclpy.main_loop`) sleeps in logical time until the next
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
    def __init__(self, period_ns: int, now_ns: Callable[[], int]) -> None:
        self._period = period_ns
        self._now_ns = now_ns
        self._anchor: int | None = None  # the logical time of the first sleep

    def sleep(self) -> None:
        now = self._now_ns()
        if self._anchor is None:
            self._anchor = now
        wake = self._anchor + ((now - self._anchor) // self._period + 1) * self._period
        if not logical_sleep.sleep((wake - now) / 1_000_000_000):
            raise UnsupportedError(
                "Rate.sleep outside an action's execute callback or a spin_once main loop is not "
                "supported in an HPRM federate: a callback that blocks holds its node (under "
                "rclpy it deadlocks a single-threaded executor); use create_timer"
            )

    def destroy(self) -> None:
        pass
