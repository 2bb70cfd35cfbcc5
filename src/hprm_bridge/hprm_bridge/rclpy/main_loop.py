"""``rclpy.spin_once``: a node file whose main loop drives its node.

Many node files never hand control to ``rclpy.spin``: they loop ::

    while rclpy.ok():
        rclpy.spin_once(node, timeout_sec=0.1)
        publisher.publish(compute())

Under rclpy each ``spin_once`` runs one ready callback, or returns after the
timeout with nothing run, and the loop's body runs in between at whatever wall
time it gets. In a federate that loop would decide, by the wall clock, when the
node's outputs happen, and the federation could not be deterministic.

So the first ``spin_once`` starts the federate with the node file's main thread
as a *task* of the node (:mod:`hprm_bridge.rclpy.logical_sleep`): the node's
reactor runs on a thread of its own, and the main thread takes turns with it,
never running beside it. ``spin_once(node, timeout_sec=t)`` gives the turn back
until the end of the next tag at which the node ran a callback (every callback
of that tag, not only one: at one logical time they are one step), or ``t`` of
logical time, whichever comes first; the loop's body then runs at that tag, so
what it publishes is published at that tag, the same in every run. ``time.sleep``
in the loop sleeps logical time too.

A thread of the node file's own may step the node instead (a GUI keeps the main:
ros2/demos' ``topic_monitor``): the thread whose ``spin_once`` started the node takes
the turns, the main then runs beside it in wall-clock time, and a thread that ends in
its turn leaves the node running without it (its federation stops with the main).

``timeout_sec=0`` polls: it returns at once, having run nothing new (the tag's
callbacks have run already). Polled twice at one logical time, nothing could have
happened in between, so the second poll waits for the node's next callback: a
loop that polls without sleeping lets logical time advance (under rclpy it would
spin a core until a message came).

The other common shape, from rclpy's docs on ``Rate``: ``rclpy.spin`` on a thread
of the node file's own, and a loop in the main that publishes and ``rate.sleep()``
(or ``time.sleep``). Here the spin thread runs the federate, and the main thread
becomes the node's task at its first sleep, if that sleep comes before the start: it
wakes at that sleep's logical time from the start, and then steps as above, a period
of logical time a pass. The spin thread joins the federation once the main has slept,
or ``MAIN_SLEEP_GRACE_S`` of wall-clock time on (a loaded machine can hold the main's
few lines of set-up longer than a join takes: its loop would have run beside the node,
seen once in CI). A main whose first sleep comes later (it computed first) is told so
and stays a thread beside the node, in wall-clock time; a main that only joins the spin
thread is left alone (its node starts after the grace).

The oldest shape of all (ros2/examples' ``publisher_old_school``) never spins: the
main creates its node, then loops publishing and calling ``time.sleep``. Under
rclpy nothing else is needed for a publisher. Here the node would never join its
federation, which would wait for it; so, in a federate's process, the main's first
sleep with one node made and nothing spinning it starts the node there, as the
first ``spin_once`` would, and the loop then steps in logical time, a sleep a pass.

A driver's main often does neither: it blocks on a device (a serial port, a keyboard)
and publishes what it reads, with nothing spinning its node (teleop_twist_keyboard).
Under rclpy that needs nothing else either. Here the node would never join; so, in a
federate's process, a main that publishes with one node made and then neither spins,
sleeps nor ends within ``UNSPUN_GRACE_S`` of wall-clock time starts the node on a thread
of its own and stays beside it: what it publishes from then on goes out at the
wall-clock time it publishes it, as a sensor's events do
(:mod:`hprm_bridge.rclpy.outside_publishes`). A ``rclpy.spin`` that comes later waits
for that federation; the main's end stops it once its last messages went out (a main
that publishes once and ends: at once).

When the federation stops (``rclpy.shutdown()``, a signal, another node's stop),
``spin_once`` returns and ``rclpy.ok()`` is False; a later ``spin_once`` raises
``ExternalShutdownException``, as rclpy's does once its context is shut down, and so
does a ``publish`` from the main (rclpy's raises too: its context is invalid) and a
sleep, so a ``while True:`` loop ends there; the federate then exits as the stop's,
not failed.
When the node file's main ends, or raises, the federation stops at the next tag
(an exception fails the node as a callback's would).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from hprm_bridge.rclpy.exceptions import UnsupportedError
from hprm_bridge.rclpy.executors import ExternalShutdownException
from hprm_bridge.rclpy.logical_sleep import (
    adopt_main_on_sleep,
    current_task,
    in_turn,
    release_main,
)
from hprm_core.errors import AssemblyError

# how long a main that published with nothing spinning its node may go on before the
# node starts beside it (a node's constructor may publish before its main spins)
UNSPUN_GRACE_S = 1.0
# how long a node spun on a thread of its own waits for the main's first sleep before it
# joins its federation (the main then becomes its task, stepping in logical time)
MAIN_SLEEP_GRACE_S = 0.5


class MainLoop:
    """The federate of a node driven by its node file's main: its reactor's thread and
    the main thread's turns."""

    def __init__(self, node: Any, siblings: tuple[Any, ...] = ()) -> None:
        self.node = node
        self.siblings = siblings  # an executor's other nodes, one federate (main_turns.py)
        self._sleeper = node._tasks()  # before the reactor is built: it has the wake action
        self._sleeper.on_stop = _context_stopped
        self._task: Any = None
        # a daemon: a stop signal while joining ends the process without waiting for the join
        self._thread = threading.Thread(
            target=self._run, name=f"{node.get_name()}-reactor", daemon=True
        )
        self.code = 0
        self._error: BaseException | None = None
        self._polled_at: Any = None  # the tag of the last zero-timeout poll
        self._signals: dict[int, Any] = {}
        self._ended = threading.Event()  # the federate has left
        self.beside = False  # started by the main's publish: it never takes turns
        self._main_slept = threading.Event()  # spin_here: the main's first sleep came

    def start(self) -> None:
        """From the thread that steps the node (the main, or a thread of the node file's
        own): start the federate, wait for that thread's first turn."""
        self._task = self._sleeper.adopt()
        if threading.current_thread() is threading.main_thread():
            self._catch_signals()  # else the main's are Python's: it is no turn-taker
        self._thread.start()
        self._task.first_turn()

    def start_beside(self) -> None:
        """From any thread: run the federate on the reactor's thread; the main stays
        beside it, publishing from outside its turns."""
        self.beside = True
        self.node._main_beside = True
        self._thread.start()

    def _settle(self) -> None:
        """A main beside its node ends: wait for the start, then for its last messages
        to go out (each at its physical tag), before the stop."""
        publishers = self.node._publishers
        self._until(lambda: self._started() and not any(p._queue for p in publishers), None)

    def _until(self, done: Callable[[], bool], timeout_ns: int | None) -> None:
        """Wait in wall-clock time, as a main beside its node does, until ``done()``,
        ``timeout_ns`` or the federation's end."""
        deadline = None if timeout_ns is None else time.monotonic() + timeout_ns / 1e9
        while not done() and not self._ended.is_set():
            left = 0.005 if deadline is None else min(0.005, deadline - time.monotonic())
            if left <= 0:
                return
            self._ended.wait(left)

    def _catch_signals(self) -> None:  # the main thread only
        for s in (signal.SIGINT, signal.SIGTERM):  # the federate's handlers need the main thread
            self._signals[s] = signal.signal(s, self._on_signal)

    def spin_here(self) -> int:
        """``rclpy.spin`` on a thread of the node file's own: run the federate here; the
        main thread becomes the node's task at its first sleep (``rate.sleep()``,
        ``time.sleep``) if that comes before the start, its loop then stepping in
        logical time as a spin_once loop does."""
        adopt_main_on_sleep(self._adopt_main)
        try:
            self._main_slept.wait(MAIN_SLEEP_GRACE_S)
            self._run()  # an error of the runtime's: finish() raises it on the main thread
        finally:
            adopt_main_on_sleep(None)
        return self.code

    def _adopt_main(self, delay_ns: int) -> Any:
        task = self._sleeper.adopt(delay_ns)
        self._main_slept.set()
        if task is None:
            self.node.get_logger().warning(
                "the main thread's first sleep came after the federation started: it "
                "stays a thread beside the node, sleeping in wall-clock time (not "
                "deterministic); let the main sleep before it computes, or drive the "
                "node with spin_once",
                once=True,
            )
            return None
        self._task = task
        self._catch_signals()
        return task

    def _started(self) -> bool:
        """Whether the federation has started (it may be over since)."""
        sched = self.node._reactor._sched
        return sched is not None and sched.start_time != 0

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.beside and self._started():
            # the main is blocked in its device's read, as under rclpy: the stop, and
            # KeyboardInterrupt there (what it publishes from now on raises, as rclpy's
            # publish on a shut-down context)
            threading.Thread(target=self.node._reactor.request_stop, daemon=True).start()
            self._restore_signals()
            _context_stopped()
            raise KeyboardInterrupt
        if not self._started():  # still joining: nothing to stop cleanly yet
            # the main is interrupted, as under rclpy (and as the core's own main is)
            self._restore_signals()
            release_main()
            _context_stopped()
            raise KeyboardInterrupt
        # request_stop takes the scheduler's lock: not from a handler that may have
        # interrupted the code holding it
        threading.Thread(target=self.node._reactor.request_stop, daemon=True).start()

    def _restore_signals(self) -> None:
        for s, handler in self._signals.items():
            signal.signal(s, handler)
        self._signals.clear()

    def _run(self) -> None:
        from hprm_bridge import porting

        try:
            self.code = porting.run_node(self.node, *self.siblings)
        except BaseException as exc:  # the runtime's: re-raised on the main thread
            self.code, self._error = 1, exc
        finally:
            _context_stopped()  # if the federation never ran
            if self._task is not None:
                self._task.stop()  # the federation is over: the main thread goes on
            self._ended.set()

    @property
    def stopped(self) -> bool:
        if self.beside:
            return self._ended.is_set()
        return self._task is not None and bool(self._task.stopping or self._task.done)

    def spin_once(self, timeout_sec: float | None) -> None:
        if self.stopped:
            raise ExternalShutdownException("the federation has stopped")
        if self._task is not None and self._task is not current_task():
            raise UnsupportedError(
                "spin_once from a second thread: the thread whose spin_once started the "
                "node steps it (its turns are that thread's)"
            )
        timeout_ns = None if timeout_sec is None or timeout_sec < 0 else round(timeout_sec * 1e9)
        if self.beside:
            self.wait_beside(lambda: False, timeout_ns)
            return
        if self._task is None:
            raise UnsupportedError(
                "spin_once while rclpy.spin runs the node on another thread: one of them "
                "drives the node"
            )
        if timeout_ns == 0:
            tag = self.node._reactor.tag
            if tag != self._polled_at:
                self._polled_at = tag
                return
            timeout_ns = None  # polled again at one logical time: wait for a callback
        self._sleeper.wait_for_callbacks(self._task, timeout_ns)

    def wait_beside(self, done: Callable[[], bool], timeout_ns: int | None) -> None:
        """``spin_once`` or ``spin_until_future_complete`` of a main whose node started
        beside it (it published, then went on for longer than the grace: a model's load,
        say): the node's callbacks run by themselves, so the main waits in wall-clock time
        until ``done()``, the timeout, or the federation's end."""
        self.node.get_logger().warning(
            "spin_once after the node started beside the main (it published, then neither "
            "spun nor slept for the grace): it waits in wall-clock time, not in turns "
            "(spin or sleep before a long set-up to keep the main in logical time)",
            once=True,
        )
        self._until(done, timeout_ns)

    def finish(self, failure: BaseException | None) -> int:
        """From the main thread, as the node file ends (having raised ``failure``): stop
        the federation if it runs, wait for the reactor's thread; its exit code."""
        task = self._task
        if task is not None and task.in_turn and task is current_task():  # its end is the
            # node's end (a main that ends while a thread of its steps the node waits)
            in_turn(self.node._reactor.request_stop)
            task.end(failure)
            failure = None  # the reactor's now: the node fails with it
        elif not self._ended.is_set():
            if self.beside:
                self._settle()  # started and sent, or over (a description: never started)
            elif not self._started():  # interrupted while joining: leave the join behind
                self._restore_signals()
                raise failure if failure is not None else KeyboardInterrupt
            if not self._ended.is_set():
                with contextlib.suppress(AssemblyError):  # it ended meanwhile
                    self.node._reactor.request_stop()
        self._ended.wait()
        if self._thread.ident is not None:
            self._thread.join()
        self._restore_signals()
        if self._error is not None:
            raise self._error
        if failure is not None:  # raised outside a turn of the main: not the reactor's
            raise failure
        return self.code


