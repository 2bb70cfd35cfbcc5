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

``timeout_sec=0`` polls: it returns at once, having run nothing new (the tag's
callbacks have run already). Polled twice at one logical time, nothing could have
happened in between, so the second poll waits for the node's next callback: a
loop that polls without sleeping lets logical time advance (under rclpy it would
spin a core until a message came).

When the federation stops (``rclpy.shutdown()``, a signal, another node's stop),
``spin_once`` returns and ``rclpy.ok()`` is False; a later ``spin_once`` raises
``ExternalShutdownException``, as rclpy's does once its context is shut down.
When the node file's main ends, or raises, the federation stops at the next tag
(an exception fails the node as a callback's would).
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from hprm_bridge.rclpy.executors import ExternalShutdownException
from hprm_bridge.rclpy.logical_sleep import in_turn


class MainLoop:
    """The federate of a node driven by spin_once: its reactor's thread and the main
    thread's turns."""

    def __init__(self, node: Any) -> None:
        self.node = node
        self._sleeper = node._tasks()  # before the reactor is built: it has the wake action
        self._task: Any = None
        self._thread = threading.Thread(target=self._run, name=f"{node.get_name()}-reactor")
        self.code = 0
        self._error: BaseException | None = None
        self._polled_at: Any = None  # the tag of the last zero-timeout poll
        self._signals: dict[int, Any] = {}

    def start(self) -> None:
        """From the main thread: start the federate, wait for the main's first turn."""
        self._task = self._sleeper.adopt()
        for s in (signal.SIGINT, signal.SIGTERM):  # the federate's handlers need the main thread
            self._signals[s] = signal.signal(s, self._on_signal)
        self._thread.start()
        self._task.first_turn()

    def _on_signal(self, signum: int, frame: Any) -> None:
        # request_stop takes the scheduler's lock: not from a handler that may have
        # interrupted the code holding it
        threading.Thread(target=self.node._reactor.request_stop, daemon=True).start()

    def _run(self) -> None:
        from hprm_bridge import porting

        try:
            self.code = porting.run_node(self.node)
        except BaseException as exc:  # the runtime's: re-raised on the main thread
            self.code, self._error = 1, exc
        finally:
            self._task.stop()  # the federation is over: the main thread goes on

    @property
    def stopped(self) -> bool:
        return bool(self._task.stopping)

    def spin_once(self, timeout_sec: float | None) -> None:
        if self.stopped:
            raise ExternalShutdownException("the federation has stopped")
        timeout_ns = None if timeout_sec is None or timeout_sec < 0 else round(timeout_sec * 1e9)
        if timeout_ns == 0:
            tag = self.node._reactor.tag
            if tag != self._polled_at:
                self._polled_at = tag
                return
            timeout_ns = None  # polled again at one logical time: wait for a callback
        self._sleeper.wait_for_callbacks(self._task, timeout_ns)

    def finish(self, failure: BaseException | None) -> int:
        """From the main thread, as the node file ends (having raised ``failure``): stop
        the federation if it runs, wait for the reactor's thread; its exit code."""
        if not self.stopped:
            in_turn(self.node._reactor.request_stop)
            self._task.end(failure)
        self._thread.join()
        for s, handler in self._signals.items():
            signal.signal(s, handler)
        if self._error is not None:
            raise self._error
        return self.code


_loop: MainLoop | None = None


def spin_once(node: Any, timeout_sec: float | None) -> None:
    """What ``rclpy.spin_once(node, timeout_sec=)`` does in a federate (the module says)."""
    global _loop
    from hprm_bridge import porting
    from hprm_bridge.rclpy import UnsupportedError, _state

    if _loop is None:
        if node._finalized:
            raise UnsupportedError(
                f"node {node.get_name()}: spin_once after spin; a federate's main drives "
                "its node one way, rclpy.spin or a spin_once loop"
            )
        if threading.current_thread() is not threading.main_thread():
            raise UnsupportedError("rclpy.spin_once from a thread other than the node file's main")
        _loop = MainLoop(node)
        _state["spinning"].append(node)
        _loop.start()
        if porting.describing():  # hprm-ros graph wanted the ports: nothing runs
            raise SystemExit(finish(None))
    elif _loop.node is not node:
        raise UnsupportedError(
            f"an HPRM federate runs one node; spin_once was given {node.get_name()} after "
            f"{_loop.node.get_name()}"
        )
    _loop.spin_once(timeout_sec)
    if _loop.stopped:
        _state["shutdown"] = True


def spin_on(node: Any) -> bool:
    """``rclpy.spin(node)`` after spin_once: wait for callbacks until the federation
    stops. False where no spin_once loop runs this node (spin starts the federate)."""
    from hprm_bridge.rclpy import _state

    if _loop is None or _loop.node is not node:
        return False
    while not _loop.stopped:
        _loop.spin_once(None)
    _state["shutdown"] = True
    return True


def finish(failure: BaseException | None) -> int | None:
    """As the node file ends: the federate's exit code if spin_once ran it, else None."""
    global _loop
    if _loop is None:
        return None
    loop, _loop = _loop, None
    from hprm_bridge.rclpy import _state

    if loop.node in _state["spinning"]:
        _state["spinning"].remove(loop.node)
    _state["shutdown"] = True
    return loop.finish(failure)
