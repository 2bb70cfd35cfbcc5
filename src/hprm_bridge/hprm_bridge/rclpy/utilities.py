"""``rclpy.utilities``: what node files import from it.

Most often ``remove_ros_args``, so that a node's own ``argparse`` does not see
the ``--ros-args`` section ``ros2 run``/``ros2 launch`` append::

    >>> remove_ros_args(["detector", "--ros-args", "-p", "fps:=5", "--", "--gpu"])
    ['detector', '--gpu']
"""

from __future__ import annotations

import sys
from typing import Any

from hprm_bridge.rclpy.arguments import parse_ros_args
from hprm_bridge.rclpy.constants import S_TO_NS

__all__ = [
    "get_default_context", "get_rmw_implementation_identifier", "ok", "remove_ros_args",
    "shutdown", "timeout_sec_to_nsec", "try_shutdown",
]  # fmt: skip


def remove_ros_args(args: list[str] | None = None) -> list[str]:
    """``args`` (default ``sys.argv``) without its ``--ros-args`` sections; raises
    :class:`~hprm_bridge.rclpy.arguments.UnknownROSArgsError` for an argument rcl
    would not know there, as rclpy does."""
    return parse_ros_args(sys.argv if args is None else args).rest


def get_default_context() -> Any:
    from hprm_bridge import rclpy

    return rclpy.get_default_context()


def get_rmw_implementation_identifier() -> str:
    from hprm_bridge import rclpy

    return rclpy.get_rmw_implementation_identifier()


def ok(*, context: Any = None) -> bool:
    from hprm_bridge import rclpy

    return rclpy.ok()


def shutdown(*, context: Any = None) -> None:
    from hprm_bridge import rclpy

    rclpy.shutdown()


def try_shutdown(*, context: Any = None) -> None:
    from hprm_bridge import rclpy

    rclpy.try_shutdown()


def timeout_sec_to_nsec(timeout_sec: float | None) -> int:
    """-1 (wait forever) for None or a negative timeout, else nanoseconds."""
    if timeout_sec is None or timeout_sec < 0:
        return -1
    return int(float(timeout_sec) * S_TO_NS)