_loop: MainLoop | None = None


def _context_stopped() -> None:
    from hprm_bridge.rclpy import _stopped

    _stopped()  # rclpy.ok() is False before the main thread goes on


def _main_loop(node: Any, siblings: tuple[Any, ...] = ()) -> MainLoop:
    """The main loop driving ``node`` (with ``siblings``: an executor's other nodes),
    started by its first call here."""
    global _loop
    from hprm_bridge import porting
    from hprm_bridge.rclpy import _state, main_turns

    _claim()
    if _loop is None:
        for n in (node, *siblings):
            if n._finalized:
                raise UnsupportedError(
                    f"node {n.get_name()}: spin_once after spin; a federate's main drives "
                    "its nodes one way, a spin or a spin_once loop"
                )
        if siblings:
            main_turns.prepare(node, list(siblings))
        _loop = MainLoop(node, siblings)
        _state["spinning"].extend((node, *siblings))
        _loop.start()
        if porting.describing():  # hprm-ros graph wanted the ports: nothing runs
            raise SystemExit(finish(None))
    elif _loop.node is not node or (siblings and siblings != _loop.siblings):
        stepped = ", ".join(n.get_name() for n in (node, *siblings))
        first = ", ".join(n.get_name() for n in (_loop.node, *_loop.siblings))
        raise UnsupportedError(
            f"an HPRM federate's main steps the nodes it stepped first ({first}); it was "
            f"given {stepped}"
        )
    return _loop


