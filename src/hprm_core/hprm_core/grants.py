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
    unwaited: list[int]  # federates it hears from on inputs it never waits for
    cycle: bool  # on a zero-delay cycle of connections
    boundary: bool  # a gateway: what it receives never makes it send at that tag
    physical: bool  # has physical actions: its NET is capped at physical time (centralized)
    reactive: bool  # no running timer, no action: it only ever sends in answer to what it receives
    net: Tag
    ltc: Tag
    granted: Tag
    provisional: Tag
    resigned: bool
    failed: bool


def _own_earliest(f: FederateState) -> Tag:
    """The earliest tag ``f`` might send at on its own account (not in
    response to what it receives): its NET, but never before just past its LTC."""
    if f.resigned or f.failed:
        return FOREVER
    ltc = f.ltc
    after_ltc = make_tag((ltc[0], ltc[1] + 1)) if ltc > NEVER else NEVER
    return f.net if f.net > after_ltc else after_ltc


def earliest_outputs(feds: Mapping[int, FederateState]) -> dict[int, Tag]:
    """For each federate, the earliest tag at which it might still send."""
    eo: dict[int, Tag] = {f.id: _own_earliest(f) for f in feds.values()}
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
    return decide(feds)[0]


def decide(
    feds: Mapping[int, FederateState],
) -> tuple[list[tuple[int, str, Tag]], dict[int, Tag]]:
    """The grants owed now (as :func:`grants`), and what the federates still
    held back wait for (as :func:`wanted`), from one walk of the graph."""
    owed: Sequence[FederateState] = waiting(feds)
    if not owed:
        return [], {}
    eo = earliest_outputs(feds)
    out, blocked = [], []
    for f in owed:
        g = grant(f, eo)
        if g is not None:
            out.append((f.id, *g))
        else:
            blocked.append(f)
    if not blocked or not any(f.physical for f in feds.values()):
        return out, {}
    return out, wanted(feds, eo, blocked)


def self_paced(feds: Mapping[int, FederateState]) -> list[int]:
    """Federates that may grant themselves a tag once their own messages are answered.

    A federate whose every upstream federate (transitively) is reactive can
    only ever receive answers to what it sent itself: nothing upstream has a
    timer or an action that could start a message on its own. When those
    answers come at the logical time of the message that caused them (the
    connections inside the loop and back have no delay, or a microstep) and
    nothing it sends comes back at the tag it was sent (its own connections
    into the loop are delayed, at least by a microstep, as ``break_cycles``
    does at a gateway), the RTI's grant to it is a function of its own NET:
    once the RTI granted past the time of its last message, it can compute
    every later grant itself. That saves a round trip to the RTI per event
    where it hurts most: a gateway's physical action (a ROS 2 message
    arriving) in front of the ported nodes that answer it.
    (``federation.FederateCoordinator._may_process`` holds the other half.)
    Inputs nobody waits for count when asking who is upstream (what comes on
    them may make a federate send), not for the timing: they are not waited
    for with or without self-pacing."""
    paced = []
    for f in feds.values():
        loop: set[int] = set()
        stack = [*[k for k, _ in f.upstream], *f.unwaited]
        while stack:
            k = stack.pop()
            if k != f.id and k not in loop:
                loop.add(k)
                stack.extend([*[j for j, _ in feds[k].upstream], *feds[k].unwaited])
        if not loop or not all(feds[k].reactive for k in loop):
            continue
        # answers at their cause's logical time; ours into the loop a microstep later at least
        back = [d for _, d in f.upstream] + [
            d for k in loop for j, d in feds[k].upstream if j != f.id
        ]
        out = [d for k in loop for j, d in feds[k].upstream if j == f.id]
        if all(d is None or d == 0 for d in back) and all(d is not None for d in out):
            paced.append(f.id)
    return sorted(paced)


def wanted(
    feds: Mapping[int, FederateState], eo: Mapping[int, Tag], blocked: Sequence[FederateState]
) -> dict[int, Tag]:
    """For federates held back at their NET, what each one's holder upstream
    would have to promise to free them: ``{holder: tag}``, a NET past that tag
    (the smallest tag asked of each); only holders with physical actions are
    asked.

    A holder is an upstream federate whose own next event (not what it may
    receive) is what could still reach the held one. Most holders are busy
    getting there anyway; the one that is not is a federate with physical
    actions, whose NET is capped at physical time and renewed only now and
    then (``net_promise.PHYSICAL_NET_POLL_S``): told the tag, it renews as soon
    as it can promise it, so a timer downstream of a bridge's gateway is not
    held up to a renewal period late. Walks through federates that would only
    relay (their earliest output came from upstream), at most once each."""
    asked: dict[int, Tag] = {}
    for f in blocked:
        stack = [(k, d, f.net) for k, d in f.upstream]
        seen: set[int] = set()
        while stack:
            k, d, need = stack.pop()
            if k in seen or delayed(eo[k], d) > need:
                continue  # not what holds it back
            seen.add(k)
            # the latest tag k may send at so that its message lands at `need`
            at = need if not d else make_tag((need[0] - d, need[1]))
            holder = feds[k]
            if eo[k] == _own_earliest(holder):
                if holder.physical and at < asked.get(k, FOREVER):
                    asked[k] = at
            else:
                stack.extend((j, dj, at) for j, dj in holder.upstream)
    return asked
