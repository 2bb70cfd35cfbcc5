"""Publishers and subscriptions: a node's DDS writers and readers on ``rt/<topic>``.

Split from :mod:`.node` by object: a node owns the participant and the graph
announcement, an endpoint owns one writer or reader, its QoS and its QoS
events. An endpoint's DDS entity can be replaced under it (:meth:`_Endpoint._reopen`)
when its QoS follows the remote endpoints (``match_qos``, :mod:`.graph`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cyclonedds._clayer import ddspy_take, ddspy_write
from cyclonedds.core import (
    DDSException,
    InstanceState,
    Listener,
    ReadCondition,
    SampleState,
    ViewState,
    WaitSet,
)
from cyclonedds.pub import DataWriter
from cyclonedds.qos import Policy, Qos
from cyclonedds.sub import DataReader

from . import discovery, naming
from .cdr import pad4
from .errors import MalformedSampleError
from .qos import QoSProfile, policy_name, to_dds

if TYPE_CHECKING:
    from .node import Node

_ANY = SampleState.Any | ViewState.Any | InstanceState.Any
_TAKE_BATCH = 64


def _delete(entity: Any) -> None:
    """Delete a cyclonedds-python entity now instead of at garbage collection."""
    with contextlib.suppress(Exception):  # already deleted with its parent
        entity.__del__()


class _QosListener(Listener):
    """Logs and counts incompatible-QoS events, worded like rclcpp's default handlers."""

    def __init__(self, endpoint: _Endpoint) -> None:
        super().__init__()
        self._endpoint = endpoint

    def on_requested_incompatible_qos(self, reader: Any, status: Any) -> None:
        self._endpoint._incompatible(status.total_count, status.last_policy_id, is_reader=True)

    def on_offered_incompatible_qos(self, writer: Any, status: Any) -> None:
        self._endpoint._incompatible(status.total_count, status.last_policy_id, is_reader=False)


class _Endpoint:
    """What publishers and subscriptions share: topic, type, QoS, GID, QoS events."""

    def __init__(self, node: Node, msg_type: str, topic: str, qos: QoSProfile) -> None:
        self.node = node
        self.msg_type = node.types.resolve(msg_type)
        self.topic_name = naming.expand_topic_name(topic, node.name, node.namespace)
        self.dds_topic_name = naming.dds_topic_name(self.topic_name)
        self.dds_type_name = naming.dds_type_name(self.msg_type)
        self.qos = qos
        # match_qos: the profile asked for, whose reliability and durability follow
        # the remote endpoints (self.qos is what the DDS entity has now)
        self.base_qos: QoSProfile | None = None
        self.warned: set[bytes] = set()  # remote endpoints it could not match (logged)
        self.incompatible_qos_count = 0
        self.last_incompatible_policy = ""
        self._entity: Any = None

    @property
    def gid(self) -> bytes:
        """24-byte ROS 2 GID of the underlying DDS entity (see :mod:`.discovery`)."""
        return discovery.gid_from_guid(self._entity.guid)

    def _incompatible(self, total: int, policy_id: int, *, is_reader: bool) -> None:
        self.incompatible_qos_count = total
        self.last_incompatible_policy = policy_name(policy_id)
        if is_reader:
            text = (
                f"New publisher discovered on topic '{self.topic_name}', offering incompatible "
                "QoS. No messages will be received from it. "
            )
        else:
            text = (
                f"New subscription discovered on topic '{self.topic_name}', requesting "
                "incompatible QoS. No messages will be sent to it. "
            )
        # match_qos: the node replaces this endpoint when the graph shows what it
        # must ask for, and warns of what stays incompatible after that (Node._match)
        level = logging.DEBUG if self.base_qos is not None else logging.WARNING
        self.node.get_logger().log(
            level, "%sLast incompatible policy: %s", text, self.last_incompatible_policy
        )


class Publisher(_Endpoint):
    """A ROS 2 publisher; create with :meth:`Node.create_publisher`."""

    def __init__(self, node: Node, msg_type: str, topic: str, qos: QoSProfile) -> None:
        super().__init__(node, msg_type, topic, qos)
        self._listener = _QosListener(self)
        self._swap = threading.Lock()  # a publish never writes to a writer being replaced
        self._entity = self._writer(qos)
        self._ref = self._entity._ref

    def _writer(self, qos: QoSProfile) -> DataWriter:
        dds_qos = to_dds(qos) + Qos(Policy.DataRepresentation(use_cdrv0_representation=True))
        return DataWriter(
            self.node._participant, self.node._topic(self), dds_qos, listener=self._listener
        )

    def _reopen(self, qos: QoSProfile) -> None:
        """Replace the DDS writer with one of QoS `qos` (a new GID; samples the old
        one had not delivered yet are lost, as when a ROS 2 publisher restarts)."""
        writer = self._writer(qos)
        with self._swap:
            old, self._entity, self._ref, self.qos = self._entity, writer, writer._ref, qos
        _delete(old)

    def publish(self, message: Any) -> None:
        """Encode ``message`` (a ``msg_type`` object) to CDR and send it."""
        self.publish_serialized(self.node.types.encode(message, self.msg_type))

    def publish_serialized(self, cdr: bytes | bytearray | memoryview) -> None:
        """Send an already encoded sample (XCDR1 with its 4-byte header), as is.

        This is ``rmw_publish_serialized_message``: no decoding, and no copy in
        Python unless the length needs padding to a multiple of 4.
        """
        with self._swap:
            rc = ddspy_write(self._ref, pad4(cdr))
        if rc < 0:
            raise DDSException(rc, f"writing to {self.topic_name}")

    def get_subscription_count(self) -> int:
        """Matched subscriptions right now (rclpy ``Publisher.get_subscription_count``)."""
        return _matched_count(self._entity.get_matched_subscriptions)

    def wait_for_subscriptions(self, count: int = 1, timeout_sec: float = 10.0) -> bool:
        """Block until ``count`` subscriptions matched; ``False`` on timeout."""
        return _wait_for(self.get_subscription_count, count, timeout_sec)


