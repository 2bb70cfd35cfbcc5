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

from hprm_core.environment import Environment
from hprm_core.reactor import Port, Reaction, Reactor, describe_delay


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
