"""Tag advance grants: the RTI's arithmetic for centralized coordination.

Pure functions of what the RTI knows about each federate (its next event tag,
NET; its latest tag complete, LTC; whether it is finished) and of the
connection graph with its ``after`` delays, kept apart from the sockets so
that they can be checked on their own (``test_grants.py``: chains, diamonds,
cycles with and without delays, finished upstreams), as reactor-c tests its
``rti_common``.

The question for a federate that wants to process tag ``g`` (its NET): can a
message tagged ``<= g`` still reach it? A federate ``k`` may still send at its
*earliest output* tag: its NET, or just past its LTC, or earlier if something
it receives makes it react, so earliest outputs are relaxed along the
connections to a fixed point. A message from ``k`` over a connection delayed
by ``d`` lands at ``eo[k] + d``; the minimum over a federate's upstream is its
earliest incoming message tag (EIMT). ``g < EIMT``: nothing can arrive at or
before ``g`` any more, grant ``g`` (TAG). ``g == EIMT`` on a zero-delay cycle:
the only message that could come is one the federate itself causes at ``g``,
so it may process ``g`` provisionally (PTAG) and wait for its inputs there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from hprm_core.tag import FOREVER, NEVER, Tag, delayed, make_tag


class FederateState(Protocol):
    """What the grant arithmetic reads of a federate (the RTI's record)."""

    id: int
    upstream: list[tuple[int, int | None]]  # (federate, after delay in ns or None)
    cycle: bool  # on a zero-delay cycle of connections
    boundary: bool  # a gateway: what it receives never makes it send at that tag
    net: Tag
    ltc: Tag
    granted: Tag
    provisional: Tag
    resigned: bool
    failed: bool


def earliest_outputs(feds: Mapping[int, FederateState]) -> dict[int, Tag]:
    """For each federate, the earliest tag at which it might still send."""
    eo: dict[int, Tag] = {}
    for f in feds.values():
        if f.resigned or f.failed:
            eo[f.id] = FOREVER
        else:
            ltc = f.ltc
            after_ltc = make_tag((ltc[0], ltc[1] + 1)) if ltc > NEVER else NEVER
            eo[f.id] = f.net if f.net > after_ltc else after_ltc
    # A federate may also send in response to what it receives: relax along
    # connections until nothing changes (at most N rounds).
    for _ in range(len(feds)):
        changed = False
        for f in feds.values():
            if f.resigned or f.failed or f.boundary:
                continue
            for k, d in f.upstream:
                via = delayed(eo[k], d)
                if via < eo[f.id]:
                    eo[f.id] = via
                    changed = True
        if not changed:
            break
    return eo


def waiting(feds: Mapping[int, FederateState]) -> list[FederateState]:
    """Live federates with an upstream whose NET is past their grant: only
    they can be owed a grant (when none is, the graph walk is skipped)."""
    return [
        f
        for f in feds.values()
        if f.upstream and f.net > f.granted and not (f.resigned or f.failed)
    ]


def grant(f: FederateState, eo: Mapping[int, Tag]) -> tuple[str, Tag] | None:
    """``("TAG", g)``, ``("PTAG", g)`` or None (nothing new) for ``f``'s NET ``g``."""
    g = f.net
    eimt = min((delayed(eo[k], d) for k, d in f.upstream), default=FOREVER)
    # Nothing can ever reach f (everything upstream finished or is idle with
    # nothing that could wake it): grant even FOREVER, so that an idle f
    # finishes too instead of waiting for a grant forever.
    if eimt > g or eimt >= FOREVER:
        return ("TAG", g)
    if eimt == g and f.cycle and g > f.provisional:
        return ("PTAG", g)
    return None


def grants(feds: Mapping[int, FederateState]) -> list[tuple[int, str, Tag]]:
    """Every grant owed now, as (federate id, "TAG" | "PTAG", tag)."""
    owed: Sequence[FederateState] = waiting(feds)
    if not owed:
        return []
    eo = earliest_outputs(feds)
    out = []
    for f in owed:
        g = grant(f, eo)
        if g is not None:
            out.append((f.id, *g))
    return out
