"""The QoS liveliness of a ported node's publishers, and what its subscriptions hear of
it, in logical time.

The rules, as measured under ROS 2 Humble with Cyclone DDS:

- a subscription given a ``liveliness`` event callback hears, once its publishers are
  matched, one event counting them all alive (``alive_count`` N, change +N). Here that is
  at the start tag, after the incompatible-QoS events (discovery comes before data);
- a publisher destroyed (by ``destroy_publisher``, or with its node) leaves: its
  subscriptions hear ``alive_count`` -1 (``not_alive_count`` -1 if it had lost its
  liveliness); one created in its place later comes back, +1;
- a publisher of ``MANUAL_BY_TOPIC`` liveliness with a lease must publish or call
  ``assert_liveliness()`` within every lease. When a lease passes with neither, it hears
  ``liveliness`` lost (its ``total_count``) and its subscriptions hear alive -1, not
  alive +1; its next publish makes it alive again (+1, -1, heard before that message).
  An ``assert_liveliness()`` after the loss does not (Cyclone's behaviour, measured);
- an ``AUTOMATIC`` publisher is alive as long as it exists: a federate does not die
  silently (one that fails stops its federation).

Under DDS the lease runs on the wall clock, so where a loss falls among the messages
changes from run to run. Here the lease is a timer of the publisher's node in logical
time, restarted by each publish and assertion, and every change travels on the
publisher's port among its messages (:mod:`hprm_bridge.liveliness_change`): each
subscriber hears it at the tag the lease ran out, in every run.

Example (the events of ros2/demos' ``liveliness``)::

    qos = QoSProfile(depth=10, liveliness=LivelinessPolicy.MANUAL_BY_TOPIC,
                     liveliness_lease_duration=Duration(seconds=1))
    pub = talker.create_publisher(String, "chatter", qos, event_callbacks=
                                  PublisherEventCallbacks(liveliness=on_lost))
    listener.create_subscription(String, "chatter", on_msg, qos, event_callbacks=
                                 SubscriptionEventCallbacks(liveliness=on_changed))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hprm_bridge.liveliness_change import LOST, REGAINED, LivelinessChange
from hprm_bridge.rclpy.duration import Infinite
from hprm_bridge.rclpy.qos import LivelinessPolicy
from hprm_bridge.rclpy.qos_event import QoSLivelinessChangedInfo, QoSLivelinessLostInfo
from hprm_core import Timer


class Lease:
    """A ``MANUAL_BY_TOPIC`` publisher's lease: its timer (the node's reaction to it is
    :meth:`expired`) and whether the publisher is alive."""

    def __init__(self, lease_ns: int, queue: list[Any], callback: Callable[..., Any] | None):
        self.timer = Timer(offset=lease_ns, period=lease_ns)  # the first lease: from the start
        self.alive = True
        self.total_count = 0
        self._queue = queue  # the publisher's messages of the tag: the change goes among them
        self._callback = callback

    def published(self) -> None:
        """A publish, before its message is queued: alive again after a loss."""
        if not self.alive:
            self.alive = True
            self._queue.append(REGAINED)
        self.asserted()

    def asserted(self) -> None:
        """A publish or ``assert_liveliness()``: the lease starts again (while alive)."""
        if self.alive:
            self.timer.cancel()
            self.timer.reset()

    @property
    def has_callback(self) -> bool:
        return self._callback is not None

    def expired(self) -> None:
        self.timer.cancel()  # lost once, until it publishes again
        self.alive = False
        self.total_count += 1
        self._queue.append(LOST)
        if self._callback is not None:
            self._callback(QoSLivelinessLostInfo(total_count=self.total_count,
                                                 total_count_change=1))  # fmt: skip

    def stop(self) -> bool:
        """Its publisher was destroyed: no more losses. Whether it was alive."""
        self.timer.cancel()
        return self.alive


def lease(qos: Any, queue: list[Any], event_callbacks: Any) -> Lease | None:
    """The lease a publisher of ``qos`` keeps, if any: manual liveliness by topic and a
    lease duration (rclpy's default, 0, is infinite)."""
    ns = int(qos.liveliness_lease_duration.nanoseconds)
    if qos.liveliness != LivelinessPolicy.MANUAL_BY_TOPIC or not 0 < ns < Infinite.nanoseconds:
        return None
    return Lease(ns, queue, getattr(event_callbacks, "liveliness", None))


class Watch:
    """A subscription's count of its publishers, alive and not, told to its callback at
    each change."""

    def __init__(self, callback: Callable[..., Any]) -> None:
        self._callback = callback
        self.alive_count = 0
        self.not_alive_count = 0

    def start(self, matched: int) -> None:
        """The start tag: its ``matched`` publishers, all alive, in one event."""
        if matched:
            self.heard(LivelinessChange(matched, 0))

    def heard(self, change: LivelinessChange) -> None:
        self.alive_count += change.alive_change
        self.not_alive_count += change.not_alive_change
        self._callback(QoSLivelinessChangedInfo(
            alive_count=self.alive_count, not_alive_count=self.not_alive_count,
            alive_count_change=change.alive_change,
            not_alive_count_change=change.not_alive_change,
        ))  # fmt: skip


def watch(event_callbacks: Any, old: Any = None) -> Watch | None:
    """A subscription's watch, where its event callbacks have a ``liveliness`` one. One
    created after the start, in the place of ``old`` (a destroyed subscription), goes on
    from its counts (or, where it had no watch, from its publishers at the start); it
    hears no first event, having been matched at the start."""
    callback = getattr(event_callbacks, "liveliness", None)
    if callback is None:
        return None
    new = Watch(callback)
    if old is not None:
        counted = old._liveliness
        if counted is not None:
            new.alive_count, new.not_alive_count = counted.alive_count, counted.not_alive_count
        else:
            new.alive_count = old._matched
    return new


def has_message(values: tuple[Any, ...]) -> bool:
    """Whether a port's tuple holds a message (not only liveliness changes)."""
    return any(type(v) is not LivelinessChange for v in values)
