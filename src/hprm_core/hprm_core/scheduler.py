"""The scheduler: advances logical time and runs reactions in precedence order.

One tag at a time:

1. pick the next tag: the earliest event, capped by the stop tag;
2. ask the coordinator whether that tag may be processed. Alone, the answer is
   always yes. In a federation the coordinator (see ``federation``) may block
   until the RTI grants the tag, meanwhile injecting network messages with
   :meth:`Scheduler.schedule_network`, and may answer with an earlier tag;
3. wait until physical time reaches the tag (logical time never runs ahead of
   physical time) unless running ``fast``; a physical action arriving during
   the wait restarts the choice;
4. fire every event at that tag, then run the triggered reactions in index
   order (the levels computed by :mod:`hprm_core.precedence`);
5. tell the coordinator the tag is complete.

Events sit in a heap keyed by (time, microstep, sequence number); the sequence
number makes ties between events at one tag resolve in scheduling order, and
since the program is deterministic, so is that order. Events coming from
other threads (physical actions, network receivers, stop requests) go through
a lock-protected inbox, so the heap itself is touched by the scheduler thread
only.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

from hprm_core.errors import ReactionError
from hprm_core.tag import FOREVER, NEVER, Duration, Tag, duration

if TYPE_CHECKING:
    from hprm_core.environment import Environment
    from hprm_core.reactor import Reaction, _Trigger
    from hprm_core.trace import Tracer

log = logging.getLogger("hprm")

_STOP = object()  # inbox marker: a stop request from another thread


class Coordinator(Protocol):
    """What the scheduler asks before and after each tag (federation plugs in here)."""

    def start_time(self, physical_now: int) -> int:
        """The program's start time; a federation agrees on one through the RTI."""

    def next_tag(self, sched: Scheduler, wanted: Tag) -> Tag:
        """Block until ``wanted`` (or an earlier tag) may be processed; return it."""

    def tag_complete(self, sched: Scheduler, tag: Tag) -> None:
        """Called after every reaction at ``tag`` ran."""

    def stop_requested(self, sched: Scheduler, tag: Tag) -> Tag:
        """A local stop request at ``tag``; returns the tag at which to stop."""

    def finish(self, sched: Scheduler) -> None:
        """The program ended (cleanly or not)."""


class LocalCoordinator:
    """A program alone in its process: every tag may be processed at once."""

    def start_time(self, physical_now: int) -> int:
        return physical_now

    def next_tag(self, sched: Scheduler, wanted: Tag) -> Tag:
        return wanted

    def tag_complete(self, sched: Scheduler, tag: Tag) -> None:
        pass

    def stop_requested(self, sched: Scheduler, tag: Tag) -> Tag:
        return tag

    def finish(self, sched: Scheduler) -> None:
        pass


