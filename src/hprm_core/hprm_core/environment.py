"""Assembly: turn a tree of reactor instances into a runnable program.

Like reactor-c's environment, this is the one place that knows the whole
program: every reactor, reaction and connection. Assembly

1. walks the containment tree in declaration order (which fixes the
   tie-break between independent reactions, so it is deterministic);
2. binds each reaction's declared names to elements and checks them;
3. resolves connections into, for each port, the ports it reaches through
   zero-delay connections (they share its value at the same tag) and the
   delayed destinations (scheduled at a later tag);
4. builds the precedence graph and assigns levels (:mod:`hprm_core.precedence`),
   rejecting zero-delay cycles.

Example::

    env = Environment(Main(), fast=True, timeout="1 s")
    env.run()
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from hprm_core.coordinator import Coordinator
from hprm_core.errors import AssemblyError
from hprm_core.precedence import Edge, assign_levels
from hprm_core.reactor import (
    Bank,
    Input,
    Output,
    PhysicalAction,
    Port,
    Reaction,
    ReactionSpec,
    Reactor,
    _Element,
    _Trigger,
)
from hprm_core.scheduler import Scheduler
from hprm_core.tag import Duration
from hprm_core.trace import Tracer


def walk(top: Reactor) -> Iterator[Reactor]:
    """Every reactor in the tree, container before contents, declaration order."""
    yield top
    for child in top._children:
        yield from walk(child)


def reaction_specs(reactor: Reactor) -> list[ReactionSpec]:
    """A reactor's reactions in their precedence order inside it: those its
    class declares (base classes first, definition order), then those added to
    the instance (:meth:`Reactor.add_reaction`) in the order added."""
    return [*_class_specs(type(reactor)), *reactor._added_reactions]


def _class_specs(cls: type) -> list[ReactionSpec]:
    specs: list[ReactionSpec] = []
    seen: set[str] = set()
    for klass in reversed(cls.__mro__):
        for name, attr in vars(klass).items():
            if isinstance(attr, ReactionSpec):
                if name in seen:  # an override keeps the base's position
                    specs = [attr if s.name == name else s for s in specs]
                else:
                    specs.append(attr)
                    seen.add(name)
    return specs


class Environment:
    """An assembled program and the scheduler that runs it.

    ``fast`` skips waiting for physical time (simulation, tests); ``timeout``
    stops at that logical time after start; ``keepalive`` keeps running with
    an empty event queue (default: when the program has physical actions, since
    events may still come from outside); ``on_error`` is ``"stop"`` (a raising
    reaction stops the program cleanly and :meth:`run` raises
    :class:`~hprm_core.errors.ReactionError`) or ``"continue"`` (log and go on);
    ``trace`` is a path or file object for a JSON-lines reaction trace;
    ``coordinator`` decides when tags may advance (a federation's; default:
    alone in this process); ``busy_poll`` (a duration, default 0: off) makes
    the scheduler spin that long before it sleeps, so a message or a timer
    needs no wake-up by the kernel, at the price of a CPU kept busy while
    idle (see :meth:`Scheduler._spin`).
    """

    def __init__(
        self,
        main: Reactor,
        *,
        fast: bool = False,
        timeout: Duration = None,
        keepalive: bool | None = None,
        on_error: str = "stop",
        trace: Any = None,
        coordinator: Coordinator | None = None,
        busy_poll: Duration = 0,
    ) -> None:
        if not isinstance(main, Reactor):
            raise AssemblyError(f"the main program must be a Reactor instance, got {main!r}")
        if "_elements" not in main.__dict__:
            raise AssemblyError(f"{type(main).__name__}.__init__ did not call super().__init__()")
        if on_error not in ("stop", "continue"):
            raise ValueError(f"on_error must be 'stop' or 'continue', got {on_error!r}")
        self.main = main
        self.reactors: list[Reactor] = list(walk(main))
        self.triggers: list[_Trigger] = []
        self.ports: list[Port] = []
        self.edges: list[Edge] = []
        self.connections: list[tuple[Port, Port, int | None]] = []
        for reactor in self.reactors:
            if "_elements" not in reactor.__dict__:
                raise AssemblyError(
                    f"{type(reactor).__name__}.__init__ did not call super().__init__()"
                )
            self.connections.extend(reactor._connections)
            for el in reactor._elements:
                leaves = el.leaves() if isinstance(el, Port) else [el]
                for leaf in leaves:
                    if isinstance(leaf, Port):
                        self.ports.append(leaf)
                    self.triggers.append(leaf)
        self.reactions: list[Reaction] = []
        for reactor in self.reactors:
            for pos, spec in enumerate(reaction_specs(reactor)):
                r = Reaction(reactor, spec, pos)
                self._bind(r)
                reactor._reactions.append(r)
                self.reactions.append(r)
        self._resolve_connections()
        self._build_edges()
        self.ordered = assign_levels(self.reactions, self.edges)
        if keepalive is None:
            keepalive = any(isinstance(t, PhysicalAction) for t in self.triggers)
        tracer = Tracer.open(trace) if trace is not None else None
        self.scheduler = Scheduler(  # bool(): the compiled Scheduler takes no truthy stand-ins
            self,
            fast=bool(fast),
            timeout=timeout,
            keepalive=bool(keepalive),
            on_error=on_error,
            tracer=tracer,
            coordinator=coordinator,
            busy_poll=busy_poll,
        )

    def run(self) -> None:
        """Run to completion. Raises ReactionError if a reaction failed."""
        self.scheduler.run()

    # -- binding names ----------------------------------------------------------

    def _lookup(self, r: Reaction, name: str, role: str) -> list[_Trigger]:
        reactor = r.reactor
        where = f"reaction {r.fqn} names {name!r} as a {role}"
        parts = name.split(".")
        if len(parts) > 2:
            raise AssemblyError(f"{where}: only 'element' or 'child.port' can be named")
        if len(parts) == 1:
            el = reactor.__dict__.get(name)
            if not isinstance(el, _Element) or el.container is not reactor:
                raise AssemblyError(f"{where}, but {reactor.fqn} has no such element")
            return list(el.leaves()) if isinstance(el, Port) else [el]
        child_name, port_name = parts
        child = reactor.__dict__.get(child_name)
        if isinstance(child, Bank):
            try:
                return list(getattr(child, port_name))
            except AttributeError:
                raise AssemblyError(
                    f"{where}, but bank {child_name} has no port {port_name!r}"
                ) from None
        if not isinstance(child, Reactor) or child.container is not reactor:
            raise AssemblyError(f"{where}, but {reactor.fqn} contains no reactor {child_name!r}")
        port = child.__dict__.get(port_name)
        if not isinstance(port, Port):
            raise AssemblyError(f"{where}, but {child.fqn} has no port {port_name!r}")
        return list(port.leaves())

    def _bind(self, r: Reaction) -> None:
        reactor = r.reactor
        for n in r.spec.triggers:
            for t in self._lookup(r, n, "trigger"):
                self._check_direction(r, t, "trigger")
                r.triggers.append(t)
                t._reactions.append(r)
        for n in r.spec.sources:
            for t in self._lookup(r, n, "source"):
                self._check_direction(r, t, "source")
                r.sources.append(t)
        for n in r.spec.effects:
            for t in self._lookup(r, n, "effect"):
                if isinstance(t, Port):
                    own_out = t.container is reactor and isinstance(t, Output)
                    child_in = t.container is not reactor and isinstance(t, Input)
                    if not (own_out or child_in):
                        raise AssemblyError(
                            f"reaction {r.fqn} declares {t.fqn} as an effect, but a reaction can "
                            "only write its own outputs or its children's inputs"
                        )
                elif not hasattr(t, "schedule"):
                    raise AssemblyError(
                        f"reaction {r.fqn} declares {t.fqn} ({t.kind}) as an effect; only ports "
                        "and actions can be effects"
                    )
                r.effect_list.append(t)
        r.effects = frozenset(r.effect_list)
        r.readable = frozenset(r.triggers) | frozenset(r.sources) | r.effects
        if r.spec.deadline_fn is not None and r.deadline is None:
            raise AssemblyError(f"reaction {r.fqn} has a deadline handler but no deadline")

    @staticmethod
    def _check_direction(r: Reaction, t: _Trigger, role: str) -> None:
        if isinstance(t, Port):
            own_in = t.container is r.reactor and isinstance(t, Input)
            child_out = t.container is not r.reactor and isinstance(t, Output)
            if not (own_in or child_out):
                raise AssemblyError(
                    f"reaction {r.fqn} declares {t.fqn} as a {role}, but a reaction can only "
                    "read its own inputs or its children's outputs"
                )

    # -- connections -------------------------------------------------------------

    def _resolve_connections(self) -> None:
        zero: dict[Port, list[Port]] = {}
        delayed: dict[Port, list[tuple[int, Port]]] = {}
        for src, dst, delay in self.connections:
            if dst._upstream is not None:
                raise AssemblyError(
                    f"{dst.fqn} has two upstream connections ({dst._upstream.fqn} and {src.fqn}); "
                    "a port can have only one source"
                )
            dst._upstream = src
            if delay is None:
                zero.setdefault(src, []).append(dst)
            else:
                delayed.setdefault(src, []).append((delay, dst))

        def reach(p: Port, seen: set[Port]) -> list[Port]:
            out = [p]
            for q in zero.get(p, ()):
                if q in seen:
                    raise AssemblyError(f"connections form a loop through {q.fqn}")
                seen.add(q)
                out.extend(reach(q, seen))
            return out

        fans = {p: reach(p, {p}) for p in self.ports}
        for p in self.ports:
            p._fanout = tuple(fans[p])
            # a delayed value reaches its destination and the ports connected on from it
            # (a composite reactor's input feeding its children)
            p._delayed = tuple((delay, r) for q in fans[p] for delay, d in delayed.get(q, ())
                               for r in fans.get(d, (d,)))  # fmt: skip

    def _build_edges(self) -> None:
        readers: dict[_Trigger, list[Reaction]] = {}
        for r in self.reactions:
            for t in (*r.triggers, *r.sources):
                readers.setdefault(t, []).append(r)
        for reactor in self.reactors:
            rs = reactor._reactions
            for a, b in itertools.pairwise(rs):
                self.edges.append((a, b, None))
        for w in self.reactions:
            for eff in w.effect_list:
                if not isinstance(eff, Port):
                    continue
                for q in eff._fanout:
                    for reader in readers.get(q, ()):
                        via = eff.fqn if q is eff else f"{eff.fqn} -> {q.fqn}"
                        self.edges.append((w, reader, via))
