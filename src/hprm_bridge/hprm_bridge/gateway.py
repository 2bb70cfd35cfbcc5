"""The gateway: one federate that carries topics between a federation and plain ROS 2.

Gradual porting means ported nodes live beside plain ROS 2 nodes (drivers,
rviz, nodes not ported yet). The gateway owns the ROS 2 endpoints:

- a topic **into** the federation (ROS 2 -> federation; subscribed inside,
  published by nobody inside) is a subscription on the ROS 2 side whose
  messages enter the federation through a physical action: each gets the tag
  of its arrival (``arrival`` tag policy), then goes out on an output port
  of that topic, which the RTI connects to the ported subscribers;
- a topic **out of** the federation (published inside, subscribed by nobody
  inside) is an input port whose messages the gateway publishes to ROS 2.

Physical actions keep the federation's guarantees: in centralized
coordination the RTI does not grant tags past what the gateway may still
produce, as for any federate with physical inputs. Messages keep their
content and type; numeric arrays arriving from ROS 2 are decoded once, as
numpy views, and cross to ported nodes by shared-memory reference.

- the parameter services of each ported node (``ros2 param``) are served here
  and carried to the node as tagged calls (:mod:`hprm_bridge.parameter_services`);
  the nodes' ``/rosout`` lines leave as any topic does;
- services cross both ways (:mod:`hprm_bridge.service_ports`): every ported
  node's service is served here to ROS 2 (``ros2 service call``, plain rclpy
  clients), whether or not ported nodes call it too (its ports are
  ``boundary=True``), each call entering the federation at its arrival as the
  parameter services' do; a service that ported nodes call and none of them
  serves is called here on ROS 2, each answer entering at its arrival. A
  call made before a ROS 2 server is matched waits for one (rclpy would drop it).

Backends (:mod:`hprm_bridge.backends`): real rclpy where it is importable and
knows the types carried, else the ROS-free wire client (:mod:`hprm_bridge.wire`),
so the gateway works with or without a ROS 2 install (``--backend``, or
``$HPRM_BRIDGE_BACKEND``, chooses). Plain ROS 2 nodes see a node named
``hprm_gateway`` and each ported node under its own name.

Which topics: the gateway is the federation's boundary federate
(:func:`hprm_core.federate.run_boundary`); it describes no ports itself, and
the RTI, once every node has described its own, gives it one port per topic
they leave open (all of them, or those a bridge config lets through:
:mod:`hprm_bridge.bridge_config`). ``hprm-ros run --bridge`` and the launch
action's ``bridge=True`` add it; by hand::

    python -m hprm_bridge.gateway ros2_gateway --rti ADDR --federation ID
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from hprm_bridge import messages, parameter_services, raw_message, service_ports
from hprm_bridge.backends import KINDS
from hprm_bridge.bridge_config import (
    LATENESS,
    TAG_POLICIES,
    BridgeConfig,
    check_lateness,
    late_handler,
    lateness_arg,
    tag_policy_arg,
    with_flags,
)
from hprm_bridge.liveliness_change import LivelinessChange
from hprm_bridge.porting import ROS_NODE_LABEL, endpoint_nodes, sibling_nodes
from hprm_bridge.wire.errors import MalformedSampleError
from hprm_bridge.wire.qos import QOS_DEFAULT, Durability, QoSProfile
from hprm_core import Input, Output, PhysicalAction, Reactor

log = logging.getLogger("hprm.gateway")

DIRECTIONS = ("in", "out")
BACKEND_ENV = "HPRM_BRIDGE_BACKEND"  # the gateway's backend when --backend is not given


@dataclass(frozen=True)
class BridgedTopic:
    """One topic the gateway carries: ``in`` (ROS 2 -> federation) or ``out``."""

    topic: str
    msg_type: str
    direction: str
    port: str = ""  # the gateway's port for it (the RTI names it)
    depth: int = 10
    qos: QoSProfile | None = None  # None: follow the plain ROS 2 endpoints discovered
    tag_policy: str = "arrival"  # into the federation: "arrival" or "header_stamp"
    stamp_offset: int = 0  # header_stamp: tag = header.stamp + this (ns)
    lateness: str = "drop"  # header_stamp, a tag behind arrival: drop, clamp, module:function
    bridged: bool = True  # False: its port stays (the federation's shape), nothing crosses

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"topic {self.topic}: direction must be 'in' or 'out'")
        if not self.topic.startswith("/"):
            raise ValueError(f"topic {self.topic!r}: give the absolute name (/chatter)")
        if self.msg_type.count("/") != 2:
            raise ValueError(f"topic {self.topic}: msg_type must be pkg/msg/Name")
        if self.tag_policy not in TAG_POLICIES:
            raise ValueError(f"topic {self.topic}: tag policy must be one of {TAG_POLICIES}")
        try:
            check_lateness(self.lateness)
        except ValueError as exc:
            raise ValueError(f"topic {self.topic}: {exc}") from None


def bridged_topics(
    ports: list[dict[str, Any]], config: BridgeConfig | None = None
) -> list[BridgedTopic]:
    """The topics of the ports the RTI gave the gateway (hprm_core's open
    topics): a gateway output feeds the federation (``in``), an input
    leaves it (``out``); `config` says which cross and how."""
    config = config or BridgeConfig()
    flip = {"out": "in", "in": "out"}
    found = []
    for p in ports:
        rule = config.rule(p["topic"])
        found.append(BridgedTopic(p["topic"], p["msg_type"], flip[p["direction"]], p["port"],
                                  depth=rule.depth, qos=rule.profile(), tag_policy=rule.tag_policy,
                                  stamp_offset=rule.offset_ns, lateness=rule.lateness or "drop",
                                  bridged=_bridged(config, p["topic"])))  # fmt: skip
    return found


def _bridged(config: BridgeConfig, topic: str) -> bool:
    # ros2 param's way in: a bridge config's patterns choose topics, not these
    if parameter_services.is_parameter_topic(topic):
        return True
    service = service_ports.service_of(topic)
    return config.bridged(topic if service is None else service)


class Gateway(Reactor):
    """The gateway's reactor: an output port per inbound topic (fed by a
    physical action), an input port per outbound one."""

    def __init__(
        self,
        topics: list[BridgedTopic],
        node_name: str = "hprm_gateway",
        behind: dict[str, dict[str, Any]] | None = None,
        backend: str = "auto",
    ) -> None:
        super().__init__()
        self.topics = list(topics)
        # The ported nodes, announced to ROS 2 as nodes of the gateway's participant:
        # federate -> {"node": "/ns/name", "writes": [topic, ...], "reads": [...]}
        self.behind = dict(behind or {})
        self.node_name = node_name
        self.backend_kind = backend  # hprm_bridge.backends: auto, rclpy or wire
        self._backend: Any = None
        self._stop = threading.Event()
        self._spinner: threading.Thread | None = None
        self._publishers: dict[str, Callable[[Any], None]] = {}  # topic -> publish
        self._pending: dict[int, Callable[..., None]] = {}  # calls from ROS 2: token -> reply
        self._clients: dict[str | None, Callable[..., None]] = {}  # service -> send (_client)
        self._calls = 0
        self._actions: list[tuple[BridgedTopic, PhysicalAction]] = []
        self._late_handlers = {t.topic: late_handler(t.lateness) for t in self.topics
                               if t.lateness not in LATENESS}  # fmt: skip
        self.received = 0
        self.published = 0
        self.late: dict[str, int] = {}  # header_stamp topics: late messages, by topic
        self._batches: dict[tuple[str, int], list[Any]] = {}  # (topic, tag time) -> messages
        self._lock = threading.Lock()
        self.add_reaction(self._start, self.startup, name="start")
        for i, t in enumerate(self.topics):
            if t.direction == "out" and _carries_replies(t):
                inp = Input(topic=t.topic, msg_type=t.msg_type)
                self.attach(t.port or f"outof{i}", inp)
                answer = self._answer_service if _is_service(t) else self._answer
                self.add_reaction(answer(inp), inp, name=f"answer{i}")
            elif t.direction == "in":
                port = Output(topic=t.topic, msg_type=t.msg_type)
                action = PhysicalAction()
                self.attach(t.port or f"into{i}", port)
                self.attach(f"arrived{i}", action)
                self.add_reaction(self._forward(t, action, port), action, effects=[port],
                                  name=f"enter{i}")  # fmt: skip
                self._actions.append((t, action))
            else:
                inp = Input(topic=t.topic, msg_type=t.msg_type)
                self.attach(t.port or f"outof{i}", inp)
                if t.bridged and _is_service(t):  # ported nodes' calls to a ROS 2 service
                    self.add_reaction(self._call(t, inp), inp, name=f"call{i}")
                elif t.bridged:  # else its messages end here
                    self.add_reaction(self._publisher_of(t, inp), inp, name=f"leave{i}")
        self.add_reaction(self._finish, self.shutdown, name="finish")

    def _start(self) -> None:
        from hprm_bridge.backends import open_backend

        for t in self.topics:
            if not t.bridged:
                log.info("gateway: %s is open but not bridged (the bridge config)", t.topic)
        crossing = [t for t in self.topics if t.bridged]
        if not crossing:
            log.info("gateway: no topic is left open to ROS 2")
            return
        types = [t.msg_type for t in crossing if not parameter_services.is_parameter_topic(t.topic)]
        if len(types) < len(crossing):
            types += [parameter_services.srv_type(name) for name in parameter_services.SERVICES]
        self._backend = open_backend(self.backend_kind, self.node_name, types, loop=self)
        for t in crossing:
            if (
                t.direction == "out"
                and not parameter_services.is_parameter_topic(t.topic)
                and not _is_service(t)
            ):
                qos = _qos_of(t)
                self._publishers[t.topic] = self._backend.publisher(
                    t.msg_type, t.topic, qos or QOS_DEFAULT.with_(depth=t.depth),
                    match=qos is None, owners=self._owners(t.topic, "writes"),
                )  # fmt: skip
        for t, action in self._actions:
            if not t.bridged:
                continue
            node = parameter_services.node_of(t.topic)
            if node is not None:
                self._serve_parameters(node, action)
                continue
            if _is_service(t) and t.topic.endswith("/request"):
                self._serve(t, action)
                continue
            if _is_service(t):  # the replies of a ROS 2 service ported nodes call
                self._clients[service_ports.service_of(t.topic)] = self._client(t, action)
                continue
            self._backend.subscription(
                t.msg_type, t.topic, self._arrival(t, action),
                t.qos or QOS_DEFAULT.with_(depth=t.depth), match=t.qos is None,
                owners=self._owners(t.topic, "reads"),
            )  # fmt: skip
        # ros2 node list / node info: each ported node, with the endpoints kept for it
        # (and the other nodes of a composed federate: rclpy/composition.py)
        nodes = [n for b in self.behind.values() for n in (b["node"], *b.get("siblings", ()))]
        self._backend.announce(sorted(nodes))
        self._spinner = threading.Thread(target=self._spin, name="gateway-ros2", daemon=True)
        self._spinner.start()
        log.info("gateway (%s): %s", self._backend.name,
                 ", ".join(f"{t.topic} ({t.direction})" for t in crossing))  # fmt: skip

    def _owners(self, topic: str, ends: str) -> list[str]:
        """The ported nodes (full names) that write or read ``topic`` through the gateway
        (of a composed federate, the nodes of it that have the topic)."""
        found = {n for b in self.behind.values() if topic in b.get(ends, ())
                 for n in b.get("owners", {}).get(ends, {}).get(topic) or [b["node"]]}  # fmt: skip
        return sorted(found)

    def _serve_parameters(self, node: str, action: PhysicalAction) -> None:
        """The six parameter services of ported node ``node``: each call enters
        the federation at its arrival (:mod:`hprm_bridge.parameter_services`)."""

        def call(service: str) -> Any:
            def called(reply: Callable[..., None], fields: Any) -> None:
                with self._lock:
                    self._calls += 1
                    token = self._calls
                    self._pending[token] = reply
                action.schedule((token, service, fields))

            return called

        for name in parameter_services.SERVICES:
            srv_type = parameter_services.srv_type(name)
            request, response = _halves(messages.service_class(srv_type))
            self._backend.service(srv_type, request, response, f"{node}/{name}", call(name),
                                  owner=node)  # fmt: skip

    def _serve(self, t: BridgedTopic, action: PhysicalAction) -> None:
        """A ported node's service, to ROS 2: each call enters the federation at its
        arrival as a call of the gateway's (:mod:`hprm_bridge.service_ports`)."""
        srv = messages.service_class(t.msg_type)
        servers = self._owners(t.topic, "reads")
        if len(servers) > 1:
            log.warning("gateway: %s serve %s; the first answer to each call is ROS 2's",
                        " and ".join(servers), service_ports.service_of(t.topic))  # fmt: skip

        def called(reply: Callable[..., None], fields: Any) -> None:
            with self._lock:
                self._calls += 1
                token = self._calls
                self._pending[token] = reply
            action.schedule((_CALLER, token, _message(srv.Request, fields)))

        self._backend.service(t.msg_type, *_halves(srv), service_ports.service_of(t.topic),
                              called, owner=servers[0])  # fmt: skip

    def _client(self, t: BridgedTopic, action: PhysicalAction) -> Callable[..., None]:
        """A ROS 2 service that ported nodes call and none of them serves: each answer
        enters the federation at its arrival, as a topic's message does."""
        service = service_ports.service_of(t.topic)
        assert service is not None
        srv = messages.service_class(t.msg_type)
        callers = self._owners(service_ports.request_topic(service), "writes")
        call = self._backend.client(t.msg_type, *_halves(srv), service, owner=callers[0])

        def send(caller: str, seq: int, request: Any) -> None:
            fields = {f: getattr(request, f) for f, _ in request._hprm_fields}
            call(fields, lambda answer: action.schedule(
                (caller, seq, _message(srv.Response, answer))))  # fmt: skip

        return send

    def _call(self, t: BridgedTopic, inp: Input) -> Callable[[], None]:
        def call() -> None:
            send = self._clients.get(service_ports.service_of(t.topic))
            for caller, seq, request in inp.value:
                if send is not None:
                    send(caller, seq, request)

        return call

    def _answer(self, inp: Input) -> Any:
        """A node's parameter services' replies, ``(token, fields)``, to their callers."""

        def answer() -> None:
            for token, fields in inp.value:
                self._reply(token, fields)

        return answer

    def _answer_service(self, inp: Input) -> Any:
        """A ported service's replies, ``(caller, token, response)``, to the ROS 2 callers
        (the gateway's calls: ``caller`` is :data:`_CALLER`)."""

        def answer() -> None:
            for caller, token, response in inp.value:
                if caller == _CALLER:
                    self._reply(token, {f: getattr(response, f) for f, _ in response._hprm_fields})

        return answer

    def _reply(self, token: int, fields: dict[str, Any]) -> None:
        with self._lock:
            reply = self._pending.pop(token, None)  # None: another server answered first
        if reply is not None:
            reply(**fields)

    def _arrival(self, t: BridgedTopic, action: PhysicalAction) -> Any:
        """The DDS thread's callback: the message's tag per the topic's policy.

        ``arrival``: its arrival time. ``header_stamp``: ``header.stamp`` plus
        the offset, so that replayed or sensor-stamped data keeps its own time
        and order (two messages arriving out of stamp order are processed in
        stamp order). A stamp whose tag would lie behind the arrival is late:
        the federation may already be past it, so it is dropped and counted
        (``drop``) or delivered at the arrival (``clamp``), never slipped in
        before what was already processed."""

        def arrived(data: bytes) -> None:  # the message's CDR, as the backend took it
            self.received += 1
            try:
                if t.tag_policy == "arrival":  # forwarded as it came (raw_message)
                    action.schedule(raw_message.forwarded(t.msg_type, data))
                    return
                msg = raw_message.decode(t.msg_type, data)
            except MalformedSampleError as exc:  # the rmw checks framing, not content
                log.warning("gateway: dropped a malformed sample on %s: %s", t.topic, exc)
                return
            stamp = msg.header.stamp
            offset = self.clock_offset  # ROS stamps are on this host's clock, tags on the RTI's
            at = stamp.sec * 1_000_000_000 + stamp.nanosec + t.stamp_offset + offset
            with self._lock:
                if at > time.time_ns() + offset:  # ties: one event, messages in arrival order
                    batch = self._batches.setdefault((t.topic, at), [])
                    batch.append(msg)
                    if len(batch) == 1:
                        action.schedule_at((t.topic, at), at)
                    return
                self.late[t.topic] = self.late.get(t.topic, 0) + 1
            if t.lateness not in LATENESS:  # a handler (bridge_config.late_handler)
                msg = self._late_handlers[t.topic](t.topic, msg, at, time.time_ns() + offset)
                if msg is not None:
                    action.schedule(msg)
            elif t.lateness == "clamp":
                action.schedule(msg)

        return arrived

    def _spin(self) -> None:
        while not self._stop.is_set():
            self._backend.spin_once(0.05)

    def _forward(self, t: BridgedTopic, action: PhysicalAction, port: Output) -> Any:
        def enter() -> None:
            value = action.value
            if t.tag_policy == "header_stamp" and isinstance(value, tuple):  # a stamp's batch
                with self._lock:
                    port.set(tuple(self._batches.pop(value)))
            else:
                port.set((value,))  # as a ported node's port: the tag's messages

        return enter

    def _publisher_of(self, t: BridgedTopic, inp: Input) -> Any:
        def leave() -> None:
            publish = self._publishers.get(t.topic)
            if publish is None:  # the start failed (and said why): the stop is under way
                return
            for msg in inp.value:  # a ported node's port carries its publishes of one tag
                if type(msg) is LivelinessChange:  # not a message: ROS 2 sees its own
                    continue
                publish(msg)
                self.published += 1

        return leave

    def _finish(self) -> None:
        self._stop.set()
        if self._spinner is not None:
            self._spinner.join(timeout=5)
        if self._backend is not None:
            self._backend.close()
        log.info("gateway: %d messages in, %d out", self.received, self.published)
        for topic, n in sorted(self.late.items()):
            log.warning("gateway: %d late message(s) on %s (stamp + offset behind arrival)", n,
                        topic)  # fmt: skip


