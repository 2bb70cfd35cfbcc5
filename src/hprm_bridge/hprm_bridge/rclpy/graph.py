"""Graph queries of a ported node: who publishes and subscribes what, in its federation.

A plain ROS 2 node learns the graph by DDS discovery, as it happens: at startup
``count_subscribers`` says 0 and later more, at no fixed moment. A federation's graph
is fixed before its start (the RTI matched every port by topic), so a node's queries
answer from it, the same at every tag of every run: a publisher that publishes only
while someone listens (``if pub.get_subscription_count() > 0``) behaves the same
every run.

Every ported node labels itself with its topics (``ROS_TOPICS_LABEL``, in the
federation graph every federate is shown before the start); the counts are those
topics' publishers and subscriptions among the federation's nodes, a node's own
included (as rclpy counts them), and the gateway's ports where it carries the topic
to or from plain ROS 2 (one for each: the ROS 2 side's own endpoints come and go).
Before the start (in a node's ``__init__``) and without a federation, only the node's
own endpoints are known, as under rclpy before discovery.

Services the same way: each node's servers and clients (a service's name is listed
if a node serves or calls it, as rcl lists it), and per node with the ``*_by_node``
queries; a node's six parameter services among them, as rclpy lists them (other
ported nodes call them: :mod:`hprm_bridge.rclpy.parameter_calls`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hprm_bridge.rclpy.exceptions import (
    NameValidationException,
    NodeNameNonExistentError,
    RCLError,
)
from hprm_bridge.rclpy.qos import QoSProfile
from hprm_bridge.rclpy.topic_endpoint_info import TopicEndpointInfo, endpoint_info, qos_fields
from hprm_bridge.service_ports import service_of

# [[kind, name, type(, qos)], ...] as JSON; kind: "pub", "sub" (topics, with their QoS:
# topic_endpoint_info.qos_fields), "srv", "cli" (services)
ROS_TOPICS_LABEL = "ros_topics"
TOPIC_KINDS, SERVICE_KINDS = ("pub", "sub"), ("srv", "cli")
HIDDEN = "/_hprm/"  # the topics of HPRM's ports for services and parameters

_Own = tuple[str, str, str, "list[int] | None"]  # (kind, name, type, qos)
_Endpoint = tuple[str, str, str, str, "list[int] | None"]  # (node, kind, name, type, qos)


class Graph:
    """The federation's topics as one node sees them."""

    def __init__(self, node_name: str) -> None:
        self._own: list[_Own] = []  # the node's endpoints, growing until the start
        self._node = node_name
        self._others: list[_Endpoint] = []
        self._nodes: list[str] = []

    def add(self, kind: str, name: str, ros_type: str, qos: QoSProfile | None = None) -> None:
        """One of the node's own endpoints (a topic's with its QoS), before the start."""
        self._own.append((kind, name, ros_type, None if qos is None else qos_fields(qos)))

    def add_late(self, kind: str, name: str, ros_type: str, qos: QoSProfile,
                 process: list[Graph]) -> None:  # fmt: skip
        """One of the node's endpoints made after the start (rclpy/late_subscriptions.py):
        the other nodes of its ``process`` see it too; other federates do not."""
        self.add(kind, name, ros_type, qos)
        for g in process:
            if g is not self:
                g._others.append((self._node, *self._own[-1]))

    def publishers_outside(self, topic: str, process: set[str]) -> list[tuple[str, Any]]:
        """The publishers of ``topic`` but those of the nodes of ``process`` (full names):
        (node, its QoS fields, None where unknown) of other federates' nodes, and of the
        gateway's federate for ROS 2's."""
        return [(n, q) for n, k, t, _, q in self._others
                if k == "pub" and t == topic and n not in process]  # fmt: skip

    def label(self, *siblings: Graph) -> str:
        """What the node tells the federation of itself: ``[kind, name, type(, qos)]`` per
        endpoint; with ``siblings`` (the nodes composed with it in one federate) theirs
        too, each ending with its node's full name: ``[kind, name, type, qos, node]``."""
        own: list[list[Any]] = [list(e[:3]) if e[3] is None else list(e) for e in self._own]
        own += [[*e, g._node] for g in siblings for e in g._own]
        return json.dumps(own, separators=(",", ":"))

    def learn_siblings(self, graphs: list[Graph]) -> None:
        """The other nodes of its process (rclpy/composition.py), after ``learn``."""
        for g in graphs:
            if g is not self:
                self._nodes.append(g._node)
                self._others.extend((g._node, *e) for e in g._own)

    def learn(self, graph: Any, me: str, node_label: str) -> None:
        """From the federation graph the RTI sent, before the start."""
        from hprm_bridge.porting import label_endpoints, sibling_nodes

        self._nodes, self._others = [], []
        for fed in graph.federates:
            labels = graph.labels.get(fed, {})
            if fed != me and node_label in labels:
                self._nodes.append(labels[node_label])
                self._nodes.extend(sibling_nodes(labels))
            if fed == me or ROS_TOPICS_LABEL not in labels:
                continue
            self._others.extend(label_endpoints(labels, labels.get(node_label, fed)))
        boundaries = set(getattr(graph, "boundaries", []))
        ports = {("pub", c.src, c.topic) for c in graph.connections if c.src_federate in boundaries}
        ports |= {
            ("sub", c.dst, c.topic) for c in graph.connections if c.dst_federate in boundaries
        }
        for kind, port, topic in ports:
            service = service_of(topic or "")
            if service is not None:  # the gateway stands for ROS 2's clients, or its server
                calls = (kind == "pub") == (topic or "").endswith("/request")
                gateway = (port.split(".", 1)[0], "cli" if calls else "srv", service, "", None)
                self._others.append(gateway)
            elif not (topic or "").startswith(HIDDEN):  # not a port of HPRM's own
                self._others.append((port.split(".", 1)[0], kind, topic or "", "", None))

    def _endpoints(self) -> list[_Endpoint]:
        return [(self._node, *e) for e in self._own] + self._others

    def count(self, kind: str, topic: str) -> int:
        return sum(1 for _, k, t, _, _ in self._endpoints() if k == kind and t == topic)

    def info(self, kind: str, topic: str) -> list[TopicEndpointInfo]:
        """rclpy's endpoint infos of a topic's publishers or subscriptions. The gateway's
        carry the type of the topic's other endpoints (its ports are untyped) and an
        unknown QoS: they stand for the plain ROS 2 side's, which come and go."""
        on_topic = [e for e in self._endpoints() if e[1] in TOPIC_KINDS and e[2] == topic]
        known = {e[3] for e in on_topic if e[3]}
        typed = next(iter(known)) if len(known) == 1 else ""
        infos, places = [], dict[str, int]()  # place: among the node's own, as every node sees
        for node, k, t, ty, q in on_topic:
            if k == kind:
                place = places[node] = places.get(node, -1) + 1
                fqn = node if node.startswith("/") else f"/{node}"
                infos.append(endpoint_info(fqn, k, t, ty or typed, q, place))
        return infos

    def names_and_types(
        self, kinds: tuple[str, ...], node: str | None = None
    ) -> list[tuple[str, list[str]]]:
        """rclpy's sorted ``[(name, [types])]`` of the endpoints of ``kinds`` (of one
        node's, by its fully qualified name; unknown: NodeNameNonExistentError)."""
        if node is not None and node not in (self._node, *self._nodes):
            raise NodeNameNonExistentError(
                f"cannot get names and types for nonexistent node {node}"
            )
        types: dict[str, set[str]] = {}
        for who, kind, name, ros_type, _ in self._endpoints():
            if kind in kinds and node in (None, who):
                entry = types.setdefault(name, set())
                if ros_type:
                    entry.add(ros_type)
        return [(t, sorted(types[t])) for t in sorted(types)]

    def node_names_and_namespaces(self) -> list[tuple[str, str]]:
        out = []
        for fqn in [self._node, *self._nodes]:
            ns, _, name = fqn.rpartition("/")
            out.append((name, ns or "/"))
        return out


