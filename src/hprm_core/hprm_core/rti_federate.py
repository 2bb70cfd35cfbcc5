"""What the RTI knows of one federate: its place in the graph, its tags, its outbox.

One record per federate, made when it joins (:meth:`Federate.joining`) and kept by the RTI
(:mod:`hprm_core.rti`), which alone changes it, from its one thread: the tags the federate
reported (NET, LTC) and was granted (TAG, PTAG), the messages forwarded to it and not yet
processed, the frames still to write to it. Grants are computed from these records
(:mod:`hprm_core.grants`). Compiled with the RTI (:mod:`hprm_core.compiled`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from hprm_core import quiescence
from hprm_core.causality import Wait
from hprm_core.tag import NEVER, Tag
from hprm_core.transport import Connection


@dataclass
class Federate:
    """One joined federate, as the RTI tracks it (see the module docstring)."""

    id: int
    name: str
    conn: Connection
    upstream: list[tuple[int, int | None]]
    unwaited: list[int]  # federates it hears from without waiting (grants.self_paced)
    cycle: bool
    boundary: bool  # its inputs never cause its outputs at a tag (a gateway)
    physical: bool  # it has physical actions: its NET is capped (hello; grants.wanted)
    reactive: bool  # no running timer, no action: sends only in answer (hello, ACTS_ALONE)
    listen: str | None
    physical_time: int
    net: Tag = NEVER
    ltc: Tag = NEVER
    granted: Tag = NEVER
    provisional: Tag = NEVER
    wanted: Tag = NEVER  # the last WANTED sent to it
    resigned: bool = False
    failed: bool = False
    stop_reply: Tag | None = None
    ready: bool = False
    outbox: bytearray = field(default_factory=bytearray)
    writing: bool = False  # registered for EVENT_WRITE (outbox not drained)
    # tags of messages forwarded to it that it has not completed yet (reactor-c's
    # in-transit queue): its next event can be no later than the earliest one
    in_transit: list[Tag] = field(default_factory=list)
    downstream: set[int] = field(default_factory=set)
    idle: quiescence.Report | None = None  # latest IDLE report (decentralized)
    sockets: list[str] = field(default_factory=list)  # its socket files (hello)
    waits: list[Wait] = field(default_factory=list)  # outputs waiting for inputs (hello)

    @classmethod
    def joining(
        cls, fid: int, desc: dict[str, Any], conn: Connection, hello: dict[str, Any]
    ) -> Federate:
        """The record of federate ``fid``, from its part of the federation's structure
        (``desc``) and its hello. An authenticated federate of this program wrote both:
        they are taken as they are, except the lists the RTI acts on by itself (socket
        files it deletes, causality it checks), kept only where well formed."""
        return cls(
            id=fid,
            name=desc["name"],
            conn=conn,
            upstream=[(k, d) for k, d in desc["upstream"]],
            unwaited=[int(k) for k in desc.get("unwaited", ())],
            cycle=bool(desc["cycle"]),
            boundary=bool(desc.get("boundary")),
            physical=bool(hello.get("physical")),
            reactive=bool(hello.get("reactive")),
            listen=hello.get("listen"),
            physical_time=int(hello.get("physical_time", time.time_ns())),
            sockets=[p for p in hello.get("sockets", ()) if isinstance(p, str)],
            waits=_waits(hello.get("waits")),
        )


def _waits(raw: Any) -> list[Wait]:
    """A hello's causality description, kept only where well formed (an
    authenticated federate of this program wrote it)."""
    if not isinstance(raw, list):
        return []
    keys = {"inp": int, "via": str, "out": int, "reader": str, "writer": str}
    return [
        w  # type: ignore[misc]
        for w in raw
        if isinstance(w, dict) and all(isinstance(w.get(k), t) for k, t in keys.items())
    ]