def spin_once(node: Any, timeout_sec: float | None, siblings: tuple[Any, ...] = ()) -> None:
    """What ``rclpy.spin_once(node, timeout_sec=)`` does in a federate (the module says);
    with ``siblings``, an executor's ``spin_once`` of all its nodes
    (:mod:`hprm_bridge.rclpy.main_turns`)."""
    from hprm_bridge.rclpy import _stopped

    loop = _main_loop(node, siblings)
    loop.spin_once(timeout_sec)
    if loop.stopped:
        _stopped()


def spin_until_future_complete(
    node: Any, future: Any, timeout_sec: float | None, siblings: tuple[Any, ...] = ()
) -> None:
    """``rclpy.spin_until_future_complete`` in a node file's main: ``spin_once`` until
    ``future`` is done, ``timeout_sec`` of logical time has passed, or the federation
    has stopped (then it returns, as rclpy's does once its context is shut down). So a
    main may wait for one future after another (ros2/examples' action client
    ``client_not_composable``: the goal's acceptance, then its result); the federation
    stops when the main ends."""
    from hprm_bridge.rclpy import _stopped

    loop = _main_loop(node, siblings)
    timeout_ns = None if timeout_sec is None or timeout_sec < 0 else round(timeout_sec * 1e9)
    if loop.beside:
        loop.wait_beside(future.done, timeout_ns)
    else:
        loop._sleeper.wait_until(loop._task, future.done, timeout_ns)
    if loop.stopped:
        _stopped()