_CALLER = "ros2_gateway#ros2"  # the gateway's calls, as service_ports names callers


def _is_service(t: BridgedTopic) -> bool:
    return service_ports.service_of(t.topic) is not None


def _carries_replies(t: BridgedTopic) -> bool:
    """Replies to calls the gateway carried in: a node's parameter services', or a
    ported service's (to its ROS 2 callers; its ported callers take theirs directly)."""
    if parameter_services.is_parameter_topic(t.topic):
        return True
    return _is_service(t) and t.bridged and t.topic.endswith("/reply")


def _halves(srv: Any) -> tuple[str, str]:
    """The ``.msg`` text of a service's request and response fields (what backends take)."""
    from hprm_bridge.wire.typesys import default_registry

    types = default_registry()
    return (types.msg_definition(srv.Request._hprm_type),
            types.msg_definition(srv.Response._hprm_type))  # fmt: skip


def _message(cls: type, fields: Any) -> Any:
    """A request or response of HPRM's class from the fields a backend took."""
    msg = cls()
    for name, value in vars(fields).items():
        setattr(msg, name, messages.adopt(value))
    return msg


# Topics every rclpy node publishes, with the QoS rcl gives them (Humble's
# rcl_qos_profile_rosout_default and rmw_qos_profile_parameter_events), so late joiners
# such as rqt_console still get the last 10 s of log lines.
_ROS_QOS = {
    "/rosout": QoSProfile(depth=1000, durability=Durability.TRANSIENT_LOCAL, lifespan=10.0),
    "/parameter_events": QoSProfile(depth=1000),
}


