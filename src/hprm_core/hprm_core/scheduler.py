"""The scheduler: advances logical time and runs reactions in precedence order.

One tag at a time:

1. pick the next tag: the earliest event, capped by the stop tag;
2. ask the coordinator (:mod:`hprm_core.coordinator`) whether that tag may be
   processed. Alone, the answer is always yes. In a federation the
   coordinator (see ``federation``) may block
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
since the program is deterministic, so is that order. The heap is touched by
the scheduler thread only: events from other threads (physical actions, stop
requests) go through a lock-protected inbox. Network messages take a shorter
path: the scheduler thread reads the sockets itself while it waits (an epoll
set, see :meth:`Scheduler.add_reader`), so a message goes from the socket
into the heap with no lock, no queue and no thread hand-off. On the machines
HPRM targets, each of those costs microseconds on a cold cache, and one-way
latency is the sum of such costs.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from hprm_core.coordinator import Coordinator, LocalCoordinator
from hprm_core.errors import ReactionError
from hprm_core.tag import FOREVER, NEVER, Duration, Tag, duration, make_tag
from hprm_core.waiter import Waiter

if TYPE_CHECKING:
    from hprm_core.environment import Environment
    from hprm_core.reactor import Reaction, _Trigger
    from hprm_core.trace import Tracer

log = logging.getLogger("hprm")

_STOP = object()  # inbox marker: a stop request from another thread


class _Fires(Protocol):
    """What an event fires at its tag: a trigger (port, timer, action), a
    tardy delivery, or the tag marker."""

    def _fire(self, value: Any) -> None: ...


class _TagMarker:
    """An event that fires nothing: scheduling it makes the scheduler visit its
    tag (a federate must process a tag at which only its inputs' absence is
    news, so it can announce its own outputs' absence in turn)."""

    def _fire(self, value: Any) -> None:
        pass


TAG_MARKER = _TagMarker()


class _TardyDelivery:
    """Delivers a network value whose tag had already passed when it arrived
    (decentralized coordination with too small an STP offset). It fires the
    port at the next microstep and marks it tardy, so reactions with an
    ``stp_violation`` handler run that handler instead; nothing is reordered
    silently."""

    __slots__ = ("intended", "port")

    def __init__(self, port: Any, intended: Tag) -> None:
        self.port = port
        self.intended = intended

    def _fire(self, value: Any) -> None:
        port = self.port
        port._tardy_step = port._sched.step
        port.tardy_count += 1
        port.last_tardy_tag = self.intended
        port._fire(value)


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
        busy_poll: Duration = 0,
    ) -> None:
        self.env = env
        self.fast = fast
        self.busy_poll = duration(busy_poll)
        if self.busy_poll < 0:
            raise ValueError(f"busy_poll must not be negative, got {busy_poll!r}")
        self.timeout = None if timeout is None else duration(timeout)
        if self.timeout is not None and self.timeout < 0:
            raise ValueError(f"timeout must not be negative, got {timeout!r}")
        self.keepalive = keepalive
        self.on_error = on_error
        self.tracer = tracer
        self.coordinator: Coordinator = coordinator or LocalCoordinator()
        self.tag: Tag = NEVER
        self.step = 0  # incremented per processed tag; presence stamps compare to it
        self.start_time = 0
        self.stop_tag: Tag = FOREVER
        self.current_reaction: Reaction | None = None
        self.fired: list[_Trigger] = []  # elements present at the current tag
        self.failures: list[tuple[str, tuple[int, int], BaseException]] = []
        self._events: list[tuple[int, int, int, _Fires, Any]] = []
        self._seq = 0
        self._ready: list[int] = []  # heap of reaction indexes triggered at this tag
        self._queued = [False] * len(env.ordered)
        self._by_index = env.ordered
        self._inbox: deque[tuple[Any, int, Any]] = deque()
        # One lock for the inbox and coordinator state. ``with self.lock`` is a C
        # call; a Condition's ``with`` is Python code, on every tag's path.
        self.lock = threading.RLock()
        self.waiter = Waiter(self.lock, self._inbox, self.busy_poll)
        # Set when a network event reached the heap while the tag was being
        # chosen or waited for: the choice must be made again.
        self._rechoose = False
        self.running = False
        self._tardy_last: dict[Any, Tag] = {}
        self.clock_offset = 0  # ns to add to the local clock (federation clock sync)
        # No physical event may take a tag before this: the coordinator's last
        # promise to the RTI (a NET), which federates downstream were granted on.
        self.physical_floor = NEVER
        self._physical_last: dict[Any, Tag] = {}  # trigger -> tag of its last inbox event
        # Seconds between coordinator check-ins while idle (None: only on events).
        self.idle_poll: float | None = None
        # Provisional tags only: (first reader index, port, connection id) of unsettled inputs.
        self.gate: list[tuple[int, Any, int]] = []
        for t in env.triggers:
            t._sched = self
        for r in env.reactors:
            r.__dict__["_sched"] = self

    # -- scheduling -------------------------------------------------------------

    def schedule(self, trigger: _Fires, tag: Tag, value: Any) -> None:
        """Queue ``trigger`` to fire at ``tag`` (scheduler thread only)."""
        self._seq += 1
        heapq.heappush(self._events, (tag[0], tag[1], self._seq, trigger, value))

    def unschedule(self, trigger: _Fires) -> None:
        """Drop every queued event of ``trigger`` (scheduler thread only): a
        cancelled timer must leave no event behind, or a decentralized
        federate would still advance its logical time to it."""
        events = self._events
        events[:] = [e for e in events if e[3] is not trigger]
        heapq.heapify(events)
        self._rechoose = True

    def schedule_physical(
        self, trigger: _Trigger, time_ns: int | None, value: Any, delay_ns: int = 0
    ) -> None:
        """Queue an event from any thread at physical time ``time_ns`` (on the
        federation's clock, as tags are), or, when it is None, at the physical
        time of this call plus ``delay_ns``.

        "Now" is read under ``lock``, which the coordinator holds while it
        decides to promise the RTI no event before its own "now" (a NET capped
        by physical actions). Read before taking the lock, a thread preempted
        between the two (a loaded machine) queued an event tagged before a
        promise already sent, and the receiver got it after processing a later
        tag (tardy: seen in CI under two CPU hogs). A coordinator that promises
        when a tag completes drains the inbox first, under the lock. What still
        falls behind a promise (a caller's own stamp) is moved up to it when
        drained (``physical_floor``)."""
        with self.lock:
            t = self.physical_time() + delay_ns if time_ns is None else time_ns
            self._inbox.append((trigger, t, value))
            self.notify()

    def schedule_network(self, trigger: _Fires, tag: Tag, value: Any) -> None:
        """Deliver an event whose tag was chosen elsewhere (a federation peer).

        Scheduler thread only: it is called from socket callbacks while the
        scheduler waits (see :meth:`add_reader`). A tag already processed
        means the value came too late (decentralized coordination with too
        small an STP offset): it is delivered as tardy, never reordered. During
        a provisional tag, a value for that very tag is fired at once: the
        reactions still to run at this tag are waiting for it."""
        if tag <= self.tag and self.running:
            if tag == self.tag and self.gate:
                trigger._fire(value)
            elif trigger is not TAG_MARKER:
                self._tardy(trigger, tag, value)
                self._rechoose = True
            return
        self._seq += 1
        heapq.heappush(self._events, (tag[0], tag[1], self._seq, trigger, value))
        self._rechoose = True

    def has_news(self) -> bool:
        """Whether the next tag must be chosen again: events came from other
        threads, or a socket callback queued one (caller holds ``lock``). A
        coordinator waiting for permission to advance returns on it."""
        return bool(self._inbox) or self._rechoose

    def has_ready_reactions(self) -> bool:
        """Whether reactions are still queued at the current tag."""
        return bool(self._ready)

    def wake(self) -> None:
        """Make the scheduler re-check its state (coordinator state changed)."""
        with self.lock:
            self._inbox.append((None, 0, None))
            self.notify()

    def notify(self) -> None:
        """Wake the scheduler thread (caller holds ``lock``)."""
        self.waiter.notify()

    def wake_from_any_thread(self) -> None:
        """Wake a waiting scheduler without taking any lock: safe from a
        garbage-collection callback (e.g. a received array being released)."""
        self.waiter.wake_from_any_thread()

    def add_reader(self, fileobj: Any, callback: Callable[[], None]) -> None:
        """Have the scheduler thread call ``callback`` whenever ``fileobj`` is
        readable, while it waits. Thread-safe."""
        self.waiter.add_reader(fileobj, callback)

    def remove_reader(self, fileobj: Any) -> None:
        """Stop watching ``fileobj`` (thread-safe; effective at the next wait)."""
        self.waiter.remove_reader(fileobj)

    def wait(self, timeout: float | None, exact: bool = True) -> int:
        """Block until notified, a watched socket is readable, or ``timeout`` s
        (:meth:`hprm_core.waiter.Waiter.wait`; the caller holds ``lock`` once)."""
        return self.waiter.wait(timeout, exact)

    def read_ready(self) -> None:
        """Handle whatever already sits in the watched sockets, without blocking:
        non-blocking passes until one finds nothing ready (a callback may have
        read only part of a burst). The caller holds ``lock``. A coordinator
        calls it before it decides from what it has heard, when what it has
        not yet read could change the decision."""
        while self.waiter.wait(0):
            pass

    def close(self) -> None:
        """Release the epoll set, the wake-up eventfd and the timerfd."""
        self.waiter.close()

    def physical_time(self) -> int:
        """The (federation-synchronized) physical clock, in ns."""
        return time.time_ns() + self.clock_offset

    def request_stop(self) -> None:
        """Stop at the next microstep of the current tag; safe from any thread."""
        if threading.current_thread() is self.waiter.loop_thread and self.running:
            self._stop_at(self.coordinator.stop_requested(self, self.tag.delay(0)))
        else:
            with self.lock:
                self._inbox.append((_STOP, 0, None))
                self.notify()

    def _stop_at(self, tag: Tag) -> None:
        if tag < self.stop_tag:
            self.stop_tag = tag
            # The tag being waited for (the old stop tag, a timer far ahead)
            # may now lie past the stop: choose again instead of sleeping until
            # it (a federate told that another one died used to wait out the
            # whole timeout here).
            self._rechoose = True

    def enqueue(self, r: Reaction) -> None:
        """Mark ``r`` to run at the current tag (once, whatever triggers it)."""
        i = r.index
        if not self._queued[i]:
            self._queued[i] = True
            heapq.heappush(self._ready, i)

    def drain_inbox(self) -> None:
        """Queue the events other threads sent (caller holds ``lock``)."""
        inbox = self._inbox
        while inbox:
            trigger, t, value = inbox.popleft()
            if trigger is None:  # wake-up only
                continue
            if trigger is _STOP:
                self._stop_at(self.coordinator.stop_requested(self, self.tag.delay(0)))
                continue
            tag = Tag(t, 0)
            if tag < self.physical_floor:  # a caller's own stamp (schedule_at)
                tag = self.physical_floor
            if tag <= self.tag:
                tag = self.tag.delay(0)
            last = self._physical_last.get(trigger)
            if last is not None and last.time == tag.time and tag <= last:
                # Moved to one instant with an earlier event of this action (both
                # behind a promise or the current tag): one tag each, in arrival
                # order, or the later value would replace the earlier one.
                tag = last.delay(0)
            self._physical_last[trigger] = tag
            self.schedule(trigger, tag, value)

    def _tardy(self, port: Any, tag: Tag, value: Any) -> None:
        # Successive microsteps, so two tardy values for one port never collide.
        later = max(self.tag, self._tardy_last.get(port, NEVER)).delay(0)
        self._tardy_last[port] = later
        handled = any(r.stp_fn is not None for r in port._reactions)
        (log.debug if handled else log.error)(
            "tardy message on %s: tag %s arrived after tag %s was processed; delivered at %s%s",
            port.fqn,
            tag.elapsed(self.start_time),
            self.tag.elapsed(self.start_time),
            later.elapsed(self.start_time),
            "" if handled else " (no stp_violation handler: add one, or raise the STP offset)",
        )
        self.schedule(_TardyDelivery(port, tag), later, value)

    # -- the loop -----------------------------------------------------------------

    def run(self) -> None:
        """Run to the stop tag (or until nothing can happen); raise on reaction errors."""
        self.waiter.loop_thread = threading.current_thread()
        env = self.env
        self.start_time = self.coordinator.start_time(time.time_ns())
        start = Tag(self.start_time, 0)
        if self.timeout is not None:
            self.stop_tag = start.delay(self.timeout) if self.timeout else start
        for r in env.reactors:
            self.schedule(r.startup, start, None)
        from hprm_core.reactor import Timer

        for t in env.triggers:
            if isinstance(t, Timer) and not t.cancelled:
                self.schedule(t, start.delay(t.offset) if t.offset else start, None)
        self.running = True
        try:
            self._loop()
        finally:
            self.running = False
            self.current_reaction = None
            self.coordinator.finish(self)
            self.close()
            if self.tracer is not None:
                self.tracer.close()
        if self.failures and self.on_error == "stop":
            name, tag, exc = self.failures[0]
            error = ReactionError(
                f"reaction {name} raised at tag {tag}: {type(exc).__name__}: {exc}"
                + (
                    f" (and {len(self.failures) - 1} more failures)"
                    if len(self.failures) > 1
                    else ""
                ),
                self.failures,
            )
            # Set by hand: mypyc-compiled code drops the cause of `raise ... from exc`.
            error.__cause__ = exc
            raise error

    def next_event_tag(self) -> Tag:
        """The earliest queued event's tag (``FOREVER`` when none)."""
        if self._events:
            e = self._events[0]
            return make_tag((e[0], e[1]))
        return FOREVER

    def _loop(self) -> None:
        events = self._events
        coordinator = self.coordinator
        while True:
            self._rechoose = False
            if self._inbox:
                with self.lock:
                    self.drain_inbox()
            nxt = self.next_event_tag()
            if nxt > self.stop_tag:
                nxt = self.stop_tag
            if not coordinator.advance_to(self, nxt):
                continue  # something arrived meanwhile: choose again
            if nxt >= FOREVER:
                if self.keepalive:
                    self._wait_for_inbox(self.idle_poll)
                else:  # nothing can ever happen again: shut down at the next microstep
                    self._stop_at(self.tag.delay(0))
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
            # Values live for their tag only: dropping them now lets a large
            # received array go back to its producer as soon as reactions are done.
            for t in self.fired:
                t._value = None
            self.fired.clear()
            coordinator.tag_complete(self, nxt)
            if stopping:
                return

    def _wait_until(self, t: int) -> bool:
        """Sleep until physical time ``t``; False if woken early (the inbox, or
        ``idle_poll``: the coordinator must refresh what it promised others)."""
        if time.time_ns() + self.clock_offset >= t:  # the common case once busy: no lock
            return not (self._inbox or self._rechoose)
        with self.lock:
            while True:
                if self._inbox or self._rechoose:
                    return False
                remaining = t - time.time_ns() - self.clock_offset
                if remaining <= 0:
                    return True
                if self.idle_poll is not None and remaining > self.idle_poll * 1e9:
                    self.wait(self.idle_poll, exact=False)
                    return False
                self.wait(remaining / 1e9)

    def _wait_for_inbox(self, timeout: float | None) -> None:
        with self.lock:
            if not (self._inbox or self._rechoose):
                self.wait(timeout, exact=False)

    def _run_reactions(self) -> None:
        ready = self._ready
        queued = self._queued
        by_index = self._by_index
        tracer = self.tracer
        gate = self.gate
        pop = heapq.heappop
        while True:
            if gate:  # provisional tag: settle the network inputs the next reaction may read
                self.coordinator.resolve_inputs(self, ready[0] if ready else None)
            if not ready:
                break
            i = pop(ready)
            queued[i] = False
            r = by_index[i]
            self.current_reaction = r
            fn = r.fn
            if r.deadline is not None and self.physical_time() > self.tag.time + r.deadline:
                fn = r.deadline_fn or fn
                if r.deadline_fn is None:
                    log.warning("%s missed its deadline at %s (no handler)", r.fqn, self._elapsed())
            if r.stp_fn is not None and any(t._tardy_step == self.step for t in r.triggers):
                fn = r.stp_fn
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
