"""Reaction traces: one JSON line per reaction execution, diffable across runs.

Determinism is a claim worth checking, so a trace records exactly what must be
the same in every run with the same inputs: which reaction ran, at which tag
(relative to the start time), which of its inputs were present, and a digest
of every value it wrote. Physical timestamps, which differ run to run, sit in
separate ``phys_*`` fields so a diff can drop them::

    hprm run prog.py --fast --trace a.jsonl
    hprm run prog.py --fast --trace b.jsonl
    diff <(jq -c 'del(.phys_start_ns, .phys_end_ns)' a.jsonl) \\
         <(jq -c 'del(.phys_start_ns, .phys_end_ns)' b.jsonl)

Fields: ``seq``, ``reactor``, ``reaction``, ``tag`` ([elapsed ns, microstep]),
``present`` (names of present triggers and sources), ``written`` (name ->
16-hex-digit BLAKE2b digest of the pickled value), ``deadline_missed``,
``phys_start_ns``, ``phys_end_ns``.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import time
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hprm_core.reactor import Reaction
    from hprm_core.scheduler import Scheduler


def digest(value: Any) -> str:
    """A short, stable digest of a value (pickle is deterministic for the data
    types reactions exchange: numbers, strings, containers, numpy arrays)."""
    try:
        data = pickle.dumps(value, protocol=5)
    except Exception:
        data = repr(value).encode()
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _label(element: Any, reactor: Any) -> str:
    """``inp`` for the reaction's own elements, ``child.out`` for a child's."""
    if element.container is reactor:
        return element.name
    return f"{element.container.name}.{element.name}"


class Tracer:
    """Writes trace records; owns the file when it opened it."""

    def __init__(self, stream: IO[str], owned: bool) -> None:
        self._stream = stream
        self._owned = owned
        self._seq = 0

    @classmethod
    def open(cls, target: Any) -> Tracer:
        if hasattr(target, "write"):
            return cls(target, owned=False)
        return cls(open(target, "w", encoding="utf-8"), owned=True)

    def record(self, sched: Scheduler, r: Reaction, deadline_missed: bool, t_start: int) -> None:
        step = sched.step
        me = r.reactor
        present = [_label(t, me) for t in (*r.triggers, *r.sources) if t._step == step]
        written = {
            _label(t, me): digest(t._value)
            for t in r.effect_list
            if t._step == step and hasattr(t, "_fanout")
        }
        rec = {
            "seq": self._seq,
            "reactor": r.reactor.fqn,
            "reaction": r.name,
            "tag": list(sched.tag.elapsed(sched.start_time)),
            "present": present,
            "written": written,
            "deadline_missed": deadline_missed,
            "phys_start_ns": t_start,
            "phys_end_ns": time.time_ns(),
        }
        self._seq += 1
        self._stream.write(json.dumps(rec, separators=(",", ":")) + "\n")

    def close(self) -> None:
        if self._owned:
            self._stream.close()
        else:
            self._stream.flush()


def deterministic_view(lines: list[str]) -> list[dict[str, Any]]:
    """Trace records without their physical-time fields, for comparing runs."""
    out = []
    for line in lines:
        rec = json.loads(line)
        for k in [k for k in rec if k.startswith("phys_")]:
            del rec[k]
        out.append(rec)
    return out
