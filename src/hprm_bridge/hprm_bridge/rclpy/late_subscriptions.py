"""Subscriptions a node creates after its federation started, on topics its process publishes.

A federate's ports are fixed before its federation starts
(:mod:`~hprm_bridge.rclpy.late_entities`), so a subscription created later, on a topic
the node had none of, cannot hear other federates. It can hear its own process, whose
publishers are objects here: its node's and those of the nodes composed with it
(:mod:`~hprm_bridge.rclpy.composition`). That is ros2/demos' ``lifespan``: a listener
that subscribes 3 s in to the transient-local talker of its own executor. DDS's rules hold:

- what a publisher it hears publishes at a tag reaches it one nanosecond later (the
  node's kick timer, which also carries a publisher's leaving,
  :mod:`~hprm_bridge.rclpy.liveliness`), each message its own copy, as a sibling's: at
  the same logical time in every run;
- a ``TRANSIENT_LOCAL`` publisher keeps its last ``depth`` messages and when each was
  published (its DDS writer's history); a ``TRANSIENT_LOCAL`` subscription hears those
  first, but not those older than the publisher's ``lifespan`` when it subscribes (the
  demo: lifespan 1 s, subscribed at 3 s, it hears the messages of 2.5 s and 3 s);
- a publisher of another type is not heard; one whose QoS DDS would not match is not
  heard either, and both ends get their incompatible-QoS events
  (:mod:`~hprm_bridge.rclpy.qos_compatibility`), a nanosecond on; a ``liveliness``
  callback hears its publishers in one event, then;
- a topic another federate publishes (the gateway too, where it carries the topic from
  ROS 2) comes only through a port fixed at the start. Declared on the command line
  (``hprm-ros run --late NODE=TOPIC:TYPE``, a launch file's
  ``PortedNode(late_subscriptions=["TOPIC:TYPE"])``), the federate has that port from the
  start, heard by no callback until one of the process subscribes to the topic (with
  that type): from then on it hears the topic's messages from the federation too, each a
  nanosecond after its tag, a transient-local one first what the port kept of
  transient-local publishers (:meth:`DeclaredPort._kept`). The federation's messages on
  it reach the federate from the start, whether or not anyone listens yet; their QoS (as
  the graph tells it) is checked against the subscription's. Undeclared, it is refused
  with an error naming who publishes it and the option: a subscription that silently
  missed their messages would lose them. (A plain ROS 2 publisher of a topic the
  gateway does not carry is unknown to the federation: not heard.)
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hprm_bridge import messages
from hprm_bridge.liveliness_change import LivelinessChange
from hprm_bridge.message_pickle import copied
from hprm_bridge.rclpy import late_entities, liveliness, qos_compatibility
from hprm_bridge.rclpy.callback_groups import run_in_group
from hprm_bridge.rclpy.exceptions import UnsupportedError
from hprm_bridge.rclpy.logical_sleep import Sleeper
from hprm_bridge.rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile
from hprm_bridge.rclpy.subscription import Subscription
from hprm_bridge.rclpy.topic_endpoint_info import resolved
from hprm_core import Input
from hprm_core.structure import shortfall

if TYPE_CHECKING:
    from hprm_bridge.rclpy.node import Node
    from hprm_bridge.rclpy.publisher import Publisher


class History:
    """A ``TRANSIENT_LOCAL`` publisher's last messages, each with its publish time."""

    def __init__(self, qos: QoSProfile, now_ns: Callable[[], int]) -> None:
        depth = None if qos.history == HistoryPolicy.KEEP_ALL else qos.depth
        self._kept: collections.deque[tuple[int, Any]] = collections.deque(maxlen=depth)
        self._now = now_ns
        self._lifespan = qos.lifespan.nanoseconds or None  # 0: rmw's default, infinite

    def keep(self, message: Any) -> None:
        self._kept.append((self._now(), message))

    def alive(self) -> list[Any]:
        """The messages kept that have not outlived the lifespan by now."""
        if self._lifespan is None:
            return [m for _, m in self._kept]
        now = self._now()
        return [m for t, m in self._kept if now - t < self._lifespan]


def history(qos: QoSProfile, now_ns: Callable[[], int]) -> History | None:
    """What a publisher of ``qos`` keeps for subscriptions that come late (only a
    ``TRANSIENT_LOCAL`` one keeps anything: no cost to any other)."""
    return History(qos, now_ns) if qos.durability == DurabilityPolicy.TRANSIENT_LOCAL else None


