"""The timers a node makes after its start, all on one reactor timer.

A reactor's timers are its triggers, fixed when the node is built; but a node makes
timers in callbacks: ros2/examples' ``server_defer`` a one-shot per goal, a lifecycle
node its timer again at each configure, and a QoS deadline or a manual liveliness lease
of an entity made after the start needs one too. Each of those is a
:class:`WheelTimer` on the node's :class:`TimerWheel`, which keeps them in order of
their next firing and arms one reactor timer (its ``wake``) for the earliest. So there
is no limit to how many a node makes, and each fires at the tags a reactor timer
would: one period after it is (re)set, then every period, the same in every run.

A cancelled one leaves no event behind: the wake is armed for the earliest timer still
running, or not at all, so a decentralized federate's logical time does not move to a
tag where nothing is left to happen. A timer nothing holds any more (cancelled, its
handle dropped) is gone, as it would be from the heap of a reactor's scheduler.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from hprm_core import Timer


class WheelTimer:
    """A timer on a node's wheel, with a periodic reactor timer's interface: ``period``
    (above zero), ``offset``, ``cancel()``, ``reset()``, ``cancelled``. Made cancelled:
    ``reset()`` starts it, one period on."""

    def __init__(self, wheel: TimerWheel, period: int, fire: Callable[[], None]) -> None:
        self.offset = self.period = period
        self.cancelled = True
        self._wheel = wheel
        self._fire = fire
        self._entry: list[Any] | None = None  # its place in the wheel's heap

    def cancel(self) -> None:
        self.cancelled = True
        self._wheel._remove(self)

    def reset(self) -> None:
        """Fire one period from now, then every period (a running timer: unchanged, as a
        reactor timer's ``reset``)."""
        if self.cancelled:
            self.cancelled = False
            self._wheel._add(self)


class TimerWheel:
    """A node's :class:`WheelTimer` s, by their next firing, and the reactor timer
    (``wake``) armed for the earliest; its reaction is :meth:`fire`."""

    def __init__(self) -> None:
        self.wake = Timer(offset=1, period=1)
        self.wake.cancel()
        self._heap: list[list[Any]] = []  # [due ns, order, timer or None once removed]
        self._order = 0
        self._armed: int | None = None  # the wake's next firing
        self._pending: list[WheelTimer] = []  # reset before the start: armed at it

    def timer(self, period: int, fire: Callable[[], None]) -> WheelTimer:
        """A stopped timer of ``period`` ns that calls ``fire`` (``reset()`` starts it)."""
        return WheelTimer(self, period, fire)

    def _now(self) -> int | None:
        sched = self.wake._sched
        return sched.tag[0] if sched is not None and sched.running else None

    def _add(self, timer: WheelTimer) -> None:
        """``timer`` due one period from now (armed at the start, before it)."""
        now = self._now()
        if now is None:  # the node made it before its federation started
            self._pending.append(timer)
            return
        self._push(timer, now)
        self._arm(now)

    def _push(self, timer: WheelTimer, now: int) -> None:
        self._order += 1
        timer._entry = [now + timer.period, self._order, timer]
        heapq.heappush(self._heap, timer._entry)

    def _remove(self, timer: WheelTimer) -> None:
        if timer._entry is not None:
            timer._entry[2] = None  # skipped where it lies in the heap
            timer._entry = None
            now = self._now()
            if now is not None:
                self._arm(now)
        elif timer in self._pending:
            self._pending.remove(timer)

    def started(self) -> None:
        """At the start tag (the node's startup reaction): the timers reset before it."""
        pending, self._pending = self._pending, []
        for timer in pending:
            self._add(timer)

    def _arm(self, now: int) -> None:
        """The wake at the earliest due timer, or stopped where none is left."""
        heap = self._heap
        while heap and heap[0][2] is None:
            heapq.heappop(heap)
        due = heap[0][0] if heap else None
        if due == self._armed:
            return
        self._armed = due
        self.wake.cancel()
        if due is not None:
            self.wake.period = due - now
            self.wake.reset()

    def fire(self) -> None:
        """The wake fired: every timer due now, in the order they were set (each set again
        one period on first, for its callback to cancel or reset)."""
        now = self._now()
        assert now is not None
        self._armed = None  # the wake is periodic: it is armed anew below
        due = []
        heap = self._heap
        while heap and (heap[0][2] is None or heap[0][0] <= now):
            timer = heapq.heappop(heap)[2]
            if timer is not None:  # (set again just below: its entry is replaced)
                due.append(timer)
        for timer in due:
            self._push(timer, now)
        self._arm(now)
        for timer in due:
            timer._fire()
