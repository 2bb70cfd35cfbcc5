"""Triggers: what can be present at a tag and set reactions off (ports,
timers, actions), and the base of every element a reactor owns.

Every value a reaction sets or reads passes through these classes, so they
are compiled with the rest of the per-message path (:mod:`hprm_core.compiled`):
they are final classes (not meant to be subclassed) whose attributes are all
declared here. :mod:`hprm_core.reactor` exports them; import them from there
or from ``hprm_core``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from hprm_core.errors import AssemblyError, EffectError
from hprm_core.tag import Duration, Tag, duration, make_tag

if TYPE_CHECKING:
    from hprm_core.reactor import Reaction, Reactor
    from hprm_core.scheduler import Scheduler


class _Element:
    """Something a reactor owns, named by the attribute it is stored in."""

    kind = "element"

    def __init__(self) -> None:
        self.name: str | None = None
        self.container: Reactor | None = None

    def _attach(self, container: Reactor, name: str) -> None:
        if self.container is not None:
            raise AssemblyError(
                f"{self.kind} {self.fqn} is already owned; cannot also be {container.fqn}.{name}"
            )
        self.container = container
        self.name = name

    @property
    def fqn(self) -> str:
        """Fully qualified name, e.g. ``Main.camera.image``."""
        if self.container is None:
            return self.name or f"<unattached {self.kind}>"
        return f"{self.container.fqn}.{self.name}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.fqn}>"


class _Trigger(_Element):
    """An element that can be present at a tag and trigger reactions.

    Presence is a stamp: the scheduler counts processed tags in ``_step``, and
    an element is present when its own stamp equals the current step, so
    nothing needs clearing when a tag ends.
    """

    def __init__(self) -> None:
        super().__init__()
        self._sched: Scheduler | None = None
        self._step = -1
        self._tardy_step = -1  # step at which a tardy network value arrived
        self._value: Any = None
        self._reactions: list[Reaction] = []  # reactions this element triggers

    def _check_read(self) -> None:
        sched = self._sched
        if sched is not None:
            r = sched.current_reaction
            if r is not None and self not in r.readable:
                raise EffectError(
                    f"reaction {r.fqn} read {self.fqn}, which is not among its triggers, "
                    f"sources or effects; declare it, e.g. @reaction(..., sources={self.name!r})"
                )

    def _check_effect(self, verb: str) -> Scheduler:
        """The running scheduler, if the current reaction declared this element
        as an effect; otherwise an error naming the reaction and the element."""
        sched = self._sched
        r = sched.current_reaction if sched is not None else None
        if sched is None or r is None or self not in r.effects:
            who = r.fqn if r is not None else "code outside any reaction"
            raise EffectError(
                f"{who} {verb} {self.fqn}, which is not among its declared effects; "
                f"declare it, e.g. @reaction(..., effects={self.name!r})"
            )
        return sched

    @property
    def is_present(self) -> bool:
        """True when this element has a value at the current tag."""
        self._check_read()
        sched = self._sched
        return sched is not None and self._step == sched.step

    @property
    def is_tardy(self) -> bool:
        """True when the present value arrived over the network after its tag
        had passed (decentralized coordination); ``last_tardy_tag`` is its tag."""
        sched = self._sched
        return sched is not None and self._tardy_step == sched.step

    @property
    def value(self) -> Any:
        """The value at the current tag, or ``None`` when absent."""
        self._check_read()
        sched = self._sched
        if sched is not None and self._step == sched.step:
            return self._value
        return None

    def _fire(self, value: Any) -> None:
        """Mark present at the current tag and enqueue the triggered reactions."""
        sched = self._sched
        assert sched is not None
        self._value = value
        if self._step != sched.step:
            self._step = sched.step
            sched.fired.append(self)  # its value is dropped when the tag ends
            enqueue = sched.enqueue
            for r in self._reactions:
                enqueue(r)


def is_contract(contract: Any) -> bool:
    """Whether ``contract`` is one (a port's, or as a description carries it): a dict of
    terms (str) to levels (int)."""
    return isinstance(contract, dict) and all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
        for k, v in contract.items()
    )


class Port(_Trigger):
    """An input or output port. Holds at most one value per tag.

    A port made with ``width=N`` is a multiport: index it (``out[i]``), iterate
    it, or name it in a reaction to mean all channels.
    """

    kind = "port"

    # Any: checked here, with a clear error
    def __init__(
        self, width: Any = None, *, topic: Any = None, msg_type: Any = None,
        boundary: bool = False, contract: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        #: what a port matched by topic must agree to, as a level per term (higher:
        #: stronger): an output's offer, an input's request. The RTI connects an output
        #: to an input only where it offers at least what the input requests on every
        #: term both name (DDS's requested-versus-offered rule: a best-effort writer
        #: never feeds a reliable reader); see ``structure.shortfall``
        self.contract: dict[str, int] = {}
        if contract is not None:
            if not is_contract(contract):
                raise AssemblyError(f"a port's contract maps terms to int levels, got {contract!r}")
            self.contract = dict(contract)
        #: offered to a boundary federate (a gateway) even where the federation has both
        #: ends of the topic: a ported ROS 2 service that plain ROS 2 may call too
        self.boundary = boundary
        self.channels: list[Port] = []
        if width is not None:
            if not isinstance(width, int) or isinstance(width, bool) or width < 1:
                raise AssemblyError(f"multiport width must be a positive int, got {width!r}")
            self.channels = [type(self)() for _ in range(width)]
        self.width: int | None = width
        if topic is not None and (not isinstance(topic, str) or not topic):
            raise AssemblyError(f"a port's topic must be a non-empty string, got {topic!r}")
        #: the name federates started on their own match ports by (default: the
        #: port's name); a ported ROS 2 node's publisher or subscription topic
        self.topic: str | None = topic
        #: what the port carries, as a name ("std_msgs/msg/String"); two ports
        #: matched by topic must agree on it where both say
        self.msg_type: str | None = None if msg_type is None else type_name(msg_type)
        # Filled at assembly: ports reached through zero-delay connections
        # (self included), and delayed destinations.
        self._fanout: tuple[Port, ...] = (self,)
        self._delayed: tuple[tuple[int, Port], ...] = ()
        self._upstream: Port | None = None
        self._listeners: tuple[Callable[[Port, Any], None], ...] = ()
        #: network inputs (decentralized): how many values arrived after their tag
        self.tardy_count = 0
        self.last_tardy_tag: Tag | None = None

    def _attach(self, container: Reactor, name: str) -> None:
        super()._attach(container, name)
        for i, ch in enumerate(self.channels):
            ch._attach(container, f"{name}[{i}]")

    def leaves(self) -> list[Port]:
        """The channels of a multiport, or ``[self]``."""
        return self.channels if self.width is not None else [self]

    def __getitem__(self, i: int) -> Port:
        if self.width is None:
            raise TypeError(f"{self.fqn} is not a multiport")
        return self.channels[i]

    def __len__(self) -> int:
        if self.width is None:
            raise TypeError(f"{self.fqn} is not a multiport")
        return self.width

    def __iter__(self) -> Iterator[Port]:
        return iter(self.leaves())

    def set(self, value: Any) -> None:
        """Give this port ``value`` at the current tag (last write in a tag wins)."""
        sched = self._check_effect("wrote")
        if self.width is not None:
            raise EffectError(f"{self.fqn} is a multiport: set a channel, e.g. {self.name}[0]")
        for p in self._fanout:
            p._fire(value)
        for delay, p in self._delayed:
            sched.schedule(p, sched.tag.delay(delay), value)
        for listener in self._listeners:
            listener(self, value)

    def tap(self, callback: Callable[[Port, Any], None]) -> Callable[[], None]:
        """Call ``callback(port, value)`` whenever a reaction sets this port,
        after the value reached its connected ports; returns a function that
        removes the tap.

        For code that carries values *out of* a program: a federation's
        network senders, a bridge publishing to a ROS 2 topic, a recorder. It
        runs inside the writing reaction, at its tag, in the scheduler thread:
        keep it short, and hand slow work to another thread.

        >>> untap = robot.camera.image.tap(lambda port, img: frames.append(img))  # doctest: +SKIP
        """
        self._listeners = (*self._listeners, callback)

        def untap() -> None:
            self._listeners = tuple(x for x in self._listeners if x is not callback)

        return untap


def type_name(t: Any) -> str:
    """The name of a message type: a string as given, a ROS 2 message class
    (rclpy's, or HPRM's in ``pkg.msg``) as ``pkg/msg/Name`` (what ``ros2 topic
    info`` shows), another class as ``module.QualName``."""
    if isinstance(t, str):
        return t
    if not isinstance(t, type):
        raise AssemblyError(f"msg_type must be a type or a type name, got {t!r}")
    parts = t.__module__.split(".")
    # rclpy's generated pkg.msg._name modules, and classes that live in pkg.msg itself
    generated = len(parts) == 2 or (len(parts) == 3 and parts[2].startswith("_"))
    if generated and parts[1] in ("msg", "srv", "action"):
        return f"{parts[0]}/{parts[1]}/{t.__name__}"
    return f"{t.__module__}.{t.__qualname__}"


class Input(Port):
    """An input port (``Input(width=N)`` for a multiport; ``topic=`` and
    ``msg_type=`` for a federate that describes itself to its RTI).

    ``wait=False``: in a federation, its federate never waits for this input
    before processing a tag (no grant held, no STP offset waited out), for
    inputs whose values may come late without harm: a request from outside
    such as a ``ros2 param`` call. A value that arrives after its tag was
    processed is delivered as tardy (``stp_violation`` handler), never
    slipped into the past. It also closes no zero-delay cycle."""

    kind = "input"

    # Any: as Port's
    def __init__(
        self, width: Any = None, *, topic: Any = None, msg_type: Any = None, wait: bool = True,
        boundary: bool = False, contract: Any = None,
    ) -> None:  # fmt: skip
        super().__init__(width, topic=topic, msg_type=msg_type, boundary=boundary,
                         contract=contract)  # fmt: skip
        self.wait = wait


class Output(Port):
    """An output port (``Output(width=N)`` for a multiport).

    ``boundary=True`` (either kind, with ``topic=``): a boundary federate of the
    federation (a gateway to another middleware) is given this topic too, even where
    federates of the federation both publish and subscribe it, so that it can join
    them (:func:`hprm_core.assembly.open_ports`)."""

    kind = "output"


class Timer(_Trigger):
    """Fires at ``offset`` after start, then every ``period`` (once if period is 0).

    Firings are at exactly ``start + offset + k * period`` in integer ns: no drift.
    """

    kind = "timer"

    def __init__(self, offset: Duration = 0, period: Duration = 0) -> None:
        super().__init__()
        self.offset = duration(offset)
        self.period = duration(period)
        if self.offset < 0 or self.period < 0:
            raise AssemblyError("timer offset and period must not be negative")
        self.cancelled = False

    def cancel(self) -> None:
        """Stop firing; the firing already queued is dropped too (from a
        reaction, or before the start)."""
        self.cancelled = True
        if self._sched is not None:
            self._sched.unschedule(self)

    def reset(self) -> None:
        """Fire again every ``period``, the first one ``period`` after the
        current tag (from a reaction, or before the start: as if never cancelled)."""
        if not self.cancelled:
            return
        self.cancelled = False
        sched = self._sched
        if sched is not None:
            sched.coordinator.timer_started(sched)
            if sched.running:
                sched.schedule(self, make_tag((sched.tag[0] + max(self.period, 1), 0)), None)

    def _fire(self, value: Any) -> None:
        super()._fire(value)
        if self.period and not self.cancelled:
            sched = self._sched
            assert sched is not None
            sched.schedule(self, make_tag((sched.tag[0] + self.period, 0)), None)


class _Action(_Trigger):
    def __init__(self, min_delay: Duration = 0) -> None:
        super().__init__()
        self.min_delay = duration(min_delay)
        if self.min_delay < 0:
            raise AssemblyError("action min_delay must not be negative")


class LogicalAction(_Action):
    """Schedules a future event in logical time, from a reaction.

    ``schedule(value, delay)`` fires at ``tag + min_delay + delay``; when that
    sum is zero it fires at the next microstep of the current time. Scheduling
    twice for one tag keeps the later value.
    """

    kind = "logical action"

    def schedule(self, value: Any = None, delay: Duration = 0) -> None:
        sched = self._check_effect("scheduled")
        extra = duration(delay)
        if extra < 0:
            raise ValueError(f"{self.fqn}: schedule delay must not be negative")
        sched.schedule(self, sched.tag.delay(self.min_delay + extra), value)


class PhysicalAction(_Action):
    """An event from outside logical time: a sensor callback, another thread.

    ``schedule(value)`` may be called from any thread. The event's tag is the
    physical time of the call plus ``min_delay`` (never earlier than the
    next microstep of the current tag).
    """

    kind = "physical action"

    def schedule(self, value: Any = None, delay: Duration = 0) -> None:
        sched = self._sched
        if sched is None:
            raise EffectError(f"{self.fqn} cannot be scheduled before the program starts")
        sched.schedule_physical(self, None, value, self.min_delay + duration(delay))

    def schedule_at(self, value: Any, time_ns: int) -> None:
        """At a given physical time (a sensor's own stamp, say) rather than
        now: the event's tag is ``time_ns`` exactly if that is still ahead of
        the reactor's current tag, else the next microstep of the current tag
        (``min_delay`` does not apply). Any thread.

        ``time_ns`` is on the federation's clock, as tags are: add the
        reactor's ``clock_offset`` to a stamp taken on this host's system
        clock. In a centralized federation a stamp behind what this federate
        already promised the RTI (its last NET) takes that promise's tag:
        federates downstream may have been granted past the stamp."""
        sched = self._sched
        if sched is None:
            raise EffectError(f"{self.fqn} cannot be scheduled before the program starts")
        sched.schedule_physical(self, int(time_ns), value)


class _BuiltinTrigger(_Trigger):
    kind = "builtin trigger"
