"""Causality loops across federates: refused before the federation starts.

Inside one process a zero-delay cycle through reactions is a ``CycleError`` at
assembly (:mod:`hprm_core.precedence`). Across federates no process sees the
whole reaction graph, so each describes what it knows: which of its network
inputs a network output must wait for at the same tag. A federate processing
a tag provisionally (centralized, in a zero-delay cycle) runs its reactions in
index order and blocks at the first one that reads an input not yet known; an
output's value (or absence) is known once the last reaction that may write it
has run. So output ``d`` waits for input ``c`` when ``c``'s first reader comes
no later than ``d``'s last writer. The RTI joins these descriptions with the
zero-delay connections: a cycle means every federate on it waits for the next
one forever (it used to hang the federation with no message). Lingua Franca
rejects the same programs at compile time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypedDict


class Wait(TypedDict):
    """Inside one federate, output connection ``out`` waits for input ``inp``."""

    inp: int  # connection id (network input)
    via: str  # that connection, "src port -> dst port"
    out: int  # connection id (network output)
    reader: str  # first reaction reading ``inp``
    writer: str  # last reaction that may write ``out``


def find_loop(waits: Iterable[Any]) -> str | None:
    """The first loop in the wait graph, described for a person, or None.

    ``waits``: every federate's :class:`Wait` entries, where an input and an
    output connection are the same id on both ends (the sender's output is the
    receiver's input). Only zero-delay connections may appear (``after``
    breaks a loop)."""
    succ: dict[int, list[Wait]] = {}
    for w in waits:
        succ.setdefault(int(w["inp"]), []).append(w)
    state: dict[int, int] = {}  # 1: on the current path, 2: explored
    path: list[Wait] = []

    def visit(c: int) -> list[Wait] | None:
        state[c] = 1
        for w in succ.get(c, ()):
            d = int(w["out"])
            path.append(w)
            if state.get(d) == 1:
                start = next(i for i, p in enumerate(path) if int(p["inp"]) == d)
                return path[start:]
            if d not in state:
                found = visit(d)
                if found is not None:
                    return found
            path.pop()
        state[c] = 2
        return None

    for c in sorted(succ):
        if c not in state:
            loop = visit(c)
            if loop is not None:
                hops = " ".join(f"-({w['via']})-> {_span(w)}" for w in loop)
                return (
                    f"zero-delay causality loop across federates: {hops} -> back to the start; "
                    "each federate waits for the next one at the same tag. Break it with an "
                    "`after` delay on one of these connections (or a logical action)"
                )
    return None


def _span(w: Wait) -> str:
    """The reactions a wait runs through inside its federate."""
    return w["reader"] if w["reader"] == w["writer"] else f"{w['reader']} .. {w['writer']}"
