"""A federation's structure as plain data, and its two builders.

A federation is its federates (by name, in id order) and the connections
between their ports. :class:`FederationGraph` holds exactly that, as data
that goes into JSON and back, so it can come from either of two places:

- a program whose ``@main(federated=True)`` builds every federate in one tree
  (:meth:`FederationGraph.from_main`): every process imports the same file
  and derives the same graph;
- federates started as separate executables (``ros2 launch``, or by hand),
  each knowing only its own ports once its ``__init__`` ran: each describes
  them to the RTI (:func:`describe_ports`), and the RTI, given the list of
  federate names, matches outputs to inputs by topic
  (:meth:`FederationGraph.from_descriptions`) and hands the graph back.

:class:`FederatedProgram` is the graph bound to the reactors one process
built: the federate coordinator's view (connection ids, who is upstream of
whom, which connections sit in zero-delay cycles). The RTI only ever sees
:meth:`FederationGraph.describe`, never a reactor.

Example::

    >>> graph = FederationGraph.from_descriptions(
    ...     ["camera", "detector"],
    ...     {"camera": [{"port": "image", "direction": "out", "topic": "/image",
    ...                  "msg_type": "sensor_msgs/msg/Image"}],
    ...      "detector": [{"port": "image", "direction": "in", "topic": "/image",
    ...                    "msg_type": "sensor_msgs/msg/Image"}]})
    >>> [(c.src, c.dst) for c in graph.connections]
    [('camera.image', 'detector.image')]
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from hprm_core.data_plane import link_options
from hprm_core.environment import reaction_specs
from hprm_core.errors import AssemblyError
from hprm_core.reactor import Port, Reactor
from hprm_core.tag import duration
from hprm_core.trigger import Input

COORDINATIONS = ("centralized", "decentralized")


class _Ends:
    """The federates at either end of a pair of ports named ``"federate.port"``."""

    src: str
    dst: str

    @property
    def src_federate(self) -> str:
        return self.src.split(".", 1)[0]

    @property
    def dst_federate(self) -> str:
        return self.dst.split(".", 1)[0]


@dataclass(frozen=True)
class ConnectionSpec(_Ends):
    """One connection between two federates' ports, by name (``"federate.port"``)."""

    src: str
    dst: str
    after: int | None = None  # logical delay in ns; None: no delay (not even a microstep)
    threshold: int | None = None  # out-of-band (shared memory) from this many bytes
    serialization: str | None = None  # "pickle" (default) or "safe"
    topic: str | None = None  # the topic it was matched by, for messages
    wait: bool = True  # False: its receiver never waits for it (an Input(wait=False))


@dataclass(frozen=True)
class RefusedConnection(_Ends):
    """Two ports matched by topic that stay unconnected: the output offers less than the
    input requests on ``terms`` (their contracts, :func:`shortfall`). Kept so that both
    ends can say so (a ported ROS 2 node: its incompatible-QoS events)."""

    src: str
    dst: str
    topic: str
    terms: tuple[str, ...]

    @property
    def reason(self) -> str:
        """Why, as the RTI's log and ``hprm-ros graph`` say it."""
        return f"the output offers less than the input requests: {', '.join(self.terms)}"


def shortfall(offer: dict[str, int], request: dict[str, int]) -> list[str]:
    """The terms on which ``offer`` (an output's contract) falls below ``request`` (an
    input's), in the request's order; empty: they may connect. A term only one side
    names binds nothing.

    >>> shortfall({"reliability": 0}, {"reliability": 1, "durability": 0})
    ['reliability']
    """
    return [t for t, level in request.items() if t in offer and offer[t] < level]


