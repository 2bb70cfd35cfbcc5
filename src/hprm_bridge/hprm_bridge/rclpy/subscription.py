"""``rclpy.subscription.Subscription`` of a ported node: an input port of its reactor
and a reaction calling the callback once per message of the tag."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hprm_bridge.rclpy.deadline import DeadlineWatch
from hprm_bridge.rclpy.liveliness import Watch
from hprm_bridge.rclpy.qos import QoSProfile
from hprm_core import Input


class Subscription:
    qos_profile: QoSProfile
    _destroyed = False
    _deadline: DeadlineWatch | None = None  # its QoS deadline, watched (rclpy/deadline.py)
    _liveliness: Watch | None = None  # its publishers' liveliness (rclpy/liveliness.py)
    _matched = 0  # its publishers at the start (Node._check_connections)

    def __init__(
        self, topic: str, port: Input, msg_type: str, callback: Callable[..., Any],
        raw: bool = False,
    ):  # fmt: skip
        self.topic_name = topic
        self.msg_type = msg_type
        self._port = port
        self.callback = callback
        self.raw = raw  # the callback gets each message's CDR bytes (rclpy's raw=True)

    def destroy(self) -> None:
        """Its port stays (the federation's are fixed); its callback is not called again
        (messages of the tag not yet delivered are dropped, as rclpy drops what a
        destroyed subscription had not taken)."""
        self._destroyed = True
        if self._deadline is not None:
            self._deadline.stop()
