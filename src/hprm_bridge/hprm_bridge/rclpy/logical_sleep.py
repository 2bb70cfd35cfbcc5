"""Callbacks that sleep or wait in logical time: what an action's execute callback does.

An action server's execute callback usually loops: publish feedback,
``time.sleep(1)``, check ``goal_handle.is_cancel_requested``, and finally
return the result. Under rclpy it runs on an executor thread for as long as
it takes in wall-clock time. In a federate every callback is one instant of
logical time; slept in wall time, such a callback would hold up the whole
federation and deliver its feedback all at once, and a cancel request could
never reach it.

So the node runs such a callback as a *task*: a coroutine (a greenlet, on the
reactor's own thread) that takes turns with the node's reactor, never running
beside it. Inside a
task, ``time.sleep(d)`` (and ``Rate.sleep()``) hands control back to the
reactor, which resumes the task at the tag ``d`` later in logical time;
meanwhile the node's other callbacks run at their tags (a cancel request is
seen on resuming). Every run sees the same tags, so the feedback and the
result are the same in every run. Outside a task, ``time.sleep`` is
Python's.

A task may also wait for an answer that comes at a later microstep: a blocking
``Client.call`` or ``ActionClient.send_goal`` (:func:`wait_for`), an ``await`` of a
future in a coroutine callback (:func:`drive`). Besides execute callbacks, tasks are
the node file's main (a ``spin_once`` loop, or beside ``rclpy.spin`` on a thread) and,
in a node spun by a ``MultiThreadedExecutor`` or with ``async def`` callbacks, its
subscription, timer and service callbacks (:meth:`Sleeper.run_now`: in their place
among the tag's callbacks).

Example (an execute callback; under rclpy it reads the same)::

    def execute(self, goal_handle):
        for i in range(goal_handle.request.order):
            goal_handle.publish_feedback(Fibonacci.Feedback(sequence=seq[: i + 1]))
            time.sleep(1.0)  # in a federate: one second of logical time
        ...
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

import greenlet

_real_sleep = time.sleep


class _Current(threading.local):
    task: _Task | None = None  # the adopted main's task, on its thread (a class default:
    # a missing attribute of a thread-local costs ~1 us to look up, on every publish)


_current = _Current()


class _Stopped(BaseException):
    """Ends a task that is still sleeping when its federation stops."""


def _sleep(seconds: float) -> None:
    if not sleep(seconds):
        _real_sleep(seconds)


def install() -> None:
    """Make ``time.sleep`` sleep in logical time inside tasks (idempotent; a no-op for
    every other thread, which keeps Python's sleep)."""
    time.sleep = _sleep


def sleep(seconds: float) -> bool:
    """Sleep ``seconds`` of logical time if called from a task and say True; False
    (having slept nothing) from anywhere else. The main, taken as a task, that sleeps
    again once its federation has stopped is ended there (ExternalShutdownException):
    a loop that never looks at ``rclpy.ok()`` would otherwise keep its process alive."""
    task = current_task()
    if task is None:
        return _first_sleep_of_main(seconds)
    if task.adopted and (task.stopping or task.done):
        from hprm_bridge.rclpy.executors import ExternalShutdownException

        raise ExternalShutdownException("time.sleep in the main after the federation stopped")
    task.suspend(seconds)
    return True


_main_adopter: Callable[[int], _Task | None] | None = None
_unspun_main: Callable[[float], bool] | None = None


def main_is_over() -> bool:
    """Whether the caller is the node file's main, taken as a task, whose federation has
    stopped (what it publishes then goes nowhere)."""
    task = _current.task
    return task is not None and (task.stopping or task.done) and task is current_task()


def adopt_main_on_sleep(adopter: Callable[[int], _Task | None] | None) -> None:
    """While ``rclpy.spin`` runs the node on another thread: ``adopter(delay_ns)`` makes
    the main thread a task at its first sleep, waking ``delay_ns`` after the start (None
    if too late: the federation has started). None: no more."""
    global _main_adopter
    _main_adopter = adopter


def start_on_sleep(sleeper: Callable[[float], bool] | None) -> None:
    """In a federate's process: ``sleeper(seconds)`` is what the main thread's sleep does
    while nothing spins its node (it may start the node and sleep as its task: True;
    False leaves Python's sleep to it). None: no more."""
    global _unspun_main
    _unspun_main = sleeper


def _first_sleep_of_main(seconds: float) -> bool:
    if threading.current_thread() is not threading.main_thread():
        return False
    adopt = _main_adopter
    if adopt is None:
        return _unspun_main is not None and _unspun_main(seconds)
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    task = adopt(round(seconds * 1_000_000_000))
    if task is None:  # too late: the main stays a thread beside the node, in wall-clock time
        _real_sleep(seconds)
    else:
        task.first_turn()
    return True


def waiting_task() -> _Task | None:
    """The task the calling thread runs, which may wait for a later tag (a blocking
    service call's answer); the node file's main is made one here as at its first sleep
    (while ``rclpy.spin`` runs the node on another thread); None elsewhere: a callback
    run directly by the reactor cannot wait."""
    task = current_task()
    if task is None and _first_sleep_of_main(0.0):
        task = current_task()
    return task


def wait_for(
    start: Callable[[], Any], refused: Callable[[], Exception], timeout_ns: int | None = None
) -> Any:
    """A blocking call: ``start()`` (which sends it and gives its future), then the calling
    task waits until the future is done, or ``timeout_ns`` of logical time; the future
    (not done if it timed out). Where no task calls (a callback the reactor runs
    directly, which would never see the answer's later microstep) ``refused()`` is raised
    before anything is sent."""
    task = waiting_task()
    if task is None:
        raise refused()
    future = start()
    task._sleeper.wait_until(task, future.done, timeout_ns)
    return future


def leave() -> None:
    """The calling thread, if it is the main taking turns as a task and this is its
    turn, stops taking turns (``rclpy.shutdown()`` there: it goes on to join the spin
    thread, say, which would otherwise wait for its turn to end)."""
    task = current_task()
    if task is not None and task.adopted and task.in_turn and not task.done:
        task.end(None)


def release_main() -> None:
    """The node file's main is no task any more, and no later sleep makes it one: it was
    interrupted before its federation started, so there are no turns to take; its
    sleeps are Python's again (the ``except KeyboardInterrupt:`` of a node file may
    still sleep before it ends)."""
    adopt_main_on_sleep(None)
    start_on_sleep(None)
    _current.task = None


def in_turn(fn: Callable[[], None]) -> None:
    """Call ``fn`` as the reactor's own thread would at this point: at once outside a
    task; from a task in its turn, on the reactor's thread as the turn ends (what a
    callback does there, ``rclpy.shutdown()`` say, must land at the tag it would land
    at from a callback, not wherever the scheduler next reads its inbox)."""
    task = current_task()
    if task is None or not task.in_turn:
        fn()
    else:
        task.deferred.append(fn)


class _Task:
    """One task and its turns. A callback's task is a greenlet on the reactor's thread:
    a turn is a switch into it, and the reactor's thread is where its callbacks run
    anyway (a thread per task cost a thread start and two cross-thread hand-offs a
    call, ~230 us of CPU, on every callback of a node spun by a MultiThreadedExecutor).
    The node file's main, *adopted*, is a thread of its own (it runs the rest of the
    node file): it takes turns by semaphores."""

    def __init__(self, sleeper: Sleeper, fn: Callable[[], None] | None) -> None:
        self._sleeper = sleeper
        self._fn = fn
        self.stopping = False
        self.done = False
        self.failure: BaseException | None = None
        self.pending: int | None = None  # the order of its timed wake-up, if one is due
        self.deferred: list[Callable[[], None]] = []  # in_turn's, for the reactor's thread
        self.in_turn = False  # the task runs now (the reactor waits for it)
        self.waiting_since: Any = None  # in spin_once since this tag (None: not waiting)
        # fn None: the thread that made it (the node file's main, in spin_once) is the task
        self.adopted = fn is None
        self._greenlet: _TaskGreenlet | None = None  # made at its first turn
        if self.adopted:
            _current.task = self
            self._thread = threading.current_thread()
            self._go = threading.Semaphore(0)  # the reactor's turn is over: run
            self._back = threading.Semaphore(0)  # the task's turn is over

    def _main(self) -> None:
        self.in_turn = True
        try:
            if not self.stopping and self._fn is not None:
                self._fn()
        except _Stopped:
            pass
        except BaseException as exc:  # re-raised by the reactor (a callback's error)
            self.failure = exc
        finally:
            self.done, self.in_turn = True, False

    def turn(self) -> None:
        """Run the task until it sleeps or ends (from the reactor's thread, or another
        task's); re-raise what it raised."""
        if self.adopted:
            self._go.release()
            while not self._back.acquire(timeout=0.1):
                if not self._thread.is_alive():  # a thread of the node file's that
                    # stepped the node ended in its turn: the node goes on without it
                    self.done, self.in_turn = True, False
                    break
        elif not self.done:
            if self._greenlet is None:  # on the thread that will resume it
                self._greenlet = _TaskGreenlet(self._main)
                self._greenlet.task = self
            # back to whoever gave this turn when it sleeps or ends
            self._greenlet.parent = greenlet.getcurrent()
            self._greenlet.switch()
        while self.deferred:
            self.deferred.pop(0)()
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure

    def suspend(self, seconds: float) -> None:
        """From the task: give the turn back until ``seconds`` later."""
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        self._sleeper._wake_in(self, round(seconds * 1_000_000_000))
        self.yield_turn()

    def yield_turn(self) -> None:
        """From the task: give the turn back until the reactor gives it again. A task
        that is stopped then ends (``_Stopped``); the main thread goes on, its
        federation over (``stopping`` says so)."""
        self.in_turn = False
        if self.adopted:
            self._back.release()
            self.first_turn()
            return
        assert self._greenlet is not None
        self._greenlet.parent.switch()
        self.in_turn = not self.stopping
        if self.stopping:
            raise _Stopped

    def first_turn(self) -> None:
        """From an adopted task's thread: wait for the reactor's first turn."""
        self._go.acquire()
        self.in_turn = not self.stopping

    def end(self, failure: BaseException | None) -> None:
        """From an adopted task's thread, in its turn: it ends (having raised
        ``failure``, which the reactor re-raises)."""
        self.failure, self.done, self.in_turn = failure, True, False
        self._back.release()

    def stop(self) -> None:
        """End the task (from the reactor's thread, never in the task's turn); the main
        thread is let go on without waiting for it: it runs the rest of the node file."""
        if self.stopping:
            return
        self.stopping = True
        if self.adopted:
            self._go.release()
        elif self._greenlet is not None and not self.done:
            self._greenlet.parent = greenlet.getcurrent()
            self._greenlet.switch()  # it raises _Stopped where it sleeps, and ends


class _TaskGreenlet(greenlet.greenlet):
    task: _Task


def current_task() -> _Task | None:
    """The task the caller runs in: its greenlet's, or the adopted main's thread's."""
    task = getattr(greenlet.getcurrent(), "task", None)
    return task if task is not None else _current.task


def holds_turn(reactor_thread: int | None) -> bool:
    """Whether the caller may act in logical time now: before the start (no
    ``reactor_thread`` yet), in a reaction of the federate's thread, or in a task (the
    node file's main between two ``spin_once``) while it holds the turn. A thread of the
    node file's own, outside any turn, may not."""
    if reactor_thread is None or threading.get_ident() == reactor_thread:
        return True  # the reactor's own thread first: the cheap test, and the usual case
    task = current_task()
    return task is not None and task.in_turn


class Sleeper:
    """A node's tasks and when each wakes. The node's reactor owns it: ``start`` and
    ``wake`` run tasks from its reactions, ``take_wakeups`` gives the delays its wake
    action must be scheduled with, ``stop`` ends the tasks still asleep at shutdown."""

    def __init__(self, now_ns: Callable[[], int], now_tag: Callable[[], Any]) -> None:
        self._now_ns = now_ns
        self._now_tag = now_tag
        self._due: list[tuple[int, int, _Task]] = []  # (wake time, order, task), a heap
        self._order = itertools.count()
        self._new: list[int] = []  # wake times asked since take_wakeups
        self._tasks: list[_Task] = []
        self._spinners: list[_Task] = []  # tasks in spin_once
        self._callbacks_ran = False  # at this tag (what spin_once waits for)
        self._lock = threading.Lock()  # the start, against the main's first sleep
        self._started = False
        self._early: list[tuple[int, int, _Task]] = []  # (delay from the start, order, task)
        # runs as the federation stops, before an adopted main goes on (rclpy.ok() False)
        self.on_stop: Callable[[], None] | None = None
        install()

    def adopt(self, delay_ns: int = 0) -> _Task | None:
        """The calling thread as a task (the node file's main), given its first turn
        ``delay_ns`` after the start; None once the federation has started (its logical
        time runs on: no tag of it is the main's to take any more)."""
        with self._lock:
            if self._started:
                return None
            task = _Task(self, None)
            self._tasks.append(task)
            self._wake_in(task, delay_ns)
            return task

    def wait_for_callbacks(self, task: _Task, timeout_ns: int | None) -> None:
        """From ``task``'s thread: give the turn back until a tag after this one at which
        the node ran a callback (the tag's last callback done), or ``timeout_ns`` later."""
        task.waiting_since = self._now_tag()
        self._spinners.append(task)
        if timeout_ns is not None:
            self._wake_in(task, timeout_ns)
        task.yield_turn()

    def note_callback(self) -> None:
        """A callback of the node ran at this tag."""
        self._callbacks_ran = True

    def resume_spinners(self) -> None:
        """Resume the tasks in spin_once since an earlier tag, if a callback ran at this one."""
        if not self._callbacks_ran:
            return
        self._callbacks_ran = False
        now = self._now_tag()
        for task in [t for t in self._spinners if t.waiting_since < now]:
            self._spinners.remove(task)
            task.pending = task.waiting_since = None  # its timed wake-up, if any, is void
            self._run(task)

    def wait_until(self, task: _Task, done: Callable[[], bool], timeout_ns: int | None) -> bool:
        """From ``task``'s thread: give the turn back, tag after tag at which the node ran
        a callback, until ``done()``, ``timeout_ns`` of logical time, or the federation's
        stop (an adopted main then goes on); whether done."""
        end = None if timeout_ns is None else self._now_ns() + timeout_ns
        while not done() and not task.stopping:
            left = None if end is None else end - self._now_ns()
            if left is not None and left <= 0:
                return False
            self.wait_for_callbacks(task, left)
        return done()

    def run_now(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` as a task from here, in its place among the tag's callbacks: to
        its end, or until it waits (a blocking call), to be resumed at a later tag."""
        task = _Task(self, fn)
        self._tasks.append(task)
        self._run(task)

    def start(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` as a task from the next microstep on (as rclpy hands an execute
        callback to its executor, to run once the current callback has returned)."""
        task = _Task(self, fn)
        self._tasks.append(task)
        self._wake_in(task, 0)

    def _run(self, task: _Task) -> None:
        try:
            task.turn()
        finally:
            if task.done:
                self._tasks.remove(task)

    def _wake_in(self, task: _Task, delay_ns: int) -> None:
        task.pending = next(self._order)
        if not self._started:  # before the start: from the start (see take_wakeups)
            self._early.append((delay_ns, task.pending, task))
        else:
            heapq.heappush(self._due, (self._now_ns() + delay_ns, task.pending, task))
        self._new.append(delay_ns)

    def take_wakeups(self) -> list[int]:
        """The delays (ns from now) at which tasks that slept since the last call wake.
        First called at the start (the node's startup reaction): the wake-ups asked
        before it count from it."""
        with self._lock:
            if not self._started:
                self._started = True
                start = self._now_ns()
                for delay, order, task in self._early:
                    heapq.heappush(self._due, (start + delay, order, task))
                self._early.clear()
            new, self._new = self._new, []
        return new

    def wake(self) -> None:
        """Resume every task due by now, in the order they fell asleep (a task's step is
        a callback of the node; the end of a spin_once's timeout is not)."""
        now = self._now_ns()
        while self._due and self._due[0][0] <= now:
            _, order, task = heapq.heappop(self._due)
            if task.pending != order:  # resumed since by resume_spinners
                continue
            task.pending = None
            if task.waiting_since is not None:
                self._spinners.remove(task)
                task.waiting_since = None
            else:
                self._callbacks_ran = True
            self._run(task)

    def stop(self) -> None:
        if self.on_stop is not None:
            self.on_stop()
        for task in list(self._tasks):
            task.stop()
        self._tasks.clear()
        self._due.clear()
        self._spinners.clear()


def drive(value: Any) -> Any:
    """The result of a callback that may be a coroutine (rclpy awaits those): run it to
    its end. Where it awaits a future not yet done (``await client.call_async(...)``), a
    task waits for it, tag after tag, as a blocking call does; a callback the reactor
    runs directly cannot wait, and says so."""
    if not hasattr(value, "send") or not hasattr(value, "throw"):
        return value
    me = greenlet.getcurrent()  # what it awaits, Future.__await__ yields to it
    try:
        while True:
            me.hprm_driving = getattr(me, "hprm_driving", 0) + 1
            try:
                awaited = value.send(None)
            finally:
                me.hprm_driving -= 1
            if awaited is not None and hasattr(awaited, "done") and awaited.done():
                continue
            task = current_task()
            if task is None or awaited is None or not hasattr(awaited, "done"):
                value.close()
                raise RuntimeError(
                    "an async callback awaited something not yet done where it cannot wait: "
                    "futures complete at later tags, which only a task reaches (a node with "
                    "coroutine callbacks, or spun by a MultiThreadedExecutor, runs them as "
                    "tasks); await only HPRM's futures (call_async, send_goal_async...)"
                )
            task._sleeper.wait_until(task, awaited.done, None)
    except StopIteration as end:
        return end.value