class GraphQueries:
    """rclpy's graph queries of a Node, answered from its :class:`Graph` (``_graph``)."""

    _graph: Graph
    resolve_topic_name: Callable[[str], str]  # the Node's

    def count_publishers(self, topic_name: str) -> int:
        return self._graph.count("pub", self.resolve_topic_name(topic_name))

    def count_subscribers(self, topic_name: str) -> int:
        return self._graph.count("sub", self.resolve_topic_name(topic_name))

    def get_topic_names_and_types(self, no_demangle: bool = False) -> list[tuple[str, list[str]]]:
        return self._graph.names_and_types(TOPIC_KINDS)

    def get_service_names_and_types(self) -> list[tuple[str, list[str]]]:
        return self._graph.names_and_types(SERVICE_KINDS)

    def _by_node(self, kind: str, node_name: str, node_namespace: str) -> Any:
        if not node_namespace.startswith("/"):
            raise RCLError(f"namespace must be absolute, it must lead with a '/': {node_namespace}")
        return self._graph.names_and_types((kind,), f"{node_namespace.rstrip('/')}/{node_name}")

    def get_publisher_names_and_types_by_node(
        self, node_name: str, node_namespace: str, no_demangle: bool = False
    ) -> list[tuple[str, list[str]]]:
        return self._by_node("pub", node_name, node_namespace)  # type: ignore[no-any-return]

    def get_subscriber_names_and_types_by_node(
        self, node_name: str, node_namespace: str, no_demangle: bool = False
    ) -> list[tuple[str, list[str]]]:
        return self._by_node("sub", node_name, node_namespace)  # type: ignore[no-any-return]

    def get_service_names_and_types_by_node(
        self, node_name: str, node_namespace: str
    ) -> list[tuple[str, list[str]]]:
        return self._by_node("srv", node_name, node_namespace)  # type: ignore[no-any-return]

    def get_client_names_and_types_by_node(
        self, node_name: str, node_namespace: str
    ) -> list[tuple[str, list[str]]]:
        return self._by_node("cli", node_name, node_namespace)  # type: ignore[no-any-return]

    def get_node_names(self) -> list[str]:
        return [name for name, _ in self._graph.node_names_and_namespaces()]

    def get_node_names_and_namespaces(self) -> list[tuple[str, str]]:
        return self._graph.node_names_and_namespaces()

    def get_node_names_and_namespaces_with_enclaves(self) -> list[tuple[str, str, str]]:
        """Every node in the root enclave ``/`` (a federation has no security enclaves)."""
        return [(name, ns, "/") for name, ns in self._graph.node_names_and_namespaces()]

    def get_publishers_info_by_topic(
        self, topic_name: str, no_mangle: bool = False
    ) -> list[TopicEndpointInfo]:
        return self._graph.info("pub", self._info_topic(topic_name, no_mangle))

    def get_subscriptions_info_by_topic(
        self, topic_name: str, no_mangle: bool = False
    ) -> list[TopicEndpointInfo]:
        return self._graph.info("sub", self._info_topic(topic_name, no_mangle))

    def _info_topic(self, topic_name: str, no_mangle: bool) -> str:
        """``no_mangle``: a DDS topic name (``rt/chatter`` is ROS 2's ``/chatter``)."""
        if no_mangle:
            return topic_name[2:] if topic_name.startswith("rt/") else ""
        try:
            return self.resolve_topic_name(topic_name)
        except NameValidationException as exc:  # rclpy's query raises a plain ValueError
            raise ValueError(f"topic name {topic_name!r} is invalid: {exc}") from None
