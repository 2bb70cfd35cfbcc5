"""A ported node's ``/rosout``: its log lines as ``rcl_interfaces/msg/Log``.

Every rclpy node publishes what it logs on ``/rosout``, which is how
``rqt_console``, ``ros2 topic echo /rosout`` and log collectors see it. A
ported node does the same through an ordinary publisher: its log lines of a
tag go out on its ``/rosout`` port with that tag's other messages, and the
gateway (``hprm-ros run --bridge``) publishes them to ROS 2 with rclpy's
``/rosout`` QoS, every ported node's lines through one writer, each line
naming its node. Without a gateway the port is simply left unconnected.

The stamp is the logical time of the tag the line was logged at (the system
time before the node runs), so a replayed run logs the same stamps.
"""

from __future__ import annotations

from typing import Any

from hprm_bridge import messages

TOPIC = "/rosout"
MSG_TYPE = "rcl_interfaces/msg/Log"


def log_record(logger: str, severity: int, text: str, caller: Any, now_ns: int) -> Any:
    """The ``Log`` message rclpy would publish for one line."""
    code = caller.f_code
    stamp = messages.message_class("builtin_interfaces/msg/Time")(
        sec=now_ns // 1_000_000_000, nanosec=now_ns % 1_000_000_000
    )
    return messages.message_class(MSG_TYPE)(
        stamp=stamp,
        level=int(severity),
        name=logger,
        msg=text,
        file=code.co_filename,
        function=code.co_name,
        line=caller.f_lineno,
    )