class Scheduler:
    """Runs one assembled program. Created by :class:`~hprm_core.environment.Environment`."""

    def __init__(
        self,
        env: Environment,
        *,
        fast: bool,
        timeout: Duration,
        keepalive: bool,
        on_error: str,
        tracer: Tracer | None,
        coordinator: Coordinator | None = None,
    ) -> None:
        self.env = env
        self.fast = fast
        self.timeout = None if timeout is None else duration(timeout)
        self.keepalive = keepalive
        self.on_error = on_error
        self.tracer = tracer
        self.coordinator: Coordinator = coordinator or LocalCoordinator()
        self.tag: Tag = NEVER
        self.step = 0  # incremented per processed tag; presence stamps compare to it
        self.start_time = 0
        self.stop_tag: Tag = FOREVER
        self.current_reaction: Reaction | None = None
        self.failures: list[tuple[str, tuple[int, int], BaseException]] = []
        self._events: list[tuple[int, int, int, _Trigger, Any]] = []
        self._seq = 0
        self._ready: list[int] = []  # heap of reaction indexes triggered at this tag
        self._queued = [False] * len(env.ordered)
        self._by_index = env.ordered
        self._inbox: deque[tuple[Any, int, Any]] = deque()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self.running = False
        for t in env.triggers:
            t._sched = self
        for r in env.reactors:
            r.__dict__["_sched"] = self

    # -- scheduling -------------------------------------------------------------

    def schedule(self, trigger: _Trigger, tag: Tag, value: Any) -> None:
        """Queue ``trigger`` to fire at ``tag`` (scheduler thread only)."""
        self._seq += 1
        heapq.heappush(self._events, (tag[0], tag[1], self._seq, trigger, value))

    def schedule_physical(self, trigger: _Trigger, time_ns: int, value: Any) -> None:
        """Queue an event from any thread at physical time ``time_ns``."""
        with self._wake:
            self._inbox.append((trigger, time_ns, value))
            self._wake.notify()

    def schedule_network(self, trigger: _Trigger, tag: Tag, value: Any) -> None:
        """Queue an event with a tag chosen elsewhere (a federation peer), from any thread."""
        with self._wake:
            self._inbox.append((trigger, -1, (tag, value)))
            self._wake.notify()

    def request_stop(self) -> None:
        """Stop at the next microstep of the current tag; safe from any thread."""
        if threading.current_thread() is self._thread and self.running:
            self._stop_at(self.coordinator.stop_requested(self, self.tag.delay(0)))
        else:
            with self._wake:
                self._inbox.append((_STOP, 0, None))
                self._wake.notify()

    def _stop_at(self, tag: Tag) -> None:
        if tag < self.stop_tag:
            self.stop_tag = tag

    def enqueue(self, r: Reaction) -> None:
        """Mark ``r`` to run at the current tag (once, whatever triggers it)."""
        i = r.index
        if not self._queued[i]:
            self._queued[i] = True
            heapq.heappush(self._ready, i)

    def _drain_inbox(self) -> None:
        inbox = self._inbox
        while inbox:
            trigger, t, value = inbox.popleft()
            if trigger is _STOP:
                self._stop_at(self.coordinator.stop_requested(self, self.tag.delay(0)))
                continue
            if t == -1:  # network event: value is (tag, payload)
                tag, value = value
            else:
                tag = Tag(t, 0)
                if tag <= self.tag:
                    tag = self.tag.delay(0)
            self.schedule(trigger, tag, value)

    # -- the loop -----------------------------------------------------------------

    def run(self) -> None:
        """Run to the stop tag (or until nothing can happen); raise on reaction errors."""
        self._thread = threading.current_thread()
        env = self.env
        self.start_time = self.coordinator.start_time(time.time_ns())
        start = Tag(self.start_time, 0)
        if self.timeout is not None:
            self.stop_tag = start.delay(self.timeout) if self.timeout else start
        for r in env.reactors:
            self.schedule(r.startup, start, None)
        from hprm_core.reactor import Timer

        for t in env.triggers:
            if isinstance(t, Timer):
                self.schedule(t, start.delay(t.offset) if t.offset else start, None)
        self.running = True
        try:
            self._loop()
        finally:
            self.running = False
            self.current_reaction = None
            self.coordinator.finish(self)
            if self.tracer is not None:
                self.tracer.close()
        if self.failures and self.on_error == "stop":
            name, tag, exc = self.failures[0]
            raise ReactionError(
                f"reaction {name} raised at tag {tag}: {type(exc).__name__}: {exc}"
                + (
                    f" (and {len(self.failures) - 1} more failures)"
                    if len(self.failures) > 1
                    else ""
                ),
                self.failures,
            ) from exc

    def _next_event_tag(self) -> Tag:
        if self._events:
            e = self._events[0]
            return Tag(e[0], e[1])
        return FOREVER

    def _loop(self) -> None:
        events = self._events
        while True:
            if self._inbox:
                with self._wake:
                    self._drain_inbox()
            nxt = self._next_event_tag()
            if nxt >= FOREVER and not self.keepalive and self.stop_tag >= FOREVER:
                # Nothing can ever happen again: shut down at the next microstep.
                self._stop_at(self.coordinator.stop_requested(self, self.tag.delay(0)))
            if nxt > self.stop_tag:
                nxt = self.stop_tag
            granted = self.coordinator.next_tag(self, nxt)
            if granted != nxt:
                continue  # something arrived meanwhile (or the grant is partial)
            if nxt >= FOREVER:
                self._wait_for_inbox(None)
                continue
            if not self.fast and not self._wait_until(nxt.time):
                continue  # woken by a new event: choose the tag again
            # Process tag nxt.
            self.tag = nxt
            self.step += 1
            t0, m0 = nxt
            while events and events[0][0] == t0 and events[0][1] == m0:
                _, _, _, trigger, value = heapq.heappop(events)
                trigger._fire(value)
            stopping = nxt == self.stop_tag
            if stopping:
                for r in self.env.reactors:
                    r.shutdown._fire(None)
            self._run_reactions()
            self.coordinator.tag_complete(self, nxt)
            if stopping:
                return

    def _wait_until(self, t: int) -> bool:
        """Sleep until physical time ``t``; False if woken early by the inbox."""
        with self._wake:
            while True:
                if self._inbox:
                    return False
                remaining = t - time.time_ns()
                if remaining <= 0:
                    return True
                self._wake.wait(remaining / 1e9)

    def _wait_for_inbox(self, timeout: float | None) -> None:
        with self._wake:
            if not self._inbox:
                self._wake.wait(timeout)

    def _run_reactions(self) -> None:
        ready = self._ready
        queued = self._queued
        by_index = self._by_index
        tracer = self.tracer
        pop = heapq.heappop
        while ready:
            i = pop(ready)
            queued[i] = False
            r = by_index[i]
            self.current_reaction = r
            fn = r.fn
            if r.deadline is not None and time.time_ns() > self.tag.time + r.deadline:
                fn = r.deadline_fn or fn
                if r.deadline_fn is None:
                    log.warning("%s missed its deadline at %s (no handler)", r.fqn, self._elapsed())
            t_start = time.time_ns() if tracer is not None else 0
            try:
                fn()
            except Exception as exc:  # a user reaction failed: report, then stop cleanly
                self._reaction_failed(r, exc)
            if tracer is not None:
                tracer.record(self, r, fn is not r.fn, t_start)
        self.current_reaction = None

    def _elapsed(self) -> tuple[int, int]:
        return self.tag.elapsed(self.start_time)

    def _reaction_failed(self, r: Reaction, exc: Exception) -> None:
        tag = self._elapsed()
        self.failures.append((r.fqn, tag, exc))
        log.error(
            "reaction %s (reactor %s) raised at tag %s: %s: %s",
            r.name,
            r.reactor.fqn,
            tag,
            type(exc).__name__,
            exc,
            exc_info=exc,
        )
        if self.on_error == "stop":
            self._stop_at(self.coordinator.stop_requested(self, self.tag.delay(0)))
