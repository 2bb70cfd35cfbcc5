"""Fan-in: one input port fed by several federates at once.

Federates started on their own are connected by topic, and a ROS 2 topic may
have many publishers: ``/rosout`` has one per node, two drivers may publish
``/scan``. Their messages for one tag reach the subscribing port as separate
network events, in whatever order the sockets deliver them. A port holds one
value per tag, so without this the last to arrive would overwrite the others:
messages lost, and which ones would change from run to run.

So a port with more than one incoming connection is fed through a
:class:`FanIn`: each connection delivers to its own :class:`FanInShare`, and at
every tag the port's value is combined from the shares present, **in the
order of the sending federates' ids**, never in arrival order:

- tuples (what a ported ROS 2 node's publisher sets: the tag's messages) are
  concatenated, so every message of every publisher is delivered;
- any other value: the last federate's value is kept and a warning, once per
  port, names the port (send tuples to receive every value).

A share arriving after its tag was processed (decentralized coordination,
too small an STP offset) takes the scheduler's tardy path like any network
value: it is delivered alone, marked tardy, never slipped into the past.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("hprm.federation")


class FanIn:
    """The shares of one input port's connections, combined per tag."""

    def __init__(self, port: Any) -> None:
        self.port = port
        self._step = -1
        self._parts: dict[int, Any] = {}  # sending federate id -> its value at this tag
        self._warned = False
        #: the port is connected on (a composite federate's input feeding its children):
        #: set once the federate is assembled (hprm_core.links); off the common path
        self.onward = False

    def share(self, source: int) -> FanInShare:
        return FanInShare(self, source)

    def deliver(self, source: int, value: Any) -> None:
        port = self.port
        step = port._sched.step
        if self._step != step:
            self._step = step
            self._parts = {}
        self._parts[source] = value
        combined = self.combined()
        port._fire(combined)
        if self.onward:
            self._go_on(combined)

    def _go_on(self, value: Any) -> None:
        """To the ports connected on from the port, as a local value goes."""
        port = self.port
        for onward in port._fanout[1:]:
            onward._tardy_step = port._tardy_step
            onward._fire(value)
        sched = port._sched
        for delay, later in port._delayed:
            sched.schedule(later, sched.tag.delay(delay), value)

    def combined(self) -> Any:
        parts = [self._parts[k] for k in sorted(self._parts)]
        if len(parts) == 1:
            return parts[0]
        if all(isinstance(p, tuple) for p in parts):
            return tuple(m for p in parts for m in p)
        if not self._warned:
            self._warned = True
            log.warning(
                "%s: several federates sent a value at one tag; only the last federate's is "
                "kept (send tuples to receive every one)",
                self.port.fqn,
            )
        return parts[-1]


class FanInShare:
    """What one connection into a fan-in port delivers to (the scheduler's
    event target). Reads and tardy bookkeeping go to the port itself."""

    __slots__ = ("fan_in", "source")

    def __init__(self, fan_in: FanIn, source: int) -> None:
        self.fan_in = fan_in
        self.source = source

    def _fire(self, value: Any) -> None:
        self.fan_in.deliver(self.source, value)

    # The scheduler's tardy path reports on, and marks, the port.
    @property
    def fqn(self) -> str:
        return str(self.fan_in.port.fqn)

    @property
    def _reactions(self) -> Any:
        return self.fan_in.port._reactions

    @property
    def _sched(self) -> Any:
        return self.fan_in.port._sched

    @property
    def _tardy_step(self) -> int:
        return int(self.fan_in.port._tardy_step)

    @_tardy_step.setter
    def _tardy_step(self, step: int) -> None:
        self.fan_in.port._tardy_step = step

    @property
    def tardy_count(self) -> int:
        return int(self.fan_in.port.tardy_count)

    @tardy_count.setter
    def tardy_count(self, n: int) -> None:
        self.fan_in.port.tardy_count = n

    @property
    def last_tardy_tag(self) -> Any:
        return self.fan_in.port.last_tardy_tag

    @last_tardy_tag.setter
    def last_tardy_tag(self, tag: Any) -> None:
        self.fan_in.port.last_tardy_tag = tag
