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

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from cyclonedds._clayer import ddspy_write
from cyclonedds.core import DDSException, WaitSet
from cyclonedds.domain import Domain, DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.qos import Policy, Qos
from cyclonedds.topic import Topic

from . import discovery, naming
from .dds_config import (
    DdsConfig,
    check_domain_id,
    domain_failure,
    domain_id_from_env,
    generate,
    localhost_only_from_env,
)
from .endpoint import Publisher, Subscription, _delete, _Endpoint
from .errors import WireError
from .graph import Graph, TopicEndpointInfo
from .qos import QoSProfile, check_compatible, follow, follow_note, resolve
from .service import Client, Service
from .typesys import TypeRegistry, default_registry

_log = logging.getLogger("hprm_bridge.wire")


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
        self._clients: list[Client] = []
        self._spoken_for: list[discovery.NodeInfo] = []  # nodes announced for others
        self._lent: set[bytes] = set()  # gids of endpoints announced under them
        self._topics: dict[tuple[str, str], Topic] = {}
        self._graph: Graph | None = None  # remote endpoints, read once something asks
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
        self,
        msg_type: str,
        topic: str,
        qos: QoSProfile | str | int = 10,
        *,
        match_qos: bool = False,
    ) -> Publisher:
        """A publisher of ``msg_type`` (``pkg/msg/Type``) on ``topic``.

        ``qos`` is a :class:`QoSProfile`, a profile name (``"sensor_data"``,
        ``"latched"``...) or a depth, as in rclpy. ``match_qos=True``: its
        reliability and durability follow the subscriptions discovered on the
        topic (:func:`.qos.match_subscriptions`), what a bridge wants.
        """
        with self._lock:
            self._check_open()
            pub = Publisher(self, msg_type, topic, resolve(qos))
            self._publishers.append(pub)
            self._announce()
            if match_qos:
                self._follow(pub)
            return pub

    def create_subscription(
        self,
        msg_type: str,
        topic: str,
        callback: Callable[[Any], None] | None = None,
        qos: QoSProfile | str | int = 10,
        *,
        raw: bool = False,
        match_qos: bool = False,
    ) -> Subscription:
        """A subscription of ``msg_type`` on ``topic``; ``callback`` runs in :meth:`spin_once`.

        ``match_qos=True``: its reliability and durability follow the publishers
        discovered on the topic (:func:`.qos.match_publishers`), so a best-effort
        driver or a latched publisher is heard whatever its QoS.
        """
        with self._lock:
            self._check_open()
            sub = Subscription(self, msg_type, topic, callback, resolve(qos), raw=raw)
            self._subscriptions.append(sub)
            self._waitset.attach(sub._condition)
            self._announce()
            if match_qos:
                self._follow(sub)
            return sub

    def get_publishers_info_by_topic(self, topic: str) -> list[TopicEndpointInfo]:
        """Other participants' publishers on ``topic``, with their QoS (as in rclpy)."""
        return self._graph_now().publishers(self._expand(topic))

    def get_subscriptions_info_by_topic(self, topic: str) -> list[TopicEndpointInfo]:
        """Other participants' subscriptions on ``topic``, with their QoS (as in rclpy)."""
        return self._graph_now().subscriptions(self._expand(topic))

    def _expand(self, topic: str) -> str:
        return naming.expand_topic_name(topic, self.name, self.namespace)

    def _graph_now(self) -> Graph:
        with self._lock:
            self._check_open()
            if self._graph is None:
                self._graph = Graph(self._participant)
                for condition in self._graph.conditions:
                    self._waitset.attach(condition)
            elif self._graph.changed():
                self._graph.refresh()
            return self._graph

    def _follow(self, ep: _Endpoint) -> None:
        ep.base_qos = ep.qos
        self._graph_now()
        self._match(ep)

    def _match(self, ep: _Endpoint) -> None:
        """Give `ep` the QoS its remote peers call for, if it differs (a new DDS
        entity, so the GID changes: re-announced, under whichever node has it)."""
        assert self._graph is not None and ep.base_qos is not None
        is_pub = isinstance(ep, Publisher)
        graph = self._graph
        peers = graph.subscriptions(ep.topic_name) if is_pub else graph.publishers(ep.topic_name)
        want = follow(ep.qos, ep.base_qos, [p.qos_profile for p in peers], publisher=is_pub)
        if want is not None:
            self._requalify(ep, want, len(peers))
        for peer in peers:
            pub, sub = (ep.qos, peer.qos_profile) if isinstance(ep, Publisher) else (
                peer.qos_profile, ep.qos)  # fmt: skip
            ok, why = check_compatible(pub, sub)
            if not ok and peer.endpoint_gid not in ep.warned:
                ep.warned.add(peer.endpoint_gid)
                self._logger.warning(
                    "%s on '%s' cannot match a remote %s: %s",
                    _kind(ep), ep.topic_name, _kind(ep, remote=True), why,
                )  # fmt: skip

    def _requalify(self, ep: _Endpoint, want: QoSProfile, peers: int) -> None:
        old = ep.gid
        ep._reopen(want)
        ep.incompatible_qos_count, ep.last_incompatible_policy = 0, ""  # the new entity's
        new = ep.gid
        for info in self._spoken_for:
            for gids in (info.reader_gids, info.writer_gids):
                gids[:] = [new if g == old else g for g in gids]
        if old in self._lent:
            self._lent = (self._lent - {old}) | {new}
        self._announce()
        self._logger.info("%s", follow_note(isinstance(ep, Publisher), ep.topic_name, want, peers))

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

    def create_client(self, srv_type: str, request: str, response: str, name: str) -> Client:
        """A client of ``srv_type`` on ``name`` (halves as for :meth:`create_service`)."""
        with self._lock:
            self._check_open()
            client = Client(self, srv_type, request, response, name)
            self._clients.append(client)
            self._waitset.attach(client._condition)
            return client

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
        if self._graph is not None and self._graph.changed():
            with self._lock:
                self._graph.refresh()
                for ep in [*self._publishers, *self._subscriptions]:
                    if ep.base_qos is not None:
                        self._match(ep)
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
        for client in list(self._clients):
            ran += client._take()
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
            self._clients.clear()
            self._topics.clear()
            _DomainRef.release(self.domain_id)

    destroy_node = close

    def __enter__(self) -> Node:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _kind(ep: _Endpoint, *, remote: bool = False) -> str:
    """'publisher' or 'subscription': `ep`'s kind, or that of its remote peers."""
    return "publisher" if isinstance(ep, Publisher) != remote else "subscription"