@dataclass
class FederationGraph:
    """Federates (names, id order) and connections: everything the RTI and
    every federate must agree on, as data."""

    federates: list[str]
    connections: list[ConnectionSpec] = field(default_factory=list)
    coordination: str = "centralized"
    #: prefix of port names in messages (the main reactor's name, where there is one)
    name: str = ""
    #: ports the RTI gave a boundary federate (the open topics), by federate name
    assigned: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: boundary federates (gateways to another middleware): what enters one of them
    #: leaves the federation, and what comes out of it came in from outside (a physical
    #: action), so its inputs never cause its outputs at the same tag. A loop through
    #: one (ported node -> gateway -> ported node) is not a zero-delay cycle.
    boundaries: list[str] = field(default_factory=list)
    #: what each federate said about itself beyond its ports (``describe_self``'s
    #: ``labels``; a ported ROS 2 node: its node name), for tools and gateways to
    #: show; never part of the structure the federates must agree on
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    #: ports matched by topic that their contracts kept apart (from_descriptions)
    refused: list[RefusedConnection] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.coordination not in COORDINATIONS:
            raise AssemblyError(
                f"coordination must be one of {COORDINATIONS}, got {self.coordination!r}"
            )
        if not self.federates:
            raise AssemblyError("a federation needs at least one federate")
        seen: set[str] = set()
        for n in self.federates:
            if not isinstance(n, str) or not n or "." in n:
                raise AssemblyError(f"federate names are non-empty, without '.', got {n!r}")
            if n in seen:
                raise AssemblyError(f"federate {n!r} is named twice")
            seen.add(n)
        for c in self.connections:
            for end in (c.src, c.dst):
                if end.split(".", 1)[0] not in seen or "." not in end:
                    raise AssemblyError(
                        f"connection {c.src} -> {c.dst}: {end!r} is not 'federate.port' "
                        f"of a federate in {self.federates}"
                    )

    # -- builders -----------------------------------------------------------------

    @classmethod
    def from_main(cls, main: Reactor, coordination: Any = "centralized") -> FederationGraph:
        """The graph of a ``@main(federated=True)`` program: its top-level
        reactors are the federates, its top-level connections theirs."""
        if reaction_specs(main):
            raise AssemblyError(
                f"{main.fqn}: the main reactor of a federated program cannot have reactions; "
                "move them into a federate"
            )
        own = [e for e in main._elements if e.name not in ("startup", "shutdown")]
        if own:
            raise AssemblyError(
                f"{main.fqn}: the main reactor of a federated program cannot own "
                f"{', '.join(e.fqn for e in own)}; move them into a federate"
            )
        if not main._children:
            raise AssemblyError(f"{main.fqn}: a federated program needs at least one federate")
        names = {id(child): child.name or f"fed{i}" for i, child in enumerate(main._children)}
        connections = []
        for src, dst, delay in main._connections:
            sf, df = names.get(id(src.container)), names.get(id(dst.container))
            if sf is None or df is None:
                raise AssemblyError(
                    f"connection {src.fqn} -> {dst.fqn}: top-level connections of a federated "
                    "program must join ports of top-level federates"
                )
            threshold, mode = main._link_options.get((src, dst), (None, None))
            link_options(threshold, mode)  # refused here, by name, if wrong
            connections.append(
                ConnectionSpec(
                    f"{sf}.{src.name}",
                    f"{df}.{dst.name}",
                    delay,
                    threshold,
                    mode,
                    wait=not isinstance(dst, Input) or dst.wait,
                )
            )
        return cls(list(names.values()), connections, coordination, main.fqn)

    @classmethod
    def from_descriptions(
        cls,
        federates: list[str],
        ports: dict[str, list[dict[str, Any]]],
        *,
        coordination: str = "centralized",
        after: dict[str, int] | None = None,
        break_cycles: bool = False,
        boundaries: list[str] | None = None,
    ) -> FederationGraph:
        """Match every output to every input of the same topic, across
        federates (a federate's own output to its own input stays inside it).
        ``after``: a logical delay per topic, e.g. to break a zero-delay cycle.
        ``break_cycles``: every other connection between two federates that
        feed each other (directly or round a longer loop) gets a one-microstep
        delay (Lingua Franca's ``after 0``). ROS nodes in a feedback loop need
        it: each node's every input may cause each of its outputs, so a loop
        without a delay could never finish a tag. The message still arrives at
        the same logical time, one microstep later. A loop through one of the
        ``boundaries`` is no such loop (see the field).
        Two ends that disagree on a topic's message type are refused, naming both;
        two whose contracts disagree (:func:`shortfall`) stay unconnected, listed in
        ``refused``."""
        missing = [n for n in federates if n not in ports]
        if missing:
            raise AssemblyError(f"no description of federate(s) {', '.join(missing)}")
        outs: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        ins: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for fed in federates:
            for p in ports[fed]:
                (outs if p["direction"] == "out" else ins).setdefault(p["topic"], []).append(
                    (fed, p)
                )
        delays = after or {}
        unknown = sorted(set(delays) - set(outs) - set(ins))
        if unknown:
            raise AssemblyError(f"after names no topic of any federate: {', '.join(unknown)}")
        connections, refused = [], []
        for topic in sorted(outs):
            for sfed, sp in outs[topic]:
                for dfed, dp in ins.get(topic, ()):
                    if sfed == dfed:
                        continue
                    st, dt = sp.get("msg_type"), dp.get("msg_type")
                    if st and dt and st != dt:
                        raise AssemblyError(
                            f"topic {topic!r}: {sfed}.{sp['port']} publishes {st} but "
                            f"{dfed}.{dp['port']} subscribes with {dt}"
                        )
                    short = shortfall(sp.get("contract", {}), dp.get("contract", {}))
                    if short:
                        src, dst = f"{sfed}.{sp['port']}", f"{dfed}.{dp['port']}"
                        refused.append(RefusedConnection(src, dst, topic, tuple(short)))
                        continue
                    connections.append(
                        ConnectionSpec(
                            f"{sfed}.{sp['port']}",
                            f"{dfed}.{dp['port']}",
                            delays.get(topic),
                            topic=topic,
                            wait=dp.get("wait", True),
                        )
                    )
        graph = cls(list(federates), connections, coordination, boundaries=list(boundaries or []),
                    refused=refused)  # fmt: skip
        if break_cycles:
            closers = graph._loop_closers()
            graph.connections = [replace(c, after=0) if i in closers else c
                                 for i, c in enumerate(connections)]  # fmt: skip
        return graph

    def _loop_closers(self) -> set[int]:
        """The connections break_cycles delays: without a delay, their
        destination reaches back to their source. A loop through a boundary
        federate is broken where it leaves the boundary (a ROS 2 message enters
        one microstep after its arrival), so that the ported nodes around it
        keep their zero-delay connections; a loop among ordinary federates on
        every connection of it."""
        ids = {n: i for i, n in enumerate(self.federates)}
        reach, ordinary_reach = self._zero_delay_reach(), self._zero_delay_reach(False)
        closers = set()
        for i, c in enumerate(self.connections):
            if c.after is not None or not c.wait:
                continue
            src, dst = ids[c.src_federate], ids[c.dst_federate]
            if c.src_federate in self.boundaries:
                closing = src in reach[dst]
            else:
                closing = c.dst_federate not in self.boundaries and src in ordinary_reach[dst]
            if closing:
                closers.add(i)
        return closers

    # -- as data ------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "federates": list(self.federates),
            "connections": [asdict(c) for c in self.connections],
            "coordination": self.coordination,
            "name": self.name,
            "assigned": self.assigned,
            "boundaries": self.boundaries,
            "labels": self.labels,
            "refused": [asdict(r) for r in self.refused],
        }

    @classmethod
    def from_json(cls, data: Any) -> FederationGraph:
        try:
            return cls(
                list(data["federates"]),
                [ConnectionSpec(**c) for c in data["connections"]],
                data["coordination"],
                data.get("name", ""),
                dict(data.get("assigned", {})),
                list(data.get("boundaries", [])),
                {str(f): dict(v) for f, v in data.get("labels", {}).items()},
                [
                    RefusedConnection(r["src"], r["dst"], r["topic"], tuple(r["terms"]))
                    for r in data.get("refused", [])
                ],
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise AssemblyError(f"malformed federation graph: {exc!r}") from None

    # -- derived --------------------------------------------------------------------

    def upstream(self) -> list[list[tuple[int, int | None]]]:
        """For each federate id: (upstream federate id, delay) per incoming
        connection it waits for (every one but those into ``Input(wait=False)``)."""
        ids = {n: i for i, n in enumerate(self.federates)}
        up: list[list[tuple[int, int | None]]] = [[] for _ in self.federates]
        for c in self.connections:
            if c.wait:
                up[ids[c.dst_federate]].append((ids[c.src_federate], c.after))
        return up

    def unwaited(self) -> list[list[int]]:
        """For each federate id: the federates it hears from on connections into
        ``Input(wait=False)`` (left out of :meth:`upstream`: nobody waits for them,
        but what comes on them may still make it send; ``grants.self_paced``)."""
        ids = {n: i for i, n in enumerate(self.federates)}
        heard: list[set[int]] = [set() for _ in self.federates]
        for c in self.connections:
            if not c.wait:
                heard[ids[c.dst_federate]].add(ids[c.src_federate])
        return [sorted(h) for h in heard]

    def _zero_delay_reach(self, through_boundaries: bool = True) -> list[set[int]]:
        """For each federate id, the ids it reaches over connections without
        ``after`` delays (itself only if it is on such a cycle). With
        ``through_boundaries=False`` a boundary federate is reached but passes
        nothing on (see ``boundaries``)."""
        ids = {n: i for i, n in enumerate(self.federates)}
        succ: list[set[int]] = [set() for _ in self.federates]
        for c in self.connections:
            if c.after is None and c.wait:  # a receiver that never waits closes no cycle
                succ[ids[c.src_federate]].add(ids[c.dst_federate])
        stops = set() if through_boundaries else {ids[b] for b in self.boundaries if b in ids}
        reach = []
        for start in range(len(succ)):
            seen: set[int] = set()
            stack = list(succ[start])
            while stack:
                x = stack.pop()
                if x not in seen:
                    seen.add(x)
                    if x not in stops:
                        stack.extend(succ[x])
            reach.append(seen)
        return reach

    def zero_delay_cycle_members(self) -> set[int]:
        """Federates on a cycle of connections without `after` delays."""
        return {i for i, r in enumerate(self._zero_delay_reach()) if i in r}

    def describe(self) -> dict[str, Any]:
        """The part of the structure the RTI needs (it never imports a program)."""
        cyclic = self.zero_delay_cycle_members()
        up, unwaited = self.upstream(), self.unwaited()
        return {
            "coordination": self.coordination,
            "federates": [
                {
                    "id": i,
                    "name": n,
                    "upstream": up[i],
                    "unwaited": unwaited[i],
                    "cycle": i in cyclic,
                    "boundary": n in self.boundaries,
                }
                for i, n in enumerate(self.federates)
            ],
        }


def describe_ports(reactor: Reactor) -> list[dict[str, Any]]:
    """A federate's self-description: its top-level ports, with the topic each
    is matched by (its name unless it says ``topic=``) and its message type."""
    described = []
    for e in reactor._elements:
        if isinstance(e, Port):
            for leaf in e.leaves():
                described.append(
                    {
                        "port": leaf.name,
                        "direction": "in" if e.kind == "input" else "out",
                        "topic": e.topic or leaf.name,
                        "msg_type": e.msg_type,
                    }
                )
                if isinstance(e, Input) and not e.wait:
                    described[-1]["wait"] = False
                if e.boundary:
                    described[-1]["boundary"] = True
                if e.contract:
                    described[-1]["contract"] = dict(e.contract)
    return described


def find_port(reactor: Reactor, name: str) -> Port:
    """A top-level port (or multiport channel, ``"out[2]"``) of ``reactor`` by name."""
    base, _, index = name.partition("[")
    for e in reactor._elements:
        if isinstance(e, Port) and e.name == base:
            if not index:
                return e
            i = int(index.rstrip("]"))
            if e.width is not None and 0 <= i < e.width:
                return e.channels[i]
    raise AssemblyError(f"{reactor.fqn} has no port {name!r}")


@dataclass
class NetConnection:
    """One connection between federates, bound to this process; its index is
    its port id. ``src``/``dst`` are the ports where this process built them
    (always its own ends), else None."""

    id: int
    src: Port | None
    dst: Port | None
    delay: int | None
    src_fed: int
    dst_fed: int
    needs_absent: bool = False  # destination may be granted provisional tags
    threshold: int = 65536  # out-of-band (shared memory) from this many bytes
    serialization: str = "pickle"  # or "safe": the receiver never unpickles
    peer_to_peer: bool = False  # payloads skip the RTI (decided per run: see FederateCoordinator)
    src_name: str = ""  # "Main.federate.port", for messages
    dst_name: str = ""
    #: what a message on it fires: its port, or the port's fan-in share where several
    #: connections end at one port (hprm_core.fan_in); set by FederateLinks
    deliver: Any = None
    wait: bool = True  # False: into an Input(wait=False), which its federate never waits for


@dataclass
class FederateInfo:
    id: int
    name: str
    reactor: Reactor | None  # None: built by another process
    upstream: list[tuple[int, int | None]] = field(default_factory=list)
    downstream: list[int] = field(default_factory=list)
    in_zero_delay_cycle: bool = False


class FederatedProgram:
    """A :class:`FederationGraph` bound to the reactors this process built
    (every federate's for a ``@main(federated=True)`` program, its own for a
    federate started on its own)."""

    def __init__(self, graph: FederationGraph, reactors: dict[str, Reactor]) -> None:
        unknown = sorted(set(reactors) - set(graph.federates))
        if unknown:
            raise AssemblyError(f"the federation has no federate {', '.join(unknown)}")
        self.graph = graph
        self.coordination = graph.coordination
        cyclic = graph.zero_delay_cycle_members()
        up = graph.upstream()
        self.federates = [
            FederateInfo(i, n, reactors.get(n), up[i], [], i in cyclic)
            for i, n in enumerate(graph.federates)
        ]
        self.by_name = {f.name: f for f in self.federates}
        prefix = f"{graph.name}." if graph.name else ""
        self.connections: list[NetConnection] = []
        for i, c in enumerate(graph.connections):
            sf, df = self.by_name[c.src_federate], self.by_name[c.dst_federate]
            src = dst = None
            if sf.reactor is not None:
                src = find_port(sf.reactor, c.src.split(".", 1)[1])
            if df.reactor is not None:
                dst = find_port(df.reactor, c.dst.split(".", 1)[1])
            types = (src.msg_type, dst.msg_type) if src is not None and dst is not None else ()
            if types and all(types) and types[0] != types[1]:
                raise AssemblyError(
                    f"connection {c.src} -> {c.dst}: {types[0]} does not match {types[1]}"
                )
            threshold, mode = link_options(c.threshold, c.serialization)
            self.connections.append(
                NetConnection(
                    i,
                    src,
                    dst,
                    c.after,
                    sf.id,
                    df.id,
                    df.in_zero_delay_cycle,
                    threshold,
                    mode,
                    src_name=prefix + c.src,
                    dst_name=prefix + c.dst,
                    wait=c.wait,
                )
            )
            if df.id not in sf.downstream:
                sf.downstream.append(df.id)

    @classmethod
    def from_main(cls, main: Reactor, coordination: Any = "centralized") -> FederatedProgram:
        """Every federate of a ``@main(federated=True)`` program, built in this process."""
        graph = FederationGraph.from_main(main, coordination)
        return cls(graph, {n: c for n, c in zip(graph.federates, main._children, strict=True)})

    def per_federate(self, options: dict[str, Any], key: str) -> dict[str, int]:
        """The ns value of option ``key`` (``stp_offset``, ``busy_poll``) for
        each federate: one duration for all, or a dict by federate name (the
        others get 0). STP must cover the latency of the whole path into a
        federate, including its upstream federates' own STP waits;
        busy-polling is worth a CPU for some federates only."""
        option = options.get(key, 0)
        if not isinstance(option, dict):
            return dict.fromkeys(self.by_name, duration(option))
        unknown = sorted(set(option) - set(self.by_name))
        if unknown:
            raise AssemblyError(
                f"{key} names no federate {', '.join(map(repr, unknown))} "
                f"(federates: {', '.join(self.by_name)})"
            )
        return {name: duration(option.get(name, 0)) for name in self.by_name}

    def describe(self) -> dict[str, Any]:
        return self.graph.describe()
