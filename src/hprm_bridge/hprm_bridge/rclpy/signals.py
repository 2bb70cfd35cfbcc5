"""``rclpy.signals.SignalHandlerOptions``: accepted by ``rclpy.init``. A ported node's
signals are its federate's: SIGINT and SIGTERM stop the node's process cleanly (its
shared memory released) whichever option the node file asks for."""

from __future__ import annotations

import enum


class SignalHandlerOptions(enum.IntEnum):
    NO = 0
    SIGINT = 1
    SIGTERM = 2
    ALL = 3
