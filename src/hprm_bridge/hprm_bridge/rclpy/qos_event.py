"""``rclpy.qos_event``: the event callbacks a publisher or subscription is given
(``event_callbacks=``).

Between federates every message is delivered, in order, to every subscription of
its topic. Of DDS's events, those that still happen come in logical time, so each
falls at the same tag in every run:

- **deadline**: a subscription given ``deadline=`` in its QoS profile and a
  ``deadline`` callback hears, every deadline period with no message after its last
  one, ``total_count`` so far (a publisher the same about its own publishes;
  :mod:`hprm_bridge.rclpy.deadline`);
- **incompatible_qos**: at the start, each other end its profile kept it from (the RTI
  connects only what DDS would match; :mod:`hprm_bridge.rclpy.qos_compatibility`);
- **liveliness**: a subscription hears its publishers matched at the start, leaving
  when destroyed, and a manual-liveliness publisher's lease run out and its return; that
  publisher hears its loss (:mod:`hprm_bridge.rclpy.liveliness`).

Message-lost callbacks are accepted and never called: nothing is lost between
federates.

Example::

    qos = QoSProfile(depth=10, deadline=Duration(seconds=0.1))
    node.create_subscription(Odometry, "odom", on_odom, qos,
                             event_callbacks=SubscriptionEventCallbacks(deadline=on_silence))
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class _Counts:
    """What most events report: how many so far, and since the last callback."""

    total_count: int = 0
    total_count_change: int = 0


class QoSRequestedDeadlineMissedInfo(_Counts):
    pass


class QoSOfferedDeadlineMissedInfo(_Counts):
    pass


class QoSLivelinessLostInfo(_Counts):
    pass


class QoSMessageLostInfo(_Counts):
    pass


@dataclass
class QoSRequestedIncompatibleQoSInfo(_Counts):
    last_policy_kind: int = 0


@dataclass
class QoSLivelinessChangedInfo:
    alive_count: int = 0
    not_alive_count: int = 0
    alive_count_change: int = 0
    not_alive_count_change: int = 0


QoSOfferedIncompatibleQoSInfo = QoSRequestedIncompatibleQoSInfo


class QoSPublisherEventType(enum.IntEnum):
    RCL_PUBLISHER_OFFERED_DEADLINE_MISSED = 0
    RCL_PUBLISHER_LIVELINESS_LOST = 1
    RCL_PUBLISHER_OFFERED_INCOMPATIBLE_QOS = 2


class QoSSubscriptionEventType(enum.IntEnum):
    RCL_SUBSCRIPTION_REQUESTED_DEADLINE_MISSED = 0
    RCL_SUBSCRIPTION_LIVELINESS_CHANGED = 1
    RCL_SUBSCRIPTION_REQUESTED_INCOMPATIBLE_QOS = 2
    RCL_SUBSCRIPTION_MESSAGE_LOST = 3


class UnsupportedEventTypeError(Exception):
    """As rclpy's (an event the middleware lacks); HPRM raises it for none."""


Callback = Callable[[Any], None] | None


class SubscriptionEventCallbacks:
    def __init__(
        self, *, deadline: Callback = None, incompatible_qos: Callback = None,
        liveliness: Callback = None, message_lost: Callback = None,
        use_default_callbacks: bool = True,
    ) -> None:  # fmt: skip
        self.deadline = deadline
        self.incompatible_qos = incompatible_qos
        self.liveliness = liveliness
        self.message_lost = message_lost
        self.use_default_callbacks = use_default_callbacks


class PublisherEventCallbacks:
    def __init__(
        self, *, deadline: Callback = None, incompatible_qos: Callback = None,
        liveliness: Callback = None, use_default_callbacks: bool = True,
    ) -> None:  # fmt: skip
        self.deadline = deadline
        self.incompatible_qos = incompatible_qos
        self.liveliness = liveliness
        self.use_default_callbacks = use_default_callbacks
