"""Reactors and what they own: ports, timers, actions (defined in
:mod:`hprm_core.trigger`), reactions, banks.

A reactor is a class. Its ``__init__`` creates its elements as attributes (the
attribute name becomes the element's name), its contained reactors, and the
connections between them. Its reactions are methods decorated with
:func:`reaction`, which name their triggers, sources and effects as strings, so
the dependency graph is known before anything runs; that graph (not arrival
order) fixes the execution order of reactions at each tag.

Example::

    from hprm_core import Reactor, Input, Output, Timer, reaction

    class Counter(Reactor):
        def __init__(self, period="10 ms"):
            super().__init__()
            self.out = Output()
            self.tick = Timer(period=period)
            self.count = 0

        @reaction("tick", effects="out")
        def on_tick(self):
            self.count += 1
            self.out.set(self.count)

    class Printer(Reactor):
        def __init__(self):
            super().__init__()
            self.inp = Input()

        @reaction("inp")
        def show(self):
            print(self.tag, self.inp.value)

Names in a reaction declaration: an element of this reactor (``"tick"``,
``"inp"``), a port of a contained reactor or bank (``"child.out"``,
``"workers.inp"``), or ``"startup"`` / ``"shutdown"``. A multiport or a bank
port stands for all of its channels.

Rules enforced while running: a reaction may only ``set`` ports and
``schedule`` actions listed in its effects, and only read elements listed in
its triggers, sources or effects; violating either raises
:class:`~hprm_core.errors.EffectError` naming the reaction and the element.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from hprm_core.errors import AssemblyError
from hprm_core.tag import Duration, Tag, duration, format_duration
from hprm_core.trigger import (
    Input,
    LogicalAction,
    Output,
    PhysicalAction,
    Port,
    Timer,
    _BuiltinTrigger,
    _Element,
    _Trigger,
)

if TYPE_CHECKING:
    from hprm_core.scheduler import Scheduler

__all__ = [
    "Bank",
    "Input",
    "LogicalAction",
    "Output",
    "PhysicalAction",
    "Reactor",
    "Timer",
    "reaction",
]

# Set while a Bank constructs its members, so Reactor.__init__ can give each one
# its bank_index before user code in the subclass __init__ runs.
_bank_index = threading.local()


class ReactionSpec:
    """What :func:`reaction` returns: the declaration, shared by all instances."""

    def __init__(
        self,
        fn: Callable[[Any], None],
        triggers: tuple[str, ...],
        sources: tuple[str, ...],
        effects: tuple[str, ...],
        deadline: int | None,
    ) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.triggers = triggers
        self.sources = sources
        self.effects = effects
        self.deadline = deadline
        self.deadline_fn: Callable[[Any], None] | None = None
        self.stp_fn: Callable[[Any], None] | None = None
        # Added to one instance (Reactor.add_reaction): the functions take no
        # ``self`` (bound methods, closures) and are called as they are.
        self.bound = False

    def deadline_missed(self, fn: Callable[[Any], None]) -> Callable[[Any], None]:
        """Decorate the handler that runs *instead of* the reaction when it starts
        later than ``tag.time + deadline`` in physical time. It may use the same
        triggers, sources and effects."""
        if self.deadline is None:
            raise AssemblyError(f"reaction {self.name} has no deadline; pass deadline='...'")
        self.deadline_fn = fn
        return fn

    def stp_violation(self, fn: Callable[[Any], None]) -> Callable[[Any], None]:
        """Decorate the handler that runs instead of the reaction when one of its
        network inputs arrives tardy (decentralized coordination)."""
        self.stp_fn = fn
        return fn

    def __call__(self, instance: Any) -> None:  # lets tests call the method directly
        self.fn(instance)


def _items(x: Any) -> tuple[Any, ...]:
    """One element or name, or several."""
    return (x,) if isinstance(x, str | _Element) else tuple(x)


def _names(x: str | Iterable[str]) -> tuple[str, ...]:
    if isinstance(x, str):
        return (x,)
    out = tuple(x)
    for n in out:
        if not isinstance(n, str):
            raise AssemblyError(f"reaction declarations name elements as strings, got {n!r}")
    return out


def reaction(
    *triggers: str,
    sources: str | Iterable[str] = (),
    effects: str | Iterable[str] = (),
    deadline: Duration = None,
) -> Callable[[Callable[[Any], None]], ReactionSpec]:
    """Declare a method as a reaction.

    ``triggers`` make it run; ``sources`` may be read but do not trigger;
    ``effects`` may be written (ports) or scheduled (actions). Reactions of one
    reactor run in the order they are defined (base classes first).
    """
    for t in triggers:
        if not isinstance(t, str):
            raise AssemblyError(f"reaction triggers are element names (strings), got {t!r}")
    dl = None if deadline is None else duration(deadline)

    def wrap(fn: Callable[[Any], None]) -> ReactionSpec:
        return ReactionSpec(fn, tuple(triggers), _names(sources), _names(effects), dl)

    return wrap


class Reaction:
    """A reaction bound to one reactor instance, with its resolved elements."""

    def __init__(self, reactor: Reactor, spec: ReactionSpec, position: int) -> None:
        self.reactor = reactor
        self.spec = spec
        self.name = spec.name
        self.position = position
        bind = _as_is if spec.bound else _bind_to(reactor)
        self.fn: Callable[[], None] = bind(spec.fn)
        self.deadline = spec.deadline
        self.deadline_fn = bind(spec.deadline_fn) if spec.deadline_fn else None
        self.stp_fn = bind(spec.stp_fn) if spec.stp_fn else None
        self.triggers: list[_Trigger] = []
        self.sources: list[_Trigger] = []
        self.effect_list: list[_Trigger] = []
        self.effects: frozenset[_Trigger] = frozenset()
        self.readable: frozenset[_Trigger] = frozenset()
        self.index = -1  # global execution order, set at assembly
        self.level = -1

    @property
    def fqn(self) -> str:
        return f"{self.reactor.fqn}.{self.name}"

    def __repr__(self) -> str:
        return f"<Reaction {self.fqn}>"


def _as_is(fn: Callable[..., None]) -> Callable[[], None]:
    return fn


def _bind_to(reactor: Reactor) -> Callable[[Callable[[Any], None]], Callable[[], None]]:
    return lambda fn: fn.__get__(reactor)


class Reactor:
    """Base class of every reactor. Subclasses call ``super().__init__()`` first.

    ``name`` defaults to the attribute name under which the container stores
    the reactor (or the class name for the main reactor). Inside a bank,
    ``self.bank_index`` is the member's index (0 elsewhere).
    """

    # Stored through __dict__ by __init__ (``__setattr__`` would attach them as elements).
    name: str | None
    container: Reactor | None
    bank_index: int
    _elements: list[_Element]
    _children: list[Reactor]
    _connections: list[tuple[Port, Port, int | None]]
    _link_options: dict[tuple[Port, Port], tuple[Any, Any]]
    _sched: Scheduler | None
    _reactions: list[Reaction]
    _added_reactions: list[ReactionSpec]

    def __init__(self, name: str | None = None) -> None:
        d = self.__dict__
        d["name"] = name
        d["container"] = None
        d["bank_index"] = getattr(_bank_index, "value", 0)
        d["_elements"] = []
        d["_children"] = []
        d["_connections"] = []
        d["_link_options"] = {}
        d["_sched"] = None
        d["_reactions"] = []
        d["_added_reactions"] = []
        self.startup = _BuiltinTrigger()
        self.shutdown = _BuiltinTrigger()

    def __setattr__(self, key: str, value: Any) -> None:
        if "_elements" not in self.__dict__:
            raise AssemblyError(
                f"{type(self).__name__}.__init__ must call super().__init__() before "
                f"setting attributes (setting {key!r})"
            )
        if isinstance(value, _Element) and value.container is None:
            value._attach(self, key)
            self._elements.append(value)
        elif isinstance(value, Reactor) and value.container is None:
            value.__dict__["container"] = self
            if value.name is None:
                value.__dict__["name"] = key
            self._children.append(value)
        elif isinstance(value, Bank) and value.container is None:
            value._attach(self, key)
        object.__setattr__(self, key, value)

    @property
    def fqn(self) -> str:
        own = self.name or type(self).__name__
        return own if self.container is None else f"{self.container.fqn}.{own}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.fqn}>"

    # -- composition ---------------------------------------------------------

    def connect(
        self,
        src: Port | Iterable[Port],
        dst: Port | Iterable[Port],
        after: Duration = None,
        broadcast: bool = False,
        *,
        threshold: int | None = None,
        serialization: str | None = None,
    ) -> None:
        """Connect ports channel by channel, optionally ``after`` a logical delay.

        ``src`` and ``dst`` may be ports, multiports, bank ports (``bank.out``)
        or lists of those; they are flattened into channels and paired in
        order. ``broadcast=True`` repeats the source channels to cover every
        destination (Lingua Franca's ``(a)+ -> b``). A connection with
        ``after`` (even ``after="0 s"``) fires at a later tag, so it breaks
        zero-delay cycles.

        Between federates (separate processes) two more options apply:
        ``threshold`` (bytes; default 64 KB): buffers this large or larger
        travel through shared memory by reference instead of inside the frame;
        ``serialization``: ``"pickle"`` (default, trusted peers) or ``"safe"``
        (msgpack + raw arrays + Arrow IPC; the receiver never unpickles).
        """
        srcs = _flatten_ports(src)
        dsts = _flatten_ports(dst)
        if not srcs or not dsts:
            raise AssemblyError(f"{self.fqn}: connect() needs at least one port on each side")
        if broadcast:
            if len(dsts) % len(srcs):
                raise AssemblyError(
                    f"{self.fqn}: broadcast of {len(srcs)} channel(s) cannot evenly cover "
                    f"{len(dsts)} destination channel(s)"
                )
            srcs = srcs * (len(dsts) // len(srcs))
        elif len(srcs) != len(dsts):
            raise AssemblyError(
                f"{self.fqn}: connect() width mismatch: {len(srcs)} source channel(s) "
                f"({_describe(srcs)}) vs {len(dsts)} destination channel(s) ({_describe(dsts)}); "
                f"use broadcast=True to fan one output out"
            )
        delay = None if after is None else duration(after)
        if delay is not None and delay < 0:
            raise AssemblyError(f"{self.fqn}: after delay must not be negative")
        for s, d in zip(srcs, dsts, strict=True):
            self._connections.append((s, d, delay))
            if threshold is not None or serialization is not None:
                self._link_options[(s, d)] = (threshold, serialization)

    # -- elements and reactions made per instance ------------------------------

    def attach(self, name: str, element: Any) -> Any:
        """Make ``element`` (a port, timer, action, reactor or bank) part of
        this reactor under ``name``, as ``self.<name> = element`` does; returns it.

        For code that builds a reactor's elements from data, after
        ``super().__init__()``: one input per subscribed topic, say, named by
        the caller. Reactions name it like any other element.

        >>> image = node.attach("image", Input())  # doctest: +SKIP
        """
        if not isinstance(name, str) or not name or "." in name or name.startswith("_"):
            raise AssemblyError(
                f"{self.fqn}: element name must be a non-empty string without '.' that does "
                f"not start with '_', got {name!r}"
            )
        if name in self.__dict__:
            raise AssemblyError(f"{self.fqn} already has an attribute {name!r}")
        if not isinstance(element, _Element | Reactor | Bank):
            raise AssemblyError(
                f"{self.fqn}: attach() takes a port, timer, action, reactor or bank, "
                f"got {element!r}"
            )
        if element.container is not None:
            raise AssemblyError(f"{self.fqn}: {element!r} already belongs to {element.container!r}")
        setattr(self, name, element)
        return element

    def add_reaction(
        self,
        fn: Callable[[], None],
        *triggers: str | _Element,
        sources: str | _Element | Iterable[str | _Element] = (),
        effects: str | _Element | Iterable[str | _Element] = (),
        deadline: Duration = None,
        deadline_missed: Callable[[], None] | None = None,
        stp_violation: Callable[[], None] | None = None,
        name: str | None = None,
    ) -> ReactionSpec:
        """Add a reaction to this instance only, before the program is assembled.

        The same rules as :func:`reaction`, with two differences that suit code
        creating reactions at run time (an rclpy node's ``create_subscription``
        in ``__init__``): ``fn`` takes no ``self`` (a bound method or a
        closure), and triggers, sources and effects may be given as the
        elements themselves as well as by name. Reactions added this way come
        after the class's own in this reactor's order, in the order added.
        ``name`` defaults to ``fn.__name__``, made unique in this reactor.

        >>> node.add_reaction(node.on_scan, node.scan, effects=node.cmd)  # doctest: +SKIP
        """
        if self._sched is not None:
            raise AssemblyError(f"{self.fqn}: reactions can only be added before the program runs")
        if not callable(fn):
            raise AssemblyError(f"{self.fqn}.add_reaction: {fn!r} is not callable")
        spec = ReactionSpec(
            fn,
            tuple(self._element_name(t) for t in triggers),
            tuple(self._element_name(x) for x in _items(sources)),
            tuple(self._element_name(x) for x in _items(effects)),
            None if deadline is None else duration(deadline),
        )
        spec.bound = True
        spec.name = self._unique_reaction_name(name or getattr(fn, "__name__", "reaction"))
        if deadline_missed is not None:
            spec.deadline_missed(deadline_missed)
        if stp_violation is not None:
            spec.stp_violation(stp_violation)
        self._added_reactions.append(spec)
        return spec

    def _element_name(self, x: str | _Element) -> str:
        """How a reaction declaration names ``x`` from this reactor."""
        if isinstance(x, str):
            return x
        if isinstance(x, _Element) and x.name is not None:
            if x.container is self:
                return x.name
            owner = x.container
            if isinstance(x, Port) and owner is not None and owner.container is self:
                return f"{owner.name}.{x.name}"
        raise AssemblyError(
            f"{self.fqn}.add_reaction: {x!r} is neither an element of {self.fqn} nor a port "
            "of one of its children (give it a name first: self.<name> = ... or attach())"
        )

    def _unique_reaction_name(self, base: str) -> str:
        if not base.isidentifier():  # a lambda
            base = "reaction"
        taken = {s.name for s in self._added_reactions} | {
            n for klass in type(self).__mro__ for n, v in vars(klass).items()
            if isinstance(v, ReactionSpec)
        }  # fmt: skip
        name, k = base, 1
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        return name

    # -- runtime services available inside reactions --------------------------

    @property
    def tag(self) -> Tag:
        """The current logical tag."""
        return self._runtime().tag

    @property
    def elapsed(self) -> int:
        """Logical time since the start of the program, in ns."""
        sched = self._runtime()
        return sched.tag.time - sched.start_time

    @property
    def start_time(self) -> int:
        """The program's start time in ns (a federation agrees on it)."""
        return self._runtime().start_time

    @property
    def clock_offset(self) -> int:
        """ns to add to this host's system clock (``time.time_ns()``) to read
        the federation's clock, on which tags and ``PhysicalAction.schedule_at``
        times are. 0 on the RTI's host (one system clock); measured to the RTI
        at startup on any other. Why it matters: a stamp taken on the system
        clock (a sensor's, a ROS header's) compared with tags without it is off
        by the hosts' clock difference."""
        return self._runtime().clock_offset

    def request_stop(self) -> None:
        """Stop the program at the next microstep (shutdown reactions run there)."""
        self._runtime().request_stop()

    def alloc_array(self, shape: int | tuple[int, ...], dtype: Any = float) -> Any:
        """A numpy array to fill and send without any copy (zero-copy produce).

        In a federate on one host it lives in this process's shared-memory
        object store, so setting it on an output sends only a reference; it
        stays valid while this code holds it. Elsewhere it is ``numpy.empty``.
        """
        alloc = getattr(self._runtime().coordinator, "alloc_array", None)
        if alloc is not None:
            return alloc(shape, dtype)
        import numpy as np

        return np.empty(shape, dtype)

    def add_reader(self, fileobj: Any, callback: Callable[[], None]) -> None:
        """Call ``callback`` in the scheduler's own thread whenever ``fileobj``
        (a socket, an eventfd: anything with ``fileno()``) is readable, while
        the program waits for its next event. Any thread may call it.

        Why: a driver thread that blocks on its device and schedules a
        physical action must wake the scheduler's thread for every event, a
        thread hand-off per message (~0.1 ms on a small machine, cold). A file
        watched here wakes the scheduler itself, which reads it and schedules
        the action in the same turn. ``callback`` runs while no reaction does:
        it must not block, and it reaches the program only by scheduling
        physical actions. Example, in a startup reaction::

            self.add_reader(sock, lambda: self.arrived.schedule(sock.recv(4096)))
        """
        self._runtime().add_reader(fileobj, callback)

    def remove_reader(self, fileobj: Any) -> None:
        """Stop watching ``fileobj`` (from the next wait; before closing it)."""
        self._runtime().remove_reader(fileobj)

    def _runtime(self) -> Scheduler:
        sched = self._sched
        if sched is None:
            raise AssemblyError(f"{self.fqn} is not part of a running program")
        return sched


class Bank:
    """``N`` instances of one reactor class, each with its own ``bank_index``.

    ``bank.out`` is the list of every member's ``out`` port (all channels), so
    ``connect(src.out, bank.inp, broadcast=True)`` broadcasts and
    ``connect(bank.out, sink.inp)`` gathers into a multiport of width ``N``.

    Example::

        self.workers = Bank(4, Worker, scale=2.0)   # Worker(scale=2.0) x 4
    """

    def __init__(self, width: int, cls: type[Reactor], *args: Any, **kwargs: Any) -> None:
        if not isinstance(width, int) or width < 1:
            raise AssemblyError(f"bank width must be a positive int, got {width!r}")
        self.width = width
        self.cls = cls
        self.name: str | None = None
        self.container: Reactor | None = None
        self.members: list[Reactor] = []
        for i in range(width):
            _bank_index.value = i
            try:
                self.members.append(cls(*args, **kwargs))
            finally:
                del _bank_index.value

    def _attach(self, container: Reactor, name: str) -> None:
        self.container = container
        self.name = name
        for i, m in enumerate(self.members):
            m.__dict__["container"] = container
            m.__dict__["name"] = f"{name}[{i}]"
            container._children.append(m)

    def __len__(self) -> int:
        return self.width

    def __getitem__(self, i: int) -> Reactor:
        return self.members[i]

    def __iter__(self) -> Iterator[Reactor]:
        return iter(self.members)

    def __getattr__(self, attr: str) -> list[Port]:
        if attr.startswith("_") or attr in ("members", "width", "cls", "name", "container"):
            raise AttributeError(attr)
        ports: list[Port] = []
        for m in self.members:
            p = getattr(m, attr, None)
            if not isinstance(p, Port):
                raise AttributeError(f"bank {self.name} members have no port {attr!r}")
            ports.extend(p.leaves())
        return ports


def _flatten_ports(x: Port | Iterable[Port]) -> list[Port]:
    if isinstance(x, Port):
        return list(x.leaves())
    out: list[Port] = []
    for item in x:
        if not isinstance(item, Port):
            raise AssemblyError(f"connect() takes ports, got {item!r}")
        out.extend(item.leaves())
    return out


def _describe(ports: list[Port]) -> str:
    names = [p.fqn for p in ports[:3]]
    return ", ".join(names) + (", ..." if len(ports) > 3 else "")


def describe_delay(delay: int | None) -> str:
    """How diagrams and errors show a connection delay."""
    return "" if delay is None else f"after {format_duration(delay)}"
