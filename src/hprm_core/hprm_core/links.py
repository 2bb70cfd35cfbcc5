"""One federate's network connections, and what running them needs.

Worked out once, before the first tag, from the federation's structure and
the federate's assembled environment; the coordinator then only reads the
result on its per-message path:

- which connections are ours (inputs by connection id, outputs), what a
  message on each fires (its port, or a share of a port fed by several
  federates or connected on to others: :mod:`hprm_core.fan_in`), and which
  carry payloads peer to peer. Decentralized: all. Centralized: those on
  one host (Unix sockets) outside zero-delay cycles; the sender tells the
  RTI with a NOTICE (so grants and in-transit accounting are unchanged) and
  the payload goes straight to the receiver, one hop instead of two. Across
  hosts a payload goes through the RTI, which orders it before the grants
  that depend on it (on one host the kernel does that). In zero-delay
  cycles absences travel through the RTI, and messages must travel with them;
- which reaction writes each network output last, so a sender knows when
  a value is the last its reaction sends this tag;
- for inputs that may be unknown during a provisional tag (zero-delay
  cycles), the first reaction that reads each: the scheduler waits for the
  input there, not before;
- which of our zero-delay outputs wait for which zero-delay inputs at one
  tag, for the RTI's causality-loop check (:mod:`hprm_core.causality`).
"""

from __future__ import annotations

from hprm_core.causality import Wait
from hprm_core.environment import Environment
from hprm_core.fan_in import FanIn, FanInShare
from hprm_core.reactor import Port
from hprm_core.structure import FederatedProgram, FederateInfo, NetConnection


class FederateLinks:
    """The connections of federate ``me`` (see the module docstring)."""

    def __init__(self, program: FederatedProgram, me: FederateInfo, rti_address: str) -> None:
        centralized = program.coordination == "centralized"
        one_host = rti_address.startswith("unix:")
        for c in program.connections:
            c.peer_to_peer = not centralized or (one_host and not c.needs_absent)
        mine = me.id
        self.in_ports = {c.id: c for c in program.connections if c.dst_fed == mine}
        by_dst: dict[Port, list[NetConnection]] = {}
        for c in self.in_ports.values():
            assert c.dst is not None  # our own end
            by_dst.setdefault(c.dst, []).append(c)
        for port, conns in by_dst.items():
            fan_in = FanIn(port) if len(conns) > 1 else None  # several senders: fan_in.py
            for c in conns:
                c.deliver = port if fan_in is None else fan_in.share(c.src_fed)
        self.out_conns = [c for c in program.connections if c.src_fed == mine]
        self.needs_absent_out = [c for c in self.out_conns if c.needs_absent]
        self.upstream_feds = {k for k, _ in me.upstream}
        self.p2p_upstream = {c.src_fed for c in self.in_ports.values() if c.peer_to_peer}
        self.p2p_downstream = {c.dst_fed for c in self.out_conns if c.peer_to_peer}
        #: (output port, its connections, whether a value set on it is the last
        #: its reaction sends this tag), filled by analyse()
        self.senders: list[tuple[Port, list[NetConnection], bool]] = []
        #: (first reader's index, port, connection id) of each input that may be
        #: unknown during a provisional tag, in the order reactions need them
        self.gate_template: list[tuple[int, Port, int]] = []
        self.writers: dict[int, int] = {}  # connection id -> last reaction index writing it
        self.waits: list[Wait] = []

    def analyse(self, env: Environment) -> None:
        by_port: dict[Port, list[NetConnection]] = {}
        for c in self.out_conns:
            assert c.src is not None  # our own end: built in this process
            by_port.setdefault(c.src, []).append(c)
        # The network outputs each reaction may write (through its effects' fan-out).
        writes = {
            r: {p for e in r.effect_list for p in getattr(e, "_fanout", ()) if p in by_port}
            for r in env.reactions
        }
        # When every reaction that writes a port writes no other network output,
        # a value sent on it is the last its reaction sends this tag. A sender taps
        # each port a reaction may set to reach it: the network port itself, or a
        # child's port connected to it (a tap hears only the port that was set).
        self.senders = [
            (writer, conns, all(len(w) == 1 for w in writes.values() if port in w))
            for port, conns in by_port.items()
            for writer in env.ports
            if port in writer._fanout
        ]
        # A network value reaches its port and the ports connected on from it (a
        # composite federate's input feeding its children), as a local value does.
        for c in self.in_ports.values():
            dst = c.dst
            assert dst is not None
            if len(dst._fanout) > 1 or dst._delayed:
                if not isinstance(c.deliver, FanInShare):
                    c.deliver = FanIn(dst).share(c.src_fed)
                c.deliver.fan_in.onward = True
        self.gate_template = []
        for c in self.in_ports.values():
            if c.needs_absent:
                dst = c.dst
                assert dst is not None
                readers = [r.index for r in env.reactions if dst in r.readable]
                first = min(readers, default=len(env.reactions))
                self.gate_template.append((first, dst, c.id))
        self.gate_template.sort(key=lambda x: x[0])
        self.writers = {}
        for c in self.needs_absent_out:
            idx = [r.index for r, w in writes.items() if c.src in w]
            self.writers[c.id] = max(idx, default=-1)
        self.waits = self._zero_delay_waits(env)

    def _zero_delay_waits(self, env: Environment) -> list[Wait]:
        by_index = env.ordered
        waits: list[Wait] = []
        for first, port, cid in self.gate_template:
            c = self.in_ports[cid]
            if c.delay is not None or first >= len(by_index):
                continue
            for d in self.needs_absent_out:
                last = self.writers[d.id]
                if d.delay is None and last >= first:
                    waits.append(
                        Wait(
                            inp=cid,
                            via=f"{c.src_name} -> {port.fqn}",
                            out=d.id,
                            reader=by_index[first].fqn,
                            writer=by_index[last].fqn,
                        )
                    )
        return waits
