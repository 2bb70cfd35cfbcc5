"""Decentralized coordination: noticing that nothing can happen any more.

Federates that feed each other in a cycle never see an upstream resign
(each waits for the other), so without help a decentralized federation whose
cycle went quiet would wait forever. Each federate therefore tells the RTI
when it has been idle for a while (:func:`idle_report`), with the bytes it
sent on each peer link and read from each, and the RTI declares the
federation quiescent (:func:`is_quiescent`) when every live federate's
latest report is idle and, on every link, what the sender reported sending
is what the receiver reported reading: then no message is in flight and none
can be sent again (an idle federate only wakes for a message; federates
waiting for physical events, keepalive, never report).

Reports are taken at different moments, but a stale one cannot pass: a
federate that left idle after reporting did so for a message it read after
its report, so that link's counts disagree, unless its sender sent the
message after its own report, which needs a message it read after that, and
so on back to a link whose counts disagree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

#: A report as the RTI keeps it: bytes sent to each downstream federate, and
#: (bytes read, saw its RESIGN) from each upstream federate.
Report = dict[str, dict[int, Any]]


class FederateState(Protocol):
    """What the quiescence check reads of a federate (the RTI's record)."""

    id: int
    upstream: list[tuple[int, int | None]]
    resigned: bool
    failed: bool
    idle: Report | None


def idle_report(sent: Mapping[int, int], read: Mapping[int, tuple[int, bool]]) -> bytes:
    """The IDLE frame's payload: ``sent`` bytes per downstream federate,
    ``read`` (bytes, resigned) per upstream federate."""
    return json.dumps(
        {
            "sent": {str(k): n for k, n in sent.items()},
            "read": {str(k): [n, done] for k, (n, done) in read.items()},
        }
    ).encode()


def parse_report(payload: bytes | memoryview) -> Report:
    """An IDLE payload as the RTI keeps it; ValueError if malformed."""
    try:
        report = json.loads(bytes(payload))
        return {
            "sent": {int(k): int(v) for k, v in report["sent"].items()},
            "read": {int(k): (int(n), bool(d)) for k, (n, d) in report["read"].items()},
        }
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{type(exc).__name__}: {exc}") from None


def is_quiescent(feds: Mapping[int, FederateState]) -> bool:
    """Every live federate idle and, on every link between live federates,
    the bytes sent are the bytes read (a link from a federate that resigned:
    the receiver read its RESIGN, its last frame)."""
    live = [f for f in feds.values() if not (f.resigned or f.failed)]
    if not live or any(f.idle is None for f in live):
        return False
    for f in live:
        assert f.idle is not None
        for k in {k for k, _ in f.upstream}:
            up = feds[k]
            read, saw_resign = f.idle["read"].get(k, (0, False))
            if up.failed:
                continue
            if up.resigned:
                if not saw_resign:
                    return False
                continue
            assert up.idle is not None
            if up.idle["sent"].get(f.id, 0) != read:
                return False
    return True
