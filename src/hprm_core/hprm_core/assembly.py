"""The RTI's first phase for federates started on their own: collect each
one's self-description, match the ports by topic, hand the graph back.

A launch description knows the federate names and how to start each node,
but not the ports: a ported node creates them in its ``__init__``. So each
federate process, once built, connects and describes its ports (see
:func:`hprm_core.federate.describe_self`); when every expected name has, the
:class:`Assembly` derives the :class:`~hprm_core.structure.FederationGraph`
(or refuses it: two ends of a topic that disagree on its type are named)
and answers every describer with it. The federates then join as federates
of any program do, and the RTI checks their structure against this graph.
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any

from hprm_core.errors import AssemblyError
from hprm_core.structure import COORDINATIONS, FederationGraph
from hprm_core.transport import Connection, Frame
from hprm_core.trigger import is_contract

log = logging.getLogger("hprm.rti")

_PORT_KEYS = {"port": str, "direction": str, "topic": str}
# how many labels a federate may give; their size is bounded by the hello's
# (transport.MAX_HELLO): a ported node labels itself with its endpoints, ~60 characters each
MAX_LABELS = 16


#: what a boundary federate may take: the directions of the ports it gets
BOUNDARY_KINDS = {"both": {"in", "out"}, "sources": {"out"}, "sinks": {"in"}}


def open_ports(ports: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Ports for a boundary federate (a gateway to another middleware): an
    output for every topic these federates subscribe to and none publishes,
    an input for every topic one publishes and none subscribes to; and the
    same for every topic a port asks to share with the boundary
    (``boundary=True``) whatever its other ends. A topic whose message type no
    end names is left out (nothing could carry it)."""
    pubs: dict[str, str | None] = {}
    subs: dict[str, str | None] = {}
    shared_in: set[str] = set()  # subscribed topics the boundary may publish too
    shared_out: set[str] = set()  # published topics the boundary may subscribe to too
    for described in ports.values():
        for p in described:
            side = pubs if p["direction"] == "out" else subs
            side[p["topic"]] = side.get(p["topic"]) or p.get("msg_type")
            if p.get("boundary"):
                (shared_out if p["direction"] == "out" else shared_in).add(p["topic"])
    found = []
    for i, topic in enumerate(sorted((set(subs) - set(pubs)) | shared_in)):
        if subs[topic]:
            found.append({"port": f"into{i}", "direction": "out", "topic": topic,
                          "msg_type": subs[topic]})  # fmt: skip
    for i, topic in enumerate(sorted((set(pubs) - set(subs)) | shared_out)):
        if pubs[topic]:
            found.append({"port": f"outof{i}", "direction": "in", "topic": topic,
                          "msg_type": pubs[topic]})  # fmt: skip
    return found


