"""``rclpy.executors``: accepted, so node code that builds one runs; inside an
HPRM federate execution is the reactor scheduler's, deterministic whatever
executor the code asked for."""

from __future__ import annotations

from typing import Any


class _Executor:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._nodes: list[Any] = []

    def add_node(self, node: Any) -> bool:
        self._nodes.append(node)
        return True

    def _node(self) -> Any:
        from hprm_bridge import rclpy

        if len(self._nodes) != 1:
            raise rclpy.UnsupportedError(
                f"an HPRM federate runs one node; this executor has {len(self._nodes)}"
            )
        return self._nodes[0]

    def spin(self) -> None:
        from hprm_bridge import rclpy

        rclpy.spin(self._node())

    def spin_once(self, timeout_sec: float | None = None) -> None:
        from hprm_bridge import rclpy

        rclpy.spin_once(self._node(), timeout_sec=timeout_sec)

    def shutdown(self, timeout_sec: float | None = None) -> bool:
        return True


class SingleThreadedExecutor(_Executor):
    pass


class MultiThreadedExecutor(_Executor):
    pass


class ExternalShutdownException(Exception):
    """As rclpy's: raised by a spin once the context was shut down. Under HPRM by
    ``spin_once`` called after its federation stopped (``spin`` returns), and so that
    the usual ``except (KeyboardInterrupt, ExternalShutdownException)`` imports."""
