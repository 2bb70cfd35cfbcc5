"""``rclpy.subscription.Subscription`` of a ported node: an input port of its reactor
and a reaction calling the callback once per message of the tag."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from hprm_bridge.liveliness_change import LivelinessChange
from hprm_bridge.raw_message import RawMessage, materialize
from hprm_bridge.rclpy.deadline import DeadlineWatch
from hprm_bridge.rclpy.liveliness import Watch, has_message
from hprm_bridge.rclpy.logical_sleep import drive
from hprm_bridge.rclpy.qos import QoSProfile
from hprm_bridge.rclpy.serialization import serialize_message
from hprm_bridge.wire.errors import MalformedSampleError
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

    def _arrived(self, values: tuple[Any, ...]) -> None:
        """A tag brought ``values``: its deadline's period starts again at a message (at
        the tag, whenever its callback runs)."""
        deadline = self._deadline
        if deadline is not None and values and not self._destroyed and has_message(values):
            deadline.seen()

    def _deliver(self, values: tuple[Any, ...]) -> None:
        """The callback for each message of ``values`` (what a tag brought), and the
        liveliness changes among them to its watch."""
        for value in values:
            if self._destroyed:  # by this callback, or another of the tag
                return
            if type(value) is LivelinessChange:  # a publisher's (rclpy/liveliness.py)
                if self._liveliness is not None:
                    self._liveliness.heard(value)
                continue
            try:  # a RawMessage from ROS 2 through the gateway is decoded here
                msg = raw_bytes(value) if self.raw else materialize(value)
            except MalformedSampleError as exc:
                logging.getLogger("hprm.rclpy").warning(
                    "dropped a malformed sample on %s: %s", self.topic_name, exc
                )
                continue
            drive(self.callback(msg))


def raw_bytes(value: Any) -> bytes:
    """A raw subscription's bytes: the CDR the gateway carried from ROS 2, or those
    rclpy's ``serialize_message`` gives for a message of another federate."""
    if isinstance(value, RawMessage):
        return bytes(value.data)
    return serialize_message(value)