def sleep_unspun(seconds: float) -> bool:
    """The main thread's sleep in a federate's process, while nothing spins a node: with
    one node made, start it and sleep ``seconds`` as its task (True); else False, and
    the main sleeps as Python does (the module says why)."""
    from hprm_bridge.rclpy import _state

    nodes = [n for n in _state["nodes"] if not n._finalized and n._made_by_main]
    if _loop is not None or not nodes or not _state["initialized"] or _state["shutdown"]:
        return False
    if len(nodes) > 1:  # its federation would wait for it, in vain: say so now
        raise UnsupportedError(
            f"the node file's main sleeps with {len(nodes)} nodes made "
            f"({', '.join(sorted(n.get_name() for n in nodes))}) and none spun: an HPRM federate "
            "starts one such node at its main's first sleep; add them to an executor and "
            "spin it (one federate), or give each node a node file of its own"
        )
    # its callbacks as tasks: a main that sleeps before its spin ("let connections
    # settle") may then spin a MultiThreadedExecutor, whose callbacks may block
    nodes[0]._callbacks_as_tasks = True
    _main_loop(nodes[0])._task.suspend(seconds)
    return True


def running_node() -> Any:
    """The node a main loop drives (None before its first ``spin_once``)."""
    return None if _loop is None else _loop.node


def spin_in_thread(node: Any) -> int:
    """``rclpy.spin(node)`` called on a thread other than the main (MainLoop.spin_here);
    the federate's exit code."""
    global _loop
    if _loop is not None:
        raise UnsupportedError("rclpy.spin on a second thread: an HPRM federate runs one node")
    _claim()
    node._main_beside = True  # until its first sleep, if that comes after the start
    _loop = MainLoop(node)
    return _loop.spin_here()


def spin_on(node: Any) -> bool:
    """``rclpy.spin(node)`` after spin_once: wait for callbacks until the federation
    stops. False where no spin_once loop runs this node (spin starts the federate)."""
    from hprm_bridge.rclpy import _stopped

    _claim()
    if _loop is None or _loop.node is not node:
        return False
    if _loop.beside:  # started by the main's publish: it runs until its federation stops
        _loop._ended.wait()
        _stopped()
        return True
    while not _loop.stopped:
        _loop.spin_once(None)
    _stopped()
    return True


