"""The bag player: a federate that plays a bag into the federation.

It is a boundary federate that takes the sources (as the ROS 2 gateway does
in a live run): the RTI gives it an output per topic the nodes subscribe to
and no node publishes. The recorder (:mod:`.recorder`) is another federate:
in one process with the player it would close a loop (player -> nodes ->
recorder), and in decentralized coordination a message coming back round a
loop can be late for tags the player has already moved on to.

**Playing.** A message with timestamp ``t`` enters at logical time
``start + (t - t0)``, ``t0`` the bag's first timestamp, microstep 0; all
messages of one topic with equal timestamps enter at that tag, in bag order
(a ported subscriber's callback sees them in that order). A logical action
walks the bag from one timestamp to the next, so the tags do not depend on
when the player process runs; the federation ends ``linger`` after the last
message.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Iterator
from typing import Any

from hprm_bridge.bag.source import BagError, BagMessage, BagSource
from hprm_core import LogicalAction, Output, Reactor

log = logging.getLogger("hprm.bag")


class BagPlayer(Reactor):
    def __init__(
        self, source: BagSource, ports: list[dict[str, Any]], linger: int = 100_000_000
    ) -> None:
        super().__init__()
        self.source = source
        self.linger = linger
        self._outputs: dict[str, Output] = {}
        self._iter: Iterator[BagMessage] | None = None
        self._ahead: BagMessage | None = None
        self.played = 0
        self._wall_start = 0
        self.step = LogicalAction()
        self.end = LogicalAction()
        for p in ports:  # outputs only: the RTI gives a source-taker nothing else
            if p["topic"] not in source.topics:
                log.warning("bag: %s is subscribed but not in %s: nothing to play",
                            p["topic"], source.path)  # fmt: skip
            port = Output(topic=p["topic"], msg_type=p["msg_type"])
            self.attach(p["port"], port)
            self._outputs[p["topic"]] = port
        effects = [*self._outputs.values(), self.step, self.end]
        self.add_reaction(self._start, self.startup, effects=[self.step, self.end], name="start")
        self.add_reaction(self._play, self.step, effects=effects, name="play")
        self.add_reaction(self.request_stop, self.end, name="stop")
        self.add_reaction(self._finish, self.shutdown, name="finish")

    def _finish(self) -> None:
        self.source.close()
        wall = (time.monotonic_ns() - self._wall_start) / 1e9 if self._wall_start else 0.0
        log.info("bag: played %d messages in %.3f s", self.played, wall)

    # -- playing ----------------------------------------------------------------------

    def _start(self) -> None:
        self._wall_start = time.monotonic_ns()  # for the log: how long the replay took
        self._iter = self.source.messages()
        self._ahead = next(self._iter, None)
        if self._ahead is None:
            log.warning("bag: %s holds no message", self.source.path)
            self.end.schedule(None, self.linger)
            return
        self.t0 = self._ahead.time
        self._at(self._ahead.time)

    def _at(self, t: int) -> None:
        """Schedule the step for bag time ``t`` (relative to the current tag)."""
        now = self.tag.time - self.start_time + self.t0
        delay = t - now
        if delay <= 0:  # the bag's first message: at the start tag's next microstep
            self.step.schedule(None, 0)
        else:
            self.step.schedule(None, delay)

    def _play(self) -> None:
        assert self._iter is not None
        batch: dict[str, list[Any]] = {}
        t = self._ahead.time if self._ahead is not None else None
        while self._ahead is not None and self._ahead.time == t:
            m = self._ahead
            if m.topic in self._outputs:
                batch.setdefault(m.topic, []).append(m.msg)
            self.played += 1
            self._ahead = next(self._iter, None)
        for topic, msgs in batch.items():
            self._outputs[topic].set(tuple(msgs))  # a ported port: the tag's messages
        if self._ahead is not None:
            self._at(self._ahead.time)
        else:
            self.end.schedule(None, self.linger)


def main(argv: list[str] | None = None) -> int:
    from hprm_core.federate import add_boundary_arguments, boundary_main
    from hprm_core.tag import duration

    p = argparse.ArgumentParser(prog="python -m hprm_bridge.bag.player", description=__doc__)
    p.add_argument("bag")
    p.add_argument("name")
    add_boundary_arguments(p)
    p.add_argument("--fast", action="store_true")
    p.add_argument("--stamp", action="append", default=[], metavar="TOPIC")
    p.add_argument("--linger", default="100 ms")
    args = p.parse_args(argv)
    try:  # before joining: a bag that cannot play keeps the federation from starting
        source = BagSource(args.bag, set(args.stamp))
    except BagError as exc:
        p.exit(2, f"{p.prog}: {exc}\n")
    return boundary_main(
        p,
        args,
        lambda ports, graph: BagPlayer(source, ports, duration(args.linger)),
        takes="sources",
        options={"fast": args.fast},
    )


if __name__ == "__main__":
    sys.exit(main())