def subscribe(
    node: Node, topic: str, ros_type: str, callback: Callable[..., Any], raw: bool,
    qos: QoSProfile, event_callbacks: Any,
) -> Subscription:  # fmt: skip
    """A subscription of ``node``, made after the start, on a topic it had none of."""
    contract = qos_compatibility.contract(qos)
    declared, outside, refusals = _from_federation(node, topic, ros_type, contract)
    port = Input(topic=topic, msg_type=ros_type, contract=contract)  # never attached
    sub = Subscription(topic, port, ros_type, callback, raw)
    sub._liveliness = liveliness.watch(event_callbacks)  # (its QoS: create_subscription's)
    node._late_subscriptions.append(sub)
    node._graph.add_late("sub", topic, ros_type, qos, [n._graph for n in node._process])
    matched = 0  # publishers of other federates it hears
    if declared is not None and not refusals:  # their messages, through the declared port
        declared.bound.append((node, sub))
        matched = outside
    for terms in refusals:  # (the other federate is not told)
        _refused([(node, sub, "sub")], terms)
    heard = []
    for owner in node._process:
        for pub in owner._own_publishers:
            if pub.topic_name != topic or pub.msg_type != ros_type:
                continue
            terms = tuple(shortfall(pub._port.contract, contract))
            if terms:
                _refused([(node, sub, "sub"), (owner, pub, "pub")], terms)
                continue
            pub._late = [*pub._late, (node, sub)]  # a publisher in its place takes it
            if not pub._destroyed:
                heard.append(pub)
    if sub._liveliness is not None and (heard or matched):
        _soon(node, None, functools.partial(sub._liveliness.start, len(heard) + matched))
    if qos.durability == DurabilityPolicy.TRANSIENT_LOCAL:  # the federation's, then its own
        histories = [declared.history if matched else None, *(p._history for p in heard)]
        for kept in (h.alive() for h in histories if h is not None):
            if kept:
                _heard(node, sub, tuple(map(copied, kept)))
    return sub


def _from_federation(
    node: Node, topic: str, ros_type: str, contract: dict[str, int]
) -> tuple[DeclaredPort | None, int, list[tuple[str, ...]]]:
    """What a late subscription may hear of other federates: the port declared for its
    topic (or None), how many publishers they have on it, and the QoS terms of those it
    does not match; an error where it cannot hear them as DDS would."""
    inside = {n.get_fully_qualified_name() for n in node._process}
    outside = node._graph.publishers_outside(topic, inside)
    declared = next((n._declared[topic] for n in node._process if topic in n._declared), None)
    call = f"Node.create_subscription({topic}) {late_entities.STARTED}"
    if declared is None and outside:
        who = ", ".join(sorted({n for n, _ in outside}))
        raise UnsupportedError(
            f"{call}: {topic} is published by {who}, outside this process, "
            "and an HPRM federate hears other federates only through the ports fixed "
            "before its federation starts; create it before spin, or declare it "
            f"(hprm-ros run --late NAME={topic}:{ros_type}, NAME this node's federate)"
        )
    if declared is not None and declared.ros_type != ros_type:
        raise UnsupportedError(
            f"{call}: its type {ros_type} is not the one declared for it "
            f"({declared.ros_type}, hprm-ros run --late)"
        )
    refusals = [(who, terms) for who, fields in outside if fields is not None
                and (terms := tuple(shortfall(_offered(fields), contract)))]  # fmt: skip
    if declared is not None and refusals and len(refusals) < len(outside):
        who, terms = refusals[0]
        raise UnsupportedError(
            f"{call}: of the publishers of {topic} in other federates it matches the QoS of "
            f"some, not of others ({who}: {', '.join(terms)}), and their messages come "
            "mixed through one declared port: give them one profile"
        )
    return declared, len(outside), [terms for _, terms in refusals]