def interrupted() -> int | None:
    """A stop signal ended the node file's main (KeyboardInterrupt): where the node ran
    beside it, the federation's exit code once it stopped; else None (the interrupt goes
    on, as it would under rclpy)."""
    if _loop is None or not _loop.beside:
        return None
    return finish(None)


def failed(exc: BaseException) -> bool:
    """Whether the main's ``exc`` failed the node (not the stop's ExternalShutdownException)."""
    return not isinstance(exc, ExternalShutdownException)


def finish(failure: BaseException | None) -> int | None:
    """As the node file ends: the federate's exit code if spin_once ran it, else None."""
    global _loop
    grace = _grace
    if grace is not None and _loop is None:  # it published, then ended at once: send it
        grace[0].cancel()
        _start_beside(grace[1])
    if _loop is None:
        return None
    loop, _loop = _loop, None
    from hprm_bridge.rclpy import _state, _stopped

    for node in (loop.node, *loop.siblings):
        if node in _state["spinning"]:
            _state["spinning"].remove(node)
    _stopped()
    if isinstance(failure, ExternalShutdownException) and (loop.stopped or loop.beside):
        # a main that never looks at rclpy.ok() (``while True:``) is ended by its
        # federation's stop there: the node did not fail
        loop.node.get_logger().info(f"the federation stopped, which ended the main ({failure})")
        failure = None
    return loop.finish(failure)


_unspun_mains = False  # in a federate's process: a main may start its node unspun
# a main published with nothing spinning its node: the timer that starts it beside the
# main, and the loop that will run it (its signal handlers already the main's)
_grace: tuple[threading.Timer, MainLoop] | None = None
_starting = threading.Lock()  # who starts the node: the main's spin or sleep, or _grace


def start_unspun_mains() -> None:
    """In a federate's process, before its node file runs: a main that never spins its
    node starts it at its first sleep (:func:`sleep_unspun`), or beside itself after it
    published (:func:`published_unspun`)."""
    global _unspun_mains
    from hprm_bridge.rclpy import logical_sleep, outside_publishes

    _unspun_mains = True
    logical_sleep.start_on_sleep(sleep_unspun)
    outside_publishes.note_threads()


def published_unspun() -> None:
    """A publish before the node's start (a publisher's hook): from the node file's main
    in a federate's process, with one node made and nothing spinning it, the node starts
    beside the main unless it spins, sleeps or ends within ``UNSPUN_GRACE_S`` (the
    module says why)."""
    global _grace
    from hprm_bridge.rclpy import _state

    if _grace is not None or _loop is not None or not _unspun_mains:
        return
    if threading.current_thread() is not threading.main_thread() or current_task() is not None:
        return
    nodes = [n for n in _state["nodes"] if not n._finalized and n._made_by_main]
    if len(nodes) != 1 or _state["spinning"] or _state["shutdown"]:
        return
    loop = MainLoop(nodes[0])
    loop._catch_signals()  # the main's thread only: a stop signal stops the node it starts
    timer = threading.Timer(UNSPUN_GRACE_S, _start_beside, args=(loop,))
    timer.daemon = True
    timer.name = "hprm-unspun-grace"  # not the node file's (outside_publishes)
    _grace = (timer, loop)
    timer.start()


def _start_beside(loop: MainLoop) -> None:
    """The grace is over (the timer's thread), or the main ended within it."""
    global _loop, _grace
    from hprm_bridge.rclpy import _state

    node = loop.node
    with _starting:
        if _grace is None or _grace[1] is not loop:  # the main spun or slept first
            return
        _grace = None
        if _loop is not None or node._finalized or _state["spinning"] or _state["shutdown"]:
            return
        _loop = loop
        _state["spinning"].append(node)
    node.get_logger().info(
        f"the node file's main published, then neither spun this node nor slept for "
        f"{UNSPUN_GRACE_S:g} s: the node joins its federation on a thread of its own, and "
        "what the main publishes goes out at the wall-clock time it publishes it (a "
        "device loop)"
    )
    loop.start_beside()


def _claim() -> None:
    """The main spins or sleeps (its node starts the usual way) unless a publish of its
    started the node beside it already (then _loop says so)."""
    global _grace
    with _starting:
        if _grace is None:
            return
        timer, loop = _grace
        timer.cancel()
        _grace = None
    if threading.current_thread() is threading.main_thread():
        loop._restore_signals()  # the main's own again, for the start it makes
