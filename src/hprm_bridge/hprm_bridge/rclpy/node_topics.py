"""A node's publishers and subscriptions (``create_publisher``, ``create_subscription``),
a mixin of :class:`hprm_bridge.rclpy.node.Node`.

Before the start each is a port of the node's reactor, which the RTI connects by topic
(a publisher's QoS its contract, :mod:`hprm_bridge.rclpy.qos_compatibility`), with the
timers its QoS needs (a deadline's, :mod:`hprm_bridge.rclpy.deadline`; a manual
liveliness's lease, :mod:`hprm_bridge.rclpy.liveliness`; after the start, timers of the
node's :mod:`~hprm_bridge.rclpy.timer_wheel`). After it, one takes the place
and port of a destroyed one (:mod:`hprm_bridge.rclpy.late_entities`), or, a
subscription on a new topic, hears its own process's publishers
(:mod:`hprm_bridge.rclpy.late_subscriptions`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

from hprm_bridge import messages
from hprm_bridge.liveliness_change import MATCHED
from hprm_bridge.rclpy import (
    deadline,
    late_entities,
    late_subscriptions,
    liveliness,
    logical_sleep,
    main_loop,
    qos_compatibility,
)
from hprm_bridge.rclpy.callback_groups import CallbackGroup
from hprm_bridge.rclpy.deadline import DeadlineWatch
from hprm_bridge.rclpy.publisher import Publisher
from hprm_bridge.rclpy.qos import as_profile
from hprm_bridge.rclpy.qos_event import (
    QoSOfferedDeadlineMissedInfo,
    QoSRequestedDeadlineMissedInfo,
)
from hprm_bridge.rclpy.qos_overriding_options import QoSOverridingOptions, declare_qos_parameters
from hprm_bridge.rclpy.subscription import Subscription
from hprm_core import Input, Output, Timer


class NodeTopicMethods:
    """``Node``'s publishers and subscriptions (it provides the lists and the reactor,
    ``_late_timer``, ``_in_group``, ``resolve_topic_name``)."""

    _reactor: Any
    _graph: Any
    _clock: Any
    _finalized: bool
    _publishers: list[Publisher]
    _own_publishers: list[Publisher]
    _subscriptions: list[Subscription]
    _late_subscriptions: list[Subscription]
    _deadlines: list[DeadlineWatch]
    _leases: list[liveliness.Lease]
    _kick: Timer | None
    _reaction_thread: int | None
    _late_timer: Any
    _in_group: Any
    resolve_topic_name: Any

    def create_publisher(
        self, msg_type: Any, topic: str, qos_profile: Any, *,
        publisher_class: type[Publisher] = Publisher, event_callbacks: Any = None,
        qos_overriding_options: QoSOverridingOptions | None = None, **kw: Any,
    ) -> Publisher:  # fmt: skip
        name, ros_type, qos = self._endpoint(
            "publisher", msg_type, topic, qos_profile, qos_overriding_options
        )
        if self._finalized:  # in the place of a destroyed one
            i = late_entities.place(self._own_publishers, "create_publisher", name, ros_type)
            old = self._own_publishers[i]
            pub = publisher_class(name, old._port, ros_type)
            self._own_publishers[i] = self._publishers[self._publishers.index(old)] = pub
            pub._queue = old._queue  # what the old one queued at this tag (its leaving)
            pub._late = old._late  # subscriptions made after the start, hearing it
            pub._outside = old._outside  # publishes from outside the node's turns
            pub._queue.append(MATCHED)  # its subscriptions hear it come back
            self._kick_soon()
        else:
            pub = self._publisher(name, ros_type, f"pub{len(self._own_publishers)}",
                                  publisher_class=publisher_class,
                                  contract=qos_compatibility.contract(qos))  # fmt: skip
            self._own_publishers.append(pub)
            self._graph.add("pub", name, ros_type, qos)
            pub._outside = main_loop.published_unspun  # a main that may never spin
        pub._kick = self._kick_soon
        pub._history = late_subscriptions.history(qos, self._clock.now_ns)
        pub._lease = self._lease(pub, qos, event_callbacks)
        pub._deadline = self._deadline("publisher", name, qos, event_callbacks)
        pub._qos_events = (event_callbacks, topic)
        pub.qos_profile = qos
        pub._msg_class = messages.message_class(ros_type)
        pub._subscription_count = functools.partial(self._matched, pub, name)
        return pub

    def _endpoint(
        self, kind: str, msg_type: Any, topic: str, qos_profile: Any,
        overriding: QoSOverridingOptions | None,
    ) -> tuple[str, str, Any]:  # fmt: skip
        """A new publisher's or subscription's (``kind``) topic, type and QoS (its
        parameter overrides applied)."""
        name, ros_type = self.resolve_topic_name(topic), messages.ros_type_name(msg_type)
        qos = as_profile(qos_profile)
        if overriding is not None:
            qos = declare_qos_parameters(kind, self, name, qos, overriding)
        return name, ros_type, qos

    def _matched(self, pub: Publisher, topic: str) -> int:
        """The topic's subscriptions but those ``pub`` offers too little (rclpy counts
        matched ones)."""
        return self._graph.count("sub", topic) - qos_compatibility.refused_peers(self, pub)

    def _kick_soon(self) -> None:
        """The node's kick a nanosecond on: a flush of its publishers, for what one of them
        queued outside the node's reactions (another node's callback destroyed it), and
        what came for its late subscriptions (rclpy/late_subscriptions.py). From a thread
        outside any turn it waits for the node's next kick instead."""
        if self._kick is not None and logical_sleep.holds_turn(self._reaction_thread):
            self._kick.reset()

    def _lease(self, pub: Publisher, qos: Any, event_callbacks: Any) -> liveliness.Lease | None:
        """The lease of a manual liveliness, if ``pub`` has one: its timer one of the node's
        reactor before the start, one of its timer wheel after it (first running out one
        lease on)."""
        lease = liveliness.lease(qos, pub._queue, event_callbacks)
        if lease is None:
            return None
        if self._finalized:
            period = lease.timer.period
            lease.timer = self._late_timer(period, lease.expired, note=lease.has_callback)
            lease.timer.reset()
        else:
            self._reactor.attach(f"lease{len(self._leases)}", lease.timer)
            self._leases.append(lease)
        return lease

    def _deadline(
        self, kind: str, name: str, qos: Any, event_callbacks: Any
    ) -> DeadlineWatch | None:
        """The deadline watch of a new publisher or subscription (``kind``) of topic
        ``name``, if it has one: its timer one of the node's reactor before the start, one
        of its timer wheel after it."""
        pub = kind == "publisher"
        info = QoSOfferedDeadlineMissedInfo if pub else QoSRequestedDeadlineMissedInfo
        watch = deadline.watch(qos, event_callbacks, info)
        if watch is None:
            return None
        if self._finalized:
            watch.timer = self._late_timer(watch.timer.period, watch.missed)
        else:
            self._reactor.attach(f"deadline{len(self._deadlines)}", watch.timer)
            self._deadlines.append(watch)
        return watch

    def _publisher(
        self, topic: str, ros_type: str, port_name: str, boundary: bool = False,
        publisher_class: type[Publisher] = Publisher, contract: dict[str, int] | None = None,
    ) -> Publisher:  # fmt: skip
        port = Output(topic=topic, msg_type=ros_type, boundary=boundary, contract=contract)
        self._reactor.attach(port_name, port)
        pub = publisher_class(topic, port, ros_type)
        self._publishers.append(pub)
        return pub

    def create_subscription(
        self, msg_type: Any, topic: str, callback: Callable[..., Any], qos_profile: Any, *,
        callback_group: CallbackGroup | None = None, event_callbacks: Any = None,
        qos_overriding_options: QoSOverridingOptions | None = None, raw: bool = False,
        **kw: Any,
    ) -> Subscription:  # fmt: skip
        name, ros_type, qos = self._endpoint(
            "subscription", msg_type, topic, qos_profile, qos_overriding_options
        )
        i = late_entities.free(self._subscriptions, name, ros_type) if self._finalized else None
        if self._finalized and i is None:  # hearing its process's publishers (and declared)
            sub = late_subscriptions.subscribe(self, name, ros_type, callback, raw, qos,
                                               event_callbacks)  # fmt: skip
        elif i is not None:  # in the place of a destroyed one
            old = self._subscriptions[i]
            sub = Subscription(name, old._port, ros_type, callback, raw)
            self._subscriptions[i] = sub
            sub._liveliness = liveliness.watch(event_callbacks, old)
        else:
            port = Input(topic=name, msg_type=ros_type, contract=qos_compatibility.contract(qos))
            self._reactor.attach(f"sub{len(self._subscriptions)}", port)
            sub = Subscription(name, port, ros_type, callback, raw)
            self._subscriptions.append(sub)
            sub._liveliness = liveliness.watch(event_callbacks)
            self._graph.add("sub", name, ros_type, qos)
        sub._deadline = self._deadline("subscription", name, qos, event_callbacks)
        sub._qos_events = (event_callbacks, topic)
        sub.qos_profile = qos
        return self._in_group(sub, callback_group)

    def destroy_publisher(self, publisher: Publisher) -> bool:
        return late_entities.destroy(publisher)

    def destroy_subscription(self, subscription: Subscription) -> bool:
        return late_entities.destroy(subscription)

    @property
    def publishers(self) -> Iterator[Publisher]:
        return (p for p in self._own_publishers if not p._destroyed)

    @property
    def subscriptions(self) -> Iterator[Subscription]:
        both = (*self._subscriptions, *self._late_subscriptions)
        return (s for s in both if not s._destroyed)