class DeclaredPort:
    """A port declared for late subscriptions (``--late TOPIC:TYPE``): an input of the
    process's first node from the start, and the subscriptions made on it since."""

    def __init__(self, node: Node, topic: str, ros_type: str) -> None:
        self.ros_type = ros_type
        self.port = Input(topic=topic, msg_type=ros_type)  # no contract: any publisher's
        self.bound: list[tuple[Node, Subscription]] = []
        self.history: History | None = None
        self._node, self._topic, self._decided = node, topic, False
        node._reactor.attach(f"late{len(node._declared)}", self.port)
        node._reactor.add_reaction(self._heard, self.port, name=f"on_late{len(node._declared)}")

    def _heard(self) -> None:
        values = self.port.value
        if not self._decided:  # the graph came at the start
            self._decided, self.history = True, self._kept()
        if self.history is not None:
            for value in values:
                if type(value) is not LivelinessChange:
                    self.history.keep(value)
        for k, (node, sub) in enumerate(self.bound):
            if not sub._destroyed:  # the first takes them as they came, others a copy
                mine = k == 0 and self.history is None
                got = values if mine else tuple(map(copied, values))
                _heard(node, sub, got)

    def _kept(self) -> History | None:
        """What the port keeps for transient-local subscriptions that come late: where
        every publisher of the topic in other federates is TRANSIENT_LOCAL (as the graph
        tells), their last messages, as many as their depths together (a port does not
        tell one publisher's from another's), for the longest of their lifespans."""
        node = self._node
        inside = {n.get_fully_qualified_name() for n in node._process}
        outside = node._graph.publishers_outside(self._topic, inside)
        offers = [resolved(fields, "pub") for _, fields in outside if fields is not None]
        if not offers or len(offers) < len(outside):  # none, or ROS 2's behind the gateway
            return None
        if any(q.durability != DurabilityPolicy.TRANSIENT_LOCAL for q in offers):
            return None
        keep_all = any(q.history == HistoryPolicy.KEEP_ALL for q in offers)
        qos = QoSProfile(
            history=HistoryPolicy.KEEP_ALL if keep_all else HistoryPolicy.KEEP_LAST,
            depth=sum(q.depth for q in offers),
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
            lifespan=max((q.lifespan for q in offers), key=lambda d: d.nanoseconds),
        )
        return History(qos, node._clock.now_ns)


def declare(node: Node, specs: list[str]) -> None:
    """The ports ``specs`` (``TOPIC:TYPE`` each, ``hprm-ros run --late``) declare, on
    ``node`` (the first of its process), before the start."""
    for spec in specs:
        topic, _, ros_type = spec.partition(":")
        messages.message_class(ros_type)  # an unknown type: its clear error, before the start
        node._declared[topic] = DeclaredPort(node, topic, ros_type)


def declared_ports(node: Node) -> set[int]:
    """``id`` of each declared port of ``node``: heard from the federation only (a
    sibling's messages come by :func:`forward`, composition leaves these ports out)."""
    return {id(d.port) for d in node._declared.values()}


def _offered(fields: list[int]) -> dict[str, int]:
    """The contract of a publisher of another federate, from its QoS in the graph."""
    return qos_compatibility.contract(resolved(fields, "pub"))


def _refused(ends: list[tuple[Node, Any, str]], terms: Any) -> None:
    """A pair DDS would not match: each end (its node, the entity, "sub" or "pub") hears
    its incompatible-QoS event."""
    kind = int(qos_compatibility.policy_kind(terms))
    for end_node, entity, side in ends:
        total = qos_compatibility.refused_peers(end_node, entity) + 1
        end = (entity, side, total, kind)
        end_node._incompatible.append(end)
        _soon(end_node, None, functools.partial(qos_compatibility.fire, end_node, [end]))


def forward(pub: Publisher, values: tuple[Any, ...]) -> None:
    """What ``pub`` published at this tag (its flush) to the late subscriptions hearing it."""
    for node, sub in pub._late:
        if not sub._destroyed:
            _heard(node, sub, tuple(map(copied, values)))


def _soon(node: Node, entity: Any, call: Callable[[], None], values: tuple[Any, ...] = ()) -> None:
    node._late_inbox.append((entity, call, values))
    node._kick_soon()


def _heard(node: Node, sub: Subscription, values: tuple[Any, ...]) -> None:
    """``values`` for late subscription ``sub``, a nanosecond on."""
    _soon(node, sub, functools.partial(sub._deliver, values), values)


def deliver(node: Node, tasks: Sleeper | None) -> Callable[[], None]:
    """The node's kick reaction: what came for its late subscriptions, in order (with
    ``tasks``, each message's callback as a task of its group)."""

    def deliver() -> None:
        node._kick.cancel()
        inbox, node._late_inbox = node._late_inbox, []
        if inbox and node._sleeper is not None:
            node._sleeper.note_callback()  # callbacks ran: for spin_once
        for entity, call, values in inbox:
            if values:  # a late subscription's messages: its deadline starts again now
                entity._arrived(values)
            if tasks is None or entity is None:
                call()
            else:
                run_in_group(tasks, entity, call)

    return deliver
