"""Draw a program as Mermaid or Graphviz dot: the dataflow diagram of the HPRM
paper's Fig. 5, generated from the assembled program rather than drawn by hand,
so it cannot drift from the code.

Reactors are clusters; inside each, its reactions (in execution order, with
their level) and its timers and actions; ports are nodes on the cluster;
edges show connections (labelled with ``after`` delays), triggers (reaction
<- trigger) and effects (reaction -> port/action).

Example::

    hprm graph examples/bank.py                 # Mermaid (GitHub renders it)
    hprm graph examples/bank.py --format dot | dot -Tpng > bank.png
"""

from __future__ import annotations

import re
from typing import Any

from hprm_core.environment import Environment
from hprm_core.reactor import Port, Reaction, Reactor, describe_delay
from hprm_core.structure import FederationGraph


def _id(fqn: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", fqn)


def _label(el: object) -> str:
    name = getattr(el, "name", "?")
    kind = getattr(el, "kind", "")
    return f"{name} ({kind})" if kind and not isinstance(el, Port) else str(name)


def render(top: Reactor, fmt: str = "mermaid") -> str:
    """Assemble ``top`` (rejecting invalid programs) and return its diagram."""
    env = Environment(top, fast=True)
    if fmt == "mermaid":
        return _mermaid(env)
    if fmt == "dot":
        return _dot(env)
    raise ValueError(f"unknown diagram format {fmt!r}: use 'mermaid' or 'dot'")


def _reaction_label(r: Reaction) -> str:
    extra = f" deadline {describe_delay(r.deadline).removeprefix('after ')}" if r.deadline else ""
    return f"{r.position}: {r.name} [L{r.level}]{extra}"


def _edges(env: Environment) -> list[tuple[str, str, str, str]]:
    """(from, to, label, style) with style in conn/trigger/effect/source."""
    out: list[tuple[str, str, str, str]] = []
    for src, dst, delay in env.connections:
        out.append((_id(src.fqn), _id(dst.fqn), describe_delay(delay), "conn"))
    for r in env.reactions:
        rid = _id(r.fqn)
        for t in r.triggers:
            if t.name in ("startup", "shutdown"):
                continue
            out.append((_id(t.fqn), rid, "", "trigger"))
        for t in r.sources:
            out.append((_id(t.fqn), rid, "", "source"))
        for t in r.effect_list:
            out.append((rid, _id(t.fqn), "", "effect"))
    return out


def _elements(reactor: Reactor) -> list[object]:
    els: list[object] = []
    for el in reactor._elements:
        if el.name in ("startup", "shutdown"):
            continue
        els.extend(el.leaves() if isinstance(el, Port) else [el])
    return els


def _mermaid(env: Environment) -> str:
    lines = ["flowchart LR"]

    def emit(reactor: Reactor, indent: str) -> None:
        lines.append(
            f'{indent}subgraph {_id(reactor.fqn)}["{reactor.name or type(reactor).__name__}'
            f' : {type(reactor).__name__}"]'
        )
        for el in _elements(reactor):
            shape = ("([", "])") if isinstance(el, Port) else ("{{", "}}")
            lines.append(f'{indent}  {_id(el.fqn)}{shape[0]}"{_label(el)}"{shape[1]}')
        for r in reactor._reactions:
            lines.append(f'{indent}  {_id(r.fqn)}["{_reaction_label(r)}"]')
        for child in reactor._children:
            emit(child, indent + "  ")
        lines.append(f"{indent}end")

    emit(env.main, "  ")
    arrows = {"conn": "==>", "trigger": "-->", "source": "-.->", "effect": "-->"}
    for a, b, label, style in _edges(env):
        arrow = arrows[style]
        lines.append(f"  {a} {arrow}|{label}| {b}" if label else f"  {a} {arrow} {b}")
    return "\n".join(lines)


def _dot(env: Environment) -> str:
    lines = ["digraph hprm {", "  rankdir=LR;", "  compound=true;", "  node [fontsize=10];"]

    def emit(reactor: Reactor, indent: str) -> None:
        lines.append(f"{indent}subgraph cluster_{_id(reactor.fqn)} {{")
        lines.append(
            f'{indent}  label="{reactor.name or type(reactor).__name__} : '
            f'{type(reactor).__name__}";'
        )
        for el in _elements(reactor):
            shape = "ellipse" if isinstance(el, Port) else "diamond"
            lines.append(f'{indent}  {_id(el.fqn)} [label="{_label(el)}", shape={shape}];')
        for r in reactor._reactions:
            lines.append(f'{indent}  {_id(r.fqn)} [label="{_reaction_label(r)}", shape=box];')
        for child in reactor._children:
            emit(child, indent + "  ")
        lines.append(f"{indent}}}")

    emit(env.main, "  ")
    styles = {"conn": "bold", "trigger": "solid", "source": "dashed", "effect": "solid"}
    for a, b, label, style in _edges(env):
        attrs = f"style={styles[style]}" + (f', label="{label}"' if label else "")
        lines.append(f"  {a} -> {b} [{attrs}];")
    lines.append("}")
    return "\n".join(lines)


def render_federation(
    graph: FederationGraph, ports: dict[str, list[dict[str, Any]]], fmt: str = "text"
) -> str:
    """A federation assembled from self-descriptions (``hprm-ros graph``): one
    box per federate, one edge per connection labelled with its topic, message
    type and delay; topics with no other end inside the federation are shown
    too, as what the federation publishes or waits for from outside (a ROS 2
    bridge's business), unless no end names its type: as for a boundary
    (:func:`hprm_core.assembly.open_ports`), nothing outside could carry it.
    ``fmt``: text, mermaid or dot."""
    types: dict[str, str] = {}  # any end that names the type names it for the topic
    for ps in ports.values():
        for p in ps:
            if p.get("msg_type"):
                types.setdefault(p["topic"], p["msg_type"])
    edges = []
    for c in graph.connections:
        delay = ""
        if c.after is not None:
            delay = f" ({describe_delay(c.after)})" if c.after else " (+1 microstep)"
        edges.append((c.src_federate, c.dst_federate, c.topic or c.dst, delay))
    # matched by topic, kept apart by their contracts: shown as such, not as loose ends
    refused = [(r.src_federate, r.dst_federate, r.topic, r.reason) for r in graph.refused]
    linked_out = {(c.src_federate, c.topic) for c in graph.connections}
    linked_out |= {(a, topic) for a, _, topic, _ in refused}
    linked_in = {(c.dst_federate, c.topic) for c in graph.connections}
    linked_in |= {(b, topic) for _, b, topic, _ in refused}
    loose = []  # (federate, topic, "out" | "in") with no other end in the federation
    for fed in graph.federates:
        for p in ports.get(fed, ()):
            key = (fed, p["topic"])
            linked = key in (linked_out if p["direction"] == "out" else linked_in)
            if not linked and p["topic"] in types:
                loose.append((fed, p["topic"], p["direction"]))
    loose = sorted(set(loose))

    def typ(topic: str) -> str:
        return types.get(topic) or "any type"

    if fmt == "text":
        lines = [f"federation of {len(graph.federates)} ({graph.coordination}): "
                 + ", ".join(graph.federates)]  # fmt: skip
        for a, b, topic, delay in edges:
            lines.append(f"  {a} -> {b}  {topic} [{typ(topic)}]{delay}")
        for a, b, topic, why in refused:
            lines.append(f"  {a} -x- {b}  {topic} [{typ(topic)}] (not connected: {why})")
        both = {(fed, topic) for fed, topic, d in loose if d == "in"}
        both &= {(fed, topic) for fed, topic, d in loose if d == "out"}
        for fed, topic, d in loose:
            where = (
                "published, no subscriber inside"
                if d == "out"
                else "subscribed, no publisher inside"
            )
            if (fed, topic) in both:  # a node hearing itself, or a process's nodes each other
                where += " but itself"
            lines.append(f"  {fed} {'->' if d == 'out' else '<-'} {topic} [{typ(topic)}] ({where})")
        return "\n".join(lines)
    if fmt == "mermaid":
        lines = ["flowchart LR"]
        lines += [f'  {_id(f)}["{f}"]' for f in graph.federates]
        for a, b, topic, delay in edges:
            lines.append(f'  {_id(a)} -->|"{topic}<br/>{typ(topic)}{delay}"| {_id(b)}')
        for a, b, topic, why in refused:
            lines.append(f'  {_id(a)} --x|"{topic}<br/>not connected: {why}"| {_id(b)}')
        for fed, topic, d in loose:
            t = _id("topic" + topic)
            lines.append(f'  {t}(["{topic}<br/>{typ(topic)}"])')
            lines.append(f"  {_id(fed)} -.-> {t}" if d == "out" else f"  {t} -.-> {_id(fed)}")
        return "\n".join(lines)
    if fmt == "dot":
        lines = ["digraph federation {", "  rankdir=LR;", "  node [shape=box, fontsize=10];"]
        lines += [f'  {_id(f)} [label="{f}"];' for f in graph.federates]
        for a, b, topic, delay in edges:
            lines.append(f'  {_id(a)} -> {_id(b)} [label="{topic}\\n{typ(topic)}{delay}"];')
        for a, b, topic, why in refused:
            lines.append(f'  {_id(a)} -> {_id(b)} [label="{topic}\\nnot connected: {why}", '
                         "style=dotted, arrowhead=tee];")  # fmt: skip
        for fed, topic, d in loose:
            t = _id("topic" + topic)
            lines.append(f'  {t} [label="{topic}\\n{typ(topic)}", shape=ellipse, style=dashed];')
            pair = (fed, t) if d == "out" else (t, fed)
            lines.append(f"  {_id(pair[0])} -> {_id(pair[1])} [style=dashed];")
        lines.append("}")
        return "\n".join(lines)
    raise ValueError(f"unknown diagram format {fmt!r} (text, mermaid, dot)")