def _wait_for(matched: Callable[[], int], count: int, timeout_sec: float) -> bool:
    deadline = time.monotonic() + timeout_sec
    while matched() < count:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def _matched_count(get_matched: Callable[[], list[int]]) -> int:
    """``len(get_matched())``, retried: cyclonedds-python asks libddsc for the
    count, allocates that many handles, asks again, and indexes past its array
    (IndexError) when a match arrived in between, e.g. while 4 clients join."""
    for _ in range(99):
        try:
            return len(get_matched())
        except IndexError:
            continue
    return len(get_matched())  # matches keep changing: let the error out


class Subscription(_Endpoint):
    """A ROS 2 subscription; create with :meth:`Node.create_subscription`.

    ``callback`` (if any) runs inside :meth:`Node.spin_once`; :meth:`take`
    pulls one message without a callback. ``raw=True`` hands the callback the
    CDR bytes instead of a decoded message.
    """

    def __init__(
        self,
        node: Node,
        msg_type: str,
        topic: str,
        callback: Callable[[Any], None] | None,
        qos: QoSProfile,
        *,
        raw: bool = False,
    ) -> None:
        super().__init__(node, msg_type, topic, qos)
        self.callback = callback
        self.raw = raw
        self.received_count = 0
        self.malformed_count = 0
        self._listener = _QosListener(self)
        self._waitset: WaitSet | None = None
        self._pending: list[Any] = []
        self._open(qos)

    def _open(self, qos: QoSProfile) -> None:
        self.qos = qos
        self._entity = DataReader(
            self.node._participant, self.node._topic(self), to_dds(qos), listener=self._listener
        )
        self._ref = self._entity._ref
        self._condition = ReadCondition(self._entity, _ANY)

    def _reopen(self, qos: QoSProfile) -> None:
        """Replace the DDS reader with one of QoS `qos`, keeping what the old one
        had received. Runs in the node's spin (the thread that takes)."""
        self._pending += self._take_ready()
        old, condition, waitset = self._entity, self._condition, self._waitset
        self.node._waitset.detach(condition)
        self._waitset = None
        for entity in (waitset, condition, old):
            if entity is not None:
                _delete(entity)
        self._open(qos)
        self.node._waitset.attach(self._condition)

    def get_publisher_count(self) -> int:
        """Matched publishers right now."""
        return _matched_count(self._entity.get_matched_publications)

    def wait_for_publishers(self, count: int = 1, timeout_sec: float = 10.0) -> bool:
        """Block until ``count`` publishers matched; ``False`` on timeout."""
        return _wait_for(self.get_publisher_count, count, timeout_sec)

    def _take_ready(self) -> list[Any]:
        """Take queued samples; decode (unless raw); drop and count malformed ones."""
        out: list[Any] = []
        while True:
            batch = ddspy_take(self._ref, _ANY, _TAKE_BATCH)
            if isinstance(batch, int):
                raise DDSException(batch, f"taking from {self.topic_name}")
            for data, info in batch:
                if not info.valid_data:
                    continue  # writer disposed / unregistered: no data in ROS terms
                if self.raw:
                    out.append(data)
                    self.received_count += 1
                    continue
                try:
                    out.append(self.node.types.decode(data, self.msg_type))
                    self.received_count += 1
                except MalformedSampleError as exc:
                    self.malformed_count += 1
                    level = logging.WARNING if self.malformed_count == 1 else logging.DEBUG
                    self.node.get_logger().log(
                        level,
                        "dropped malformed sample on '%s' (%d so far): %s",
                        self.topic_name,
                        self.malformed_count,
                        exc,
                    )
            if len(batch) < _TAKE_BATCH:
                return out

    def take(self, timeout_sec: float | None = 0.0) -> Any | None:
        """Next message (or bytes when ``raw``), waiting up to ``timeout_sec``; ``None`` if none.

        ``timeout_sec=None`` waits forever.
        """
        deadline = None if timeout_sec is None else time.monotonic() + timeout_sec
        while True:
            if not self._pending:
                self._pending = self._take_ready()
            if self._pending:
                return self._pending.pop(0)
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            if self._waitset is None:
                self._waitset = WaitSet(self.node._participant)
                self._waitset.attach(self._condition)
            wait = 1.0 if remaining is None else min(remaining, 1.0)
            self._waitset.wait(int(wait * 1e9))
