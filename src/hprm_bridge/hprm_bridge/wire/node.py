"""Node, Publisher and Subscription: ROS 2 endpoints on DDS without ROS.

A :class:`Node` owns one DDS participant (``ROS_DOMAIN_ID``, USER_DATA
``enclave=/;``) and a ``ros_discovery_info`` writer announcing its endpoints,
so ROS 2 Humble tools list it like any other node (see :mod:`.discovery`).
Publishers and subscriptions are DDS writers and readers on ``rt/<name>`` with
type ``pkg::msg::dds_::Type_`` (:mod:`.naming`) and the QoS rmw_cyclonedds
would give them (:mod:`.qos`).

Data path: messages are encoded to XCDR1 by rosbags' codec (:mod:`.cdr`) and
the bytes go straight into libddsc through cyclonedds-python's C layer
(``ddspy_write`` copies the buffer into a serdata; ``ddspy_take`` hands back
the received serdata's bytes), bypassing cyclonedds-python's per-element IDL
codec. That is what rmw_cyclonedds does with its own serdata type
(``serdata_rmw`` in ``src/serdata.cpp``) and what ``rmw_publish_serialized_message``
/ ``rmw_take_serialized_message`` expose.

Error handling, as ROS 2 does it:

* incompatible QoS between a local endpoint and a remote one is logged with
  rclcpp's wording and counted (``incompatible_qos_count``); no data flows, as
  DDS requires;
* a sample that does not decode as the subscription's type is dropped, logged
  once per subscription and counted (``malformed_count``). Structurally broken
  CDR (truncated, lengths past the end) is already rejected inside libddsc,
  which validates every incoming sample against the topic's type
  (``dds_stream_normalize``) before it is queued, so it never reaches Python.

Example::

    from hprm_bridge.wire import Node

    with Node("talker") as node:
        pub = node.create_publisher("std_msgs/msg/String", "chatter")
        pub.publish(node.types.new("std_msgs/msg/String", data="hello"))

    with Node("listener") as node:
        node.create_subscription("std_msgs/msg/String", "chatter", lambda m: print(m.data))
        node.spin(timeout_sec=5)
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

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
from cyclonedds.domain import Domain, DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.qos import Policy, Qos
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from . import discovery, naming
from .cdr import pad4
from .dds_config import (
    DdsConfig,
    check_domain_id,
    domain_failure,
    domain_id_from_env,
    generate,
    localhost_only_from_env,
)
from .errors import MalformedSampleError, WireError
from .qos import QoSProfile, policy_name, resolve, to_dds
from .service import Service
from .typesys import TypeRegistry, default_registry

_log = logging.getLogger("hprm_bridge.wire")
_ANY = SampleState.Any | ViewState.Any | InstanceState.Any
_TAKE_BATCH = 64


class _DomainRef:
    """One libddsc domain per (process, domain id), shared by nodes with one config."""

    _lock = threading.Lock()
    _open: dict[int, tuple[Domain, str, int]] = {}

    @classmethod
    def acquire(cls, domain_id: int, config: str) -> None:
        with cls._lock:
            if domain_id in cls._open:
                domain, have, refs = cls._open[domain_id]
                if have != config:
                    raise WireError(
                        f"domain {domain_id} is already open in this process with a different "
                        "DDS configuration (e.g. ROS_LOCALHOST_ONLY differs); rmw_cyclonedds "
                        "refuses this too"
                    )
                cls._open[domain_id] = (domain, have, refs + 1)
                return
            try:
                domain = Domain(domain_id, config)
            except DDSException as e:
                raise WireError(domain_failure(domain_id)) from e
            cls._open[domain_id] = (domain, config, 1)

    @classmethod
    def release(cls, domain_id: int) -> None:
        with cls._lock:
            domain, config, refs = cls._open[domain_id]
            if refs > 1:
                cls._open[domain_id] = (domain, config, refs - 1)
                return
            del cls._open[domain_id]
        _delete(domain)


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
        self.node.get_logger().warning(
            "%sLast incompatible policy: %s", text, self.last_incompatible_policy
        )


class Publisher(_Endpoint):
    """A ROS 2 publisher; create with :meth:`Node.create_publisher`."""

    def __init__(self, node: Node, msg_type: str, topic: str, qos: QoSProfile) -> None:
        super().__init__(node, msg_type, topic, qos)
        dds_qos = to_dds(qos) + Qos(Policy.DataRepresentation(use_cdrv0_representation=True))
        self._listener = _QosListener(self)
        self._entity = DataWriter(
            node._participant, node._topic(self), dds_qos, listener=self._listener
        )
        self._ref = self._entity._ref

    def publish(self, message: Any) -> None:
        """Encode ``message`` (a ``msg_type`` object) to CDR and send it."""
        self.publish_serialized(self.node.types.encode(message, self.msg_type))

    def publish_serialized(self, cdr: bytes | bytearray | memoryview) -> None:
        """Send an already encoded sample (XCDR1 with its 4-byte header), as is.

        This is ``rmw_publish_serialized_message``: no decoding, and no copy in
        Python unless the length needs padding to a multiple of 4.
        """
        rc = ddspy_write(self._ref, pad4(cdr))
        if rc < 0:
            raise DDSException(rc, f"writing to {self.topic_name}")

    def get_subscription_count(self) -> int:
        """Matched subscriptions right now (rclpy ``Publisher.get_subscription_count``)."""
        return _matched_count(self._entity.get_matched_subscriptions)

    def wait_for_subscriptions(self, count: int = 1, timeout_sec: float = 10.0) -> bool:
        """Block until ``count`` subscriptions matched; ``False`` on timeout."""
        deadline = time.monotonic() + timeout_sec
        while self.get_subscription_count() < count:
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
        self._entity = DataReader(
            node._participant, node._topic(self), to_dds(qos), listener=self._listener
        )
        self._ref = self._entity._ref
        self._condition = ReadCondition(self._entity, _ANY)
        self._waitset: WaitSet | None = None
        self._pending: list[Any] = []

    def get_publisher_count(self) -> int:
        """Matched publishers right now."""
        return _matched_count(self._entity.get_matched_publications)

    def wait_for_publishers(self, count: int = 1, timeout_sec: float = 10.0) -> bool:
        """Block until ``count`` publishers matched; ``False`` on timeout."""
        deadline = time.monotonic() + timeout_sec
        while self.get_publisher_count() < count:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

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


class Node:
    """A ROS 2 node that speaks the Humble wire protocol itself (no rclpy, no rmw).

    ``domain_id`` and ``localhost_only`` default to ``ROS_DOMAIN_ID`` and
    ``ROS_LOCALHOST_ONLY``, like any ROS 2 node; ``types`` defaults to the
    process-wide :class:`TypeRegistry` (Humble + ``AMENT_PREFIX_PATH``);
    ``dds_config`` tunes the generated Cyclone configuration (:mod:`.dds_config`).
    """

    def __init__(
        self,
        name: str,
        namespace: str = "/",
        *,
        domain_id: int | None = None,
        localhost_only: bool | None = None,
        types: TypeRegistry | None = None,
        dds_config: DdsConfig | None = None,
        enclave: str = "/",
    ) -> None:
        self.name = naming.validate_node_name(name)
        self.namespace = naming.normalize_namespace(namespace)
        self.domain_id = domain_id_from_env() if domain_id is None else check_domain_id(domain_id)
        if localhost_only is None:
            localhost_only = localhost_only_from_env()
        cfg = (dds_config or DdsConfig()).with_(localhost_only=localhost_only)
        self.dds_config = cfg
        self.types = types or default_registry()
        self._logger = logging.getLogger(f"hprm_bridge.wire.{self.name}")
        self._lock = threading.RLock()
        self._closed = False
        self._publishers: list[Publisher] = []
        self._subscriptions: list[Subscription] = []
        self._services: list[Service] = []
        self._spoken_for: list[discovery.NodeInfo] = []  # nodes announced for others
        self._lent: set[bytes] = set()  # gids of endpoints announced under them
        self._topics: dict[tuple[str, str], Topic] = {}
        _DomainRef.acquire(self.domain_id, generate(cfg, self.domain_id))
        try:
            self._participant = DomainParticipant(
                self.domain_id, qos=Qos(Policy.Userdata(discovery.user_data(enclave)))
            )
            info_type = self.types.idl_struct(discovery.DISCOVERY_TYPE)
            self._info_topic = Topic(self._participant, discovery.DISCOVERY_TOPIC, info_type)
            self._info_writer = DataWriter(
                self._participant, self._info_topic, discovery.writer_qos()
            )
            self._waitset = WaitSet(self._participant)
            self._announce()
        except BaseException:
            _DomainRef.release(self.domain_id)
            raise

    @property
    def fully_qualified_name(self) -> str:
        """``/namespace/name``."""
        return self.namespace.rstrip("/") + "/" + self.name

    @property
    def gid(self) -> bytes:
        """24-byte GID of this node's DDS participant."""
        return discovery.gid_from_guid(self._participant.guid)

    def get_logger(self) -> logging.Logger:
        """A standard :mod:`logging` logger named ``hprm_bridge.wire.<node>``."""
        return self._logger

    def _topic(self, ep: _Endpoint) -> Topic:
        key = (ep.dds_topic_name, ep.msg_type)
        topic = self._topics.get(key)
        if topic is None:
            topic = Topic(self._participant, ep.dds_topic_name, self.types.idl_struct(ep.msg_type))
            self._topics[key] = topic
        return topic

    def participant_info(self) -> discovery.ParticipantInfo:
        """What this node announces on ``ros_discovery_info``: itself, and the
        nodes it speaks for (:meth:`announce_nodes`)."""
        return discovery.ParticipantInfo(
            gid=self.gid,
            nodes=[
                discovery.NodeInfo(
                    namespace=self.namespace,
                    name=self.name,
                    reader_gids=[s.gid for s in self._subscriptions if s.gid not in self._lent],
                    writer_gids=[p.gid for p in self._publishers if p.gid not in self._lent],
                ),
                *self._spoken_for,
            ],
        )

    def announce_nodes(self, nodes: list[discovery.NodeInfo]) -> None:
        """Announce ``nodes`` as nodes of this participant, as an rclpy context
        announces every node it holds: ROS 2 tools then list them (``ros2 node
        list``) with the endpoints given (gids of this node's own readers and
        writers, which stop being listed under this node). What a gateway does
        for the nodes behind it."""
        self._check_open()
        self._spoken_for = list(nodes)
        self._lent = {g for n in nodes for g in (*n.reader_gids, *n.writer_gids)}
        self._announce()

    def _announce(self) -> None:
        raw = discovery.encode_participant_info(self.types, self.participant_info())
        rc = ddspy_write(self._info_writer._ref, raw)
        if rc < 0:
            raise DDSException(rc, "writing ros_discovery_info")

    def _check_open(self) -> None:
        if self._closed:
            raise WireError(f"node {self.fully_qualified_name} is closed")

    def create_publisher(
        self, msg_type: str, topic: str, qos: QoSProfile | str | int = 10
    ) -> Publisher:
        """A publisher of ``msg_type`` (``pkg/msg/Type``) on ``topic``.

        ``qos`` is a :class:`QoSProfile`, a profile name (``"sensor_data"``,
        ``"latched"``...) or a depth, as in rclpy.
        """
        with self._lock:
            self._check_open()
            pub = Publisher(self, msg_type, topic, resolve(qos))
            self._publishers.append(pub)
            self._announce()
            return pub

    def create_subscription(
        self,
        msg_type: str,
        topic: str,
        callback: Callable[[Any], None] | None = None,
        qos: QoSProfile | str | int = 10,
        *,
        raw: bool = False,
    ) -> Subscription:
        """A subscription of ``msg_type`` on ``topic``; ``callback`` runs in :meth:`spin_once`."""
        with self._lock:
            self._check_open()
            sub = Subscription(self, msg_type, topic, callback, resolve(qos), raw=raw)
            self._subscriptions.append(sub)
            self._waitset.attach(sub._condition)
            self._announce()
            return sub

    def create_service(
        self,
        srv_type: str,
        request: str,
        response: str,
        name: str,
        callback: Callable[[Service, Any], None],
    ) -> Service:
        """A server of ``srv_type`` (``pkg/srv/Name``, its ``.srv`` halves given
        as ``request`` and ``response`` text) on ``name``; see :mod:`.service`."""
        with self._lock:
            self._check_open()
            srv = Service(self, srv_type, request, response, name, callback)
            self._services.append(srv)
            self._waitset.attach(srv._condition)
            return srv

    def destroy_publisher(self, publisher: Publisher) -> None:
        """Remove a publisher (and from ``ros_discovery_info``)."""
        with self._lock:
            self._publishers.remove(publisher)
            _delete(publisher._entity)
            self._announce()

    def destroy_subscription(self, subscription: Subscription) -> None:
        """Remove a subscription (and from ``ros_discovery_info``)."""
        with self._lock:
            self._subscriptions.remove(subscription)
            self._waitset.detach(subscription._condition)
            if subscription._waitset is not None:
                _delete(subscription._waitset)
            _delete(subscription._condition)
            _delete(subscription._entity)
            self._announce()

    def spin_once(self, timeout_sec: float | None = None) -> int:
        """Wait up to ``timeout_sec`` for data, run callbacks; return how many ran."""
        self._check_open()
        wait = 3600.0 if timeout_sec is None else max(0.0, timeout_sec)
        self._waitset.wait(int(wait * 1e9))
        ran = 0
        for sub in list(self._subscriptions):
            items = sub._pending + sub._take_ready()
            sub._pending = []
            for item in items:
                if sub.callback is not None:
                    sub.callback(item)
                    ran += 1
                else:
                    sub._pending.append(item)
        for srv in list(self._services):
            ran += srv._serve()
        return ran

    def spin(
        self, timeout_sec: float | None = None, until: Callable[[], bool] | None = None
    ) -> None:
        """Run callbacks until ``until()`` is true, ``timeout_sec`` passed, or the node closes."""
        deadline = None if timeout_sec is None else time.monotonic() + timeout_sec
        while not self._closed and not (until is not None and until()):
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return
            self.spin_once(0.1 if remaining is None else min(remaining, 0.1))

    def close(self) -> None:
        """Delete every DDS entity of the node; remote nodes see it leave at once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            _delete(self._participant)  # deletes readers, writers, topics, waitsets with it
            for ep in [*self._publishers, *self._subscriptions]:
                ep._entity = None
            self._publishers.clear()
            self._subscriptions.clear()
            self._services.clear()
            self._topics.clear()
            _DomainRef.release(self.domain_id)

    destroy_node = close

    def __enter__(self) -> Node:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
