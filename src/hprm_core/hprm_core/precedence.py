"""The precedence graph: which reaction must run before which, at one tag.

Computed once at assembly. Edges come from (a) declaration order inside one
reactor and (b) data: a reaction that may write a port precedes every reaction
that is triggered by, or reads, that port or anything it reaches through
zero-delay connections. Actions and delayed connections add no edge: their
effect lands at a later tag.

Each reaction gets a *level* (longest path from a root) and a unique *index*
ordering by (level, reactor order, declaration order). The scheduler runs the
reactions triggered at a tag in index order, so the same inputs always give the
same execution sequence, whatever order events arrived in. Reactions on one
level are mutually independent (a parallel scheduler could run them at once).

A cycle means no such order exists: it is reported with every reaction and
port on it, e.g.::

    zero-delay cycle: Main.a.fwd -(Main.a.out -> Main.b.inp)-> Main.b.fwd
      -(Main.b.out -> Main.a.inp)-> Main.a.fwd; add an `after` delay or an action
"""

from __future__ import annotations

from collections.abc import Sequence

from hprm_core.errors import CycleError
from hprm_core.reactor import Reaction

# An edge's label says why it exists: the port that carries the dependency, or
# None for declaration order inside a reactor.
Edge = tuple[Reaction, Reaction, str | None]


def assign_levels(reactions: Sequence[Reaction], edges: Sequence[Edge]) -> list[Reaction]:
    """Set ``level`` and ``index`` on every reaction; return them in index order."""
    succ: dict[Reaction, list[tuple[Reaction, str | None]]] = {r: [] for r in reactions}
    indeg = dict.fromkeys(reactions, 0)
    seen: set[tuple[Reaction, Reaction]] = set()
    for a, b, label in edges:
        if (a, b) in seen:
            continue
        seen.add((a, b))
        succ[a].append((b, label))
        indeg[b] += 1

    for r in reactions:
        r.level = 0
    ready = [r for r in reactions if indeg[r] == 0]
    done = 0
    while ready:
        nxt: list[Reaction] = []
        for r in ready:
            done += 1
            for b, _ in succ[r]:
                b.level = max(b.level, r.level + 1)
                indeg[b] -= 1
                if indeg[b] == 0:
                    nxt.append(b)
        ready = nxt
    if done != len(reactions):
        raise CycleError(_describe_cycle([r for r in reactions if indeg[r] > 0], succ))

    position = {r: i for i, r in enumerate(reactions)}  # reactor order, then declaration
    ordered = sorted(reactions, key=lambda r: (r.level, position[r]))
    for i, r in enumerate(ordered):
        r.index = i
    return ordered


def _describe_cycle(
    stuck: list[Reaction], succ: dict[Reaction, list[tuple[Reaction, str | None]]]
) -> str:
    """Every stuck reaction has a stuck predecessor, so walking predecessors
    must revisit a reaction: the walk from there on is a cycle."""
    stuck_set = set(stuck)
    pred: dict[Reaction, tuple[Reaction, str | None]] = {}
    for a in stuck:
        for b, label in succ[a]:
            if b in stuck_set and b not in pred:
                pred[b] = (a, label)
    walk: list[Reaction] = []
    index: dict[Reaction, int] = {}
    r = stuck[0]
    while r not in index:
        index[r] = len(walk)
        walk.append(r)
        r = pred[r][0]
    loop = list(reversed(walk[index[r] :]))  # in dependency order
    parts = [loop[0].fqn]
    for reaction in loop[1:] + loop[:1]:
        via = pred[reaction][1]
        parts.append(f"-({via or 'declaration order'})-> {reaction.fqn}")
    reactors = sorted({x.reactor.fqn for x in loop})
    return (
        "zero-delay cycle: "
        + " ".join(parts)
        + f" (reactors: {', '.join(reactors)}); break it with an `after` delay on a "
        "connection or a logical action"
    )
