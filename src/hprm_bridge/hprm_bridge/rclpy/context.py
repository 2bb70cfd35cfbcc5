"""``rclpy.context.Context``: a ported node's process has one context, the default.

A federate is one process (one node, or an executor's several: they stop together), so
there is nothing for a second context to separate: every ``Context`` is a view of the
process's ``rclpy.init``/``rclpy.shutdown`` state, and ``context=`` arguments are
accepted and change nothing. ``on_shutdown``
callbacks run once, when ``rclpy.shutdown()`` is called or the federation stops (as
rclpy runs them when its signal handler shuts the context down).

>>> from hprm_bridge.rclpy import get_default_context, utilities
>>> get_default_context() is utilities.get_default_context()
True
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

_on_shutdown: list[Callable[[], None]] = []


class Context:
    def init(self, args: list[str] | None = None, *, initialize_logging: bool = True,
             domain_id: int | None = None) -> None:  # fmt: skip
        from hprm_bridge import rclpy

        rclpy.init(args=args, domain_id=domain_id)

    def ok(self) -> bool:
        from hprm_bridge import rclpy

        return rclpy.ok()

    def shutdown(self) -> None:
        from hprm_bridge import rclpy

        rclpy.shutdown()

    def try_shutdown(self) -> None:
        from hprm_bridge import rclpy

        rclpy.try_shutdown()

    def on_shutdown(self, callback: Callable[[], None]) -> None:
        if not callable(callback):
            raise TypeError("callback should be a callable, got {}", type(callback))
        _on_shutdown.append(callback)

    def get_domain_id(self) -> int:
        """The ``ROS_DOMAIN_ID`` the node's plain ROS 2 side (the gateway) would use."""
        if not self.ok():
            raise RuntimeError("rclpy.init() has not been called: no domain id yet")
        return int(os.environ.get("ROS_DOMAIN_ID", "0") or 0)

    def destroy(self) -> None:
        pass

    @property
    def handle(self) -> Any:
        return None


def run_shutdown_callbacks() -> None:
    """Once: the callbacks ``on_shutdown`` registered (their errors do not stop the rest)."""
    callbacks, _on_shutdown[:] = list(_on_shutdown), []
    for callback in callbacks:
        try:
            callback()
        except Exception:  # as rclpy: a callback's failure does not stop the shutdown
            import logging

            logging.getLogger("hprm.rclpy").exception("an on_shutdown callback failed")


DEFAULT = Context()