class Assembly:
    """Self-descriptions of the federates named ``names`` (in id order)."""

    def __init__(
        self,
        names: list[str],
        *,
        coordination: str = "centralized",
        after: dict[str, int] | None = None,
        break_cycles: bool = False,
    ) -> None:
        if coordination not in COORDINATIONS:
            raise AssemblyError(
                f"coordination must be one of {COORDINATIONS}, got {coordination!r}"
            )
        FederationGraph(list(names), [], coordination)  # names checked once, here
        self.names = list(names)
        self.coordination = coordination
        self.after = dict(after or {})
        self.break_cycles = break_cycles
        self._ports: dict[str, list[dict[str, Any]]] = {}
        self._waiting: list[Connection] = []  # describers, until answered
        # federates that take the open topics: name -> "both", "sources" (the
        # topics fed into the federation) or "sinks" (those leaving it)
        self._boundaries: dict[str, str] = {}
        self._labels: dict[str, dict[str, str]] = {}
        self.graph: FederationGraph | None = None

    def check(self, hello: dict[str, Any]) -> str | None:
        """Why a description is refused at the handshake, or None."""
        name = hello.get("name")
        if name not in self.names:
            return f"no federate {name!r} in this federation (federates: {', '.join(self.names)})"
        if name in self._ports or self.graph is not None:
            return f"federate {name} already described itself"
        ports = hello.get("describe")
        if not isinstance(ports, list) or not all(
            isinstance(p, dict)
            and all(isinstance(p.get(k), t) for k, t in _PORT_KEYS.items())
            and p["direction"] in ("in", "out")
            and isinstance(p.get("msg_type"), (str, type(None)))
            and isinstance(p.get("wait", True), bool)
            and isinstance(p.get("boundary", False), bool)
            and is_contract(p.get("contract", {}))
            for p in ports
        ):
            return f"federate {name}: malformed port description"
        labels = hello.get("labels", {})
        if not (
            isinstance(labels, dict)
            and len(labels) <= MAX_LABELS
            and all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items())
        ):
            return f"federate {name}: malformed labels (at most {MAX_LABELS} strings to strings)"
        takes = hello.get("open_topics")
        if takes:
            if takes not in BOUNDARY_KINDS:
                return f"federate {name}: malformed open_topics ({takes!r})"
            for other, kind in self._boundaries.items():
                if other != name and BOUNDARY_KINDS[kind] & BOUNDARY_KINDS[takes]:
                    return (
                        f"federate {name} asks for the open topics ({takes}), which {other} "
                        f"already takes ({kind})"
                    )
        return None

    def add(self, conn: Connection, hello: dict[str, Any]) -> FederationGraph | None:
        """Keep one description; once all are in, the graph (sent by
        :meth:`answer`). Raises AssemblyError (naming both ends of a mismatch)
        when there is none."""
        name = hello["name"]
        if name in self._ports or self.graph is not None:  # raced past check()
            conn.send(Frame.REJECT, f"federate {name} already described itself".encode())
            conn.close()
            return None
        self._ports[name] = list(hello["describe"])
        self._labels[name] = dict(hello.get("labels", {}))
        if hello.get("open_topics"):
            self._boundaries[name] = hello["open_topics"]
        self._waiting.append(conn)
        log.info("federate %s described itself (%d/%d)", name, len(self._ports), len(self.names))
        if len(self._ports) < len(self.names):
            return None
        assigned: dict[str, list[dict[str, Any]]] = {}
        others = {n: p for n, p in self._ports.items() if n not in self._boundaries}
        for boundary, kind in self._boundaries.items():
            assigned[boundary] = [
                p for p in open_ports(others) if p["direction"] in BOUNDARY_KINDS[kind]
            ]
            self._ports[boundary] += assigned[boundary]
            log.info(
                "federate %s takes the open topics: %s",
                boundary,
                ", ".join(f"{p['topic']} ({p['direction']})" for p in assigned[boundary]) or "none",
            )
        self.graph = FederationGraph.from_descriptions(
            self.names,
            self._ports,
            coordination=self.coordination,
            after=self.after,
            break_cycles=self.break_cycles,
            boundaries=sorted(self._boundaries),
        )
        self.graph.assigned = assigned
        self.graph.labels = {n: v for n, v in self._labels.items() if v}
        for r in self.graph.refused:
            log.info("  %s -x- %s (topic %s): not connected, %s", r.src, r.dst, r.topic,
                     r.reason)  # fmt: skip
        for c in self.graph.connections:
            delay = (
                ""
                if c.after is None
                else f", after {c.after} ns"
                if c.after
                else ", 1 microstep later"
            )
            log.info("  %s -> %s (topic %s%s)", c.src, c.dst, c.topic, delay)
        return self.graph

    def answer(self) -> None:
        """Hand the graph to every federate waiting for it. The RTI calls this
        once it will admit their joins: a federate may join the moment it has it."""
        assert self.graph is not None
        self._answer(Frame.GRAPH, json.dumps(self.graph.to_json()).encode())

    def missing(self) -> list[str]:
        return [n for n in self.names if n not in self._ports]

    def fail(self, reason: str) -> None:
        """Tell every federate still waiting for the graph why there is none."""
        self._answer(Frame.FAILED, reason.encode())

    def _answer(self, kind: Frame, payload: bytes) -> None:
        waiting, self._waiting = self._waiting, []
        for conn in waiting:
            with contextlib.suppress(OSError):
                conn.sock.settimeout(1.0)
                conn.send(kind, payload)
            conn.close()