def _qos_of(t: BridgedTopic) -> QoSProfile | None:
    """A published topic's fixed QoS: rcl's for its own topics, else the config's
    (None: the gateway's publisher follows the subscriptions it discovers)."""
    return _ROS_QOS.get(t.topic, t.qos)


def nodes_behind(graph: Any, me: str) -> dict[str, dict[str, Any]]:
    """Every other federate, with its ROS 2 node name (``/ns/name``: what its
    label says, else its federate name) and the open topics it writes or reads
    through ``me``."""
    behind: dict[str, dict[str, Any]] = {
        f: {"node": graph.labels.get(f, {}).get(ROS_NODE_LABEL, f"/{f}"), "writes": [],
            "reads": [], "siblings": sibling_nodes(graph.labels.get(f, {})),
            "owners": endpoint_nodes(graph.labels.get(f, {}))}
        for f in graph.federates if f != me
    }  # fmt: skip
    for c in graph.connections:
        if c.dst_federate == me and c.src_federate in behind:
            behind[c.src_federate]["writes"].append(c.topic)
        elif c.src_federate == me and c.dst_federate in behind:
            behind[c.dst_federate]["reads"].append(c.topic)
    return behind


def main(argv: list[str] | None = None) -> int:
    from hprm_core.federate import add_boundary_arguments, boundary_main

    p = argparse.ArgumentParser(prog="python -m hprm_bridge.gateway", description=__doc__)
    p.add_argument("name", help="the gateway's federate name")
    add_boundary_arguments(p)
    p.add_argument("--timeout")
    p.add_argument("--config", metavar="FILE", help="a bridge config (YAML: allow, deny, "
                   "lateness, topics; hprm_bridge.bridge_config)")  # fmt: skip
    p.add_argument("--config-yaml", metavar="TEXT", help="the same, as YAML text")
    p.add_argument("--tag-policy", action="append", default=[], type=tag_policy_arg,
                   metavar="TOPIC=header_stamp[:OFFSET]",
                   help="tag the topic's messages by header.stamp (+ OFFSET) instead of "
                   "their arrival")  # fmt: skip
    p.add_argument(
        "--lateness",
        type=lateness_arg,
        metavar="drop|clamp|MODULE:FUNCTION",
        help="header_stamp: a message whose tag would lie behind its arrival (default: drop)",
    )
    p.add_argument("--backend", choices=KINDS, default=os.environ.get(BACKEND_ENV, "auto"),
                   help="how the gateway reaches ROS 2: real rclpy, the ROS-free wire client, "
                   f"or auto (rclpy when it can; default, or ${BACKEND_ENV})")  # fmt: skip
    args = p.parse_args(argv)
    try:
        config = with_flags(
            BridgeConfig.load(args.config)
            if args.config
            else BridgeConfig.from_dict(yaml.safe_load(args.config_yaml), "--config-yaml")
            if args.config_yaml
            else BridgeConfig(),
            args.tag_policy,
            args.lateness,
        )
    except ValueError as exc:
        p.error(str(exc))
    return boundary_main(
        p,
        args,
        lambda ports, graph: Gateway(
            bridged_topics(ports, config),
            behind=nodes_behind(graph, args.name),
            backend=args.backend,
        ),
        options={"timeout": args.timeout or None},
    )


if __name__ == "__main__":
    sys.exit(main())
