"""``rclpy.executors``: accepted, so node code that builds one runs; inside an
HPRM federate execution is the reactor scheduler's, deterministic whatever
executor the code asked for. ``spin()`` of several nodes runs them as one
federate (:mod:`hprm_bridge.rclpy.composition`), and so do ``spin_once`` and
``spin_until_future_complete`` from the node file's main
(:mod:`hprm_bridge.rclpy.main_turns`); ``create_task`` takes an executor of one."""

from __future__ import annotations

from typing import Any

from hprm_bridge.rclpy.task import Task


class Executor:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._nodes: list[Any] = []

    def add_node(self, node: Any) -> bool:
        """True if added (False: it was added before, as rclpy)."""
        if node in self._nodes:
            return False
        self._nodes.append(node)
        node.executor = self
        return True

    def _node(self, call: str) -> Any:
        """The one node ``call`` drives (spin runs several: rclpy/composition.py)."""
        from hprm_bridge import rclpy

        if len(self._nodes) != 1:
            names = ", ".join(n.get_name() for n in self._nodes)
            raise rclpy.UnsupportedError(
                f"executor.{call} in an HPRM federate drives one node; this executor has "
                + (
                    f"{len(self._nodes)} ({names}): spin() runs them all as one federate, "
                    "or give each node a node file of its own (one federate each)"
                    if self._nodes
                    else "none (add_node first)"
                )
            )
        return self._nodes[0]

    def spin(self) -> None:
        """Its nodes as one federate (several: :mod:`hprm_bridge.rclpy.composition`)."""
        from hprm_bridge import rclpy

        if len(self._nodes) > 1:
            rclpy._spin_together(self._nodes)
        else:
            rclpy.spin(self._node("spin"))

    def spin_once(self, timeout_sec: float | None = None) -> None:
        """As ``rclpy.spin_once`` of its node; of several, the main steps them all as one
        federate (:mod:`hprm_bridge.rclpy.main_turns`)."""
        from hprm_bridge.rclpy import main_loop

        first, *rest = self._stepped("spin_once")
        main_loop.spin_once(first, timeout_sec, tuple(rest))

    def spin_until_future_complete(self, future: Any, timeout_sec: float | None = None) -> None:
        """As ``rclpy.spin_until_future_complete`` with this executor's nodes (timeout in
        logical time)."""
        from hprm_bridge.rclpy import main_loop

        if future.done():
            return
        first, *rest = self._stepped("spin_until_future_complete")
        main_loop.spin_until_future_complete(first, future, timeout_sec, tuple(rest))

    def _stepped(self, call: str) -> list[Any]:
        """The nodes a main's ``call`` steps: all of them (one node: :meth:`_node`)."""
        return self._nodes if len(self._nodes) > 1 else [self._node(call)]

    def spin_once_until_future_complete(
        self, future: Any, timeout_sec: float | None = None
    ) -> None:
        self.spin_once(timeout_sec)

    def create_task(self, callback: Any, *args: Any, **kwargs: Any) -> Task:
        """As rclpy's: ``callback(*args, **kwargs)`` (or a coroutine) runs as a task of the
        node from the next microstep on (made before the spin: from the start), after the
        callback that made it, as rclpy's executor runs it at its next wait. It may wait
        (``await`` a future, a blocking call), and its exception fails the node, as it
        ends rclpy's spin. A node's callbacks make tasks where it has them: spun by a
        ``MultiThreadedExecutor``, with ``async def`` callbacks, or a task made before
        the spin."""
        from hprm_bridge import rclpy

        node = self._node("create_task")
        if node._finalized and node._sleeper is None:
            raise rclpy.UnsupportedError(
                f"Executor.create_task in a callback of node {node.get_name()}, which runs "
                "no tasks (its reactor has no place for one, and its federation has "
                "started): spin it with a MultiThreadedExecutor, or make a task before "
                "spinning"
            )
        task = Task(callback, args, kwargs, executor=self)
        node._tasks().start(lambda: (task(), task.result()))  # its error fails the node
        return task

    def get_nodes(self) -> list[Any]:
        return list(self._nodes)

    def remove_node(self, node: Any) -> None:
        if node in self._nodes:
            self._nodes.remove(node)  # node.executor stays, as in rclpy (Humble)

    def wake(self) -> None:
        """Nothing to wake: the federate's scheduler waits for its next tag itself."""

    @property
    def context(self) -> Any:
        from hprm_bridge import rclpy

        return rclpy.get_default_context()

    def shutdown(self, timeout_sec: float | None = None) -> bool:
        return True


class SingleThreadedExecutor(Executor):
    pass


class MultiThreadedExecutor(Executor):
    pass


class ExternalShutdownException(Exception):
    """As rclpy's: raised by a spin once the context was shut down. Under HPRM by
    ``spin_once`` called after its federation stopped (``spin`` returns), and so that
    the usual ``except (KeyboardInterrupt, ExternalShutdownException)`` imports."""
