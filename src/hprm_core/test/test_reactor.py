"""Reactor semantics, one rule per test, on real programs run by the real scheduler."""

import re
import time

import pytest

from hprm_core import (
    AssemblyError,
    Bank,
    CycleError,
    EffectError,
    Input,
    LogicalAction,
    Output,
    ReactionError,
    Reactor,
    Timer,
    reaction,
    run,
)
from hprm_core.tag import MSEC


class Emit(Reactor):
    """Emits 1, 2, 3, ... on a timer."""

    def __init__(self, period="10 ms", offset=0):
        super().__init__()
        self.out = Output()
        self.tick = Timer(offset=offset, period=period)
        self.n = 0

    @reaction("tick", effects="out")
    def emit(self):
        self.n += 1
        self.out.set(self.n)


class Record(Reactor):
    """Records (elapsed, microstep, value) of each input."""

    def __init__(self, log=None):
        super().__init__()
        self.inp = Input()
        self.seen = []
        self.log = log

    @reaction("inp")
    def got(self):
        self.seen.append((self.elapsed, self.tag.microstep, self.inp.value))
        if self.log is not None:
            self.log.append(self.fqn)


def test_simultaneous_reactions_run_in_precedence_order_not_declaration_order():
    log = []

    class Relay(Reactor):
        def __init__(self):
            super().__init__()
            self.inp = Input()
            self.out = Output()

        @reaction("inp", effects="out")
        def fwd(self):
            log.append(self.fqn)
            self.out.set(self.inp.value + 1)

    class Top(Reactor):
        def __init__(self):
            super().__init__()
            # Declared downstream-first: order must still follow the data.
            self.c = Record(log)
            self.b = Relay()
            self.a = Relay()
            self.src = Emit()
            self.connect(self.src.out, self.a.inp)
            self.connect(self.a.out, self.b.inp)
            self.connect(self.b.out, self.c.inp)

    run(Top(), fast=True, timeout="20 ms")
    assert log == ["Top.a", "Top.b", "Top.c"] * 3


def test_reactions_of_one_reactor_run_in_definition_order():
    order = []

    class Two(Reactor):
        def __init__(self):
            super().__init__()
            self.t = Timer()

        @reaction("t")
        def first(self):
            order.append("first")

        @reaction("startup")
        def second(self):
            order.append("second")

    run(Two(), fast=True)
    assert order == ["first", "second"]


def test_zero_delay_logical_action_fires_at_next_microstep():
    class Counter(Reactor):
        def __init__(self):
            super().__init__()
            self.again = LogicalAction()
            self.tags = []

        @reaction("startup", "again", effects="again")
        def step(self):
            self.tags.append(tuple(self.tag.elapsed(self.start_time)))
            if len(self.tags) < 4:
                self.again.schedule(len(self.tags))

    c = Counter()
    run(c, fast=True)
    assert c.tags == [(0, 0), (0, 1), (0, 2), (0, 3)]


def test_logical_action_min_delay_plus_extra_delay_and_value():
    class Delayed(Reactor):
        def __init__(self):
            super().__init__()
            self.act = LogicalAction(min_delay="5 ms")
            self.got = []

        @reaction("startup", effects="act")
        def go(self):
            self.act.schedule("hello", delay="2 ms")

        @reaction("act")
        def land(self):
            self.got.append((self.elapsed, self.tag.microstep, self.act.value))

    d = Delayed()
    run(d, fast=True)
    assert d.got == [(7 * MSEC, 0, "hello")]


def test_after_delay_shifts_tag_and_zero_after_uses_a_microstep():
    class Top(Reactor):
        def __init__(self):
            super().__init__()
            self.src = Emit(period="100 ms")
            self.late = Record()
            self.micro = Record()
            self.now = Record()
            self.connect(self.src.out, self.late.inp, after="30 ms")
            self.connect(self.src.out, self.micro.inp, after=0)
            self.connect(self.src.out, self.now.inp)

    top = Top()
    run(top, fast=True, timeout="250 ms")
    assert top.now.seen == [(0, 0, 1), (100 * MSEC, 0, 2), (200 * MSEC, 0, 3)]
    assert top.micro.seen == [(0, 1, 1), (100 * MSEC, 1, 2), (200 * MSEC, 1, 3)]
    assert top.late.seen == [(30 * MSEC, 0, 1), (130 * MSEC, 0, 2), (230 * MSEC, 0, 3)]


def test_a_delayed_connection_into_a_composite_reaches_its_children():
    """The delayed value lands on the composite's input and goes on, as a value set
    there would, to the child connected inside."""

    class Wrap(Reactor):
        def __init__(self):
            super().__init__()
            self.inp = Input()
            self.inner = Record()
            self.connect(self.inp, self.inner.inp)

    class Top(Reactor):
        def __init__(self):
            super().__init__()
            self.src = Emit(period="100 ms")
            self.late = Wrap()
            self.micro = Wrap()
            self.connect(self.src.out, self.late.inp, after="30 ms")
            self.connect(self.src.out, self.micro.inp, after=0)

    top = Top()
    run(top, fast=True, timeout="150 ms")
    assert top.late.inner.seen == [(30 * MSEC, 0, 1), (130 * MSEC, 0, 2)]
    assert top.micro.inner.seen == [(0, 1, 1), (100 * MSEC, 1, 2)]


def test_timer_is_drift_free_over_10000_periods_in_fast_mode():
    class Ticker(Reactor):
        def __init__(self):
            super().__init__()
            self.t = Timer(offset="3 ms", period="7 ms")  # 7 ms is not binary-exact in s
            self.times = []

        @reaction("t")
        def tick(self):
            self.times.append(self.elapsed)

    t = Ticker()
    run(t, fast=True, timeout=3 * MSEC + 9_999 * 7 * MSEC)
    assert len(t.times) == 10_000
    assert t.times == [3 * MSEC + k * 7 * MSEC for k in range(10_000)]


def test_logical_time_does_not_run_ahead_of_physical_time():
    class Probe(Reactor):
        def __init__(self):
            super().__init__()
            self.t = Timer(period="20 ms")
            self.lags = []

        @reaction("t")
        def check(self):
            self.lags.append(time.time_ns() - self.tag.time)

    p = Probe()
    t0 = time.monotonic()
    run(p, timeout="100 ms")
    assert time.monotonic() - t0 >= 0.1
    assert len(p.lags) == 6
    assert min(p.lags) >= 0  # physical time had reached every tag when it ran


def test_deadline_violation_runs_handler_instead_of_reaction():
    class Slow(Reactor):
        def __init__(self):
            super().__init__()
            self.out = Output()
            self.t = Timer(period="30 ms")
            self.k = 0

        @reaction("t", effects="out")
        def produce(self):
            if self.k == 1:
                time.sleep(0.025)
            self.out.set(self.k)
            self.k += 1

    class Guarded(Reactor):
        def __init__(self):
            super().__init__()
            self.inp = Input()
            self.ok = []
            self.late = []

        @reaction("inp", deadline="10 ms")
        def handle(self):
            self.ok.append(self.inp.value)

        @handle.deadline_missed
        def missed(self):
            self.late.append(self.inp.value)

    class Top(Reactor):
        def __init__(self):
            super().__init__()
            self.s = Slow()
            self.g = Guarded()
            self.connect(self.s.out, self.g.inp)

    top = Top()
    run(top, timeout="70 ms")
    assert top.g.late == [1]
    assert top.g.ok == [0, 2]


def test_zero_delay_cycle_is_rejected_naming_reactors_and_ports():
    class Fwd(Reactor):
        def __init__(self):
            super().__init__()
            self.inp = Input()
            self.out = Output()

        @reaction("inp", effects="out")
        def fwd(self):
            self.out.set(self.inp.value)

    class Loop(Reactor):
        def __init__(self):
            super().__init__()
            self.a = Fwd()
            self.b = Fwd()
            self.connect(self.a.out, self.b.inp)
            self.connect(self.b.out, self.a.inp)

    with pytest.raises(CycleError) as err:
        run(Loop(), fast=True)
    msg = str(err.value)
    for name in (
        "Loop.a.fwd",
        "Loop.b.fwd",
        "Loop.a.out -> Loop.b.inp",
        "Loop.b.out -> Loop.a.inp",
    ):
        assert name in msg

    class DelayedLoop(Loop):
        def __init__(self):
            Reactor.__init__(self)
            self.a = Fwd()
            self.b = Fwd()
            self.connect(self.a.out, self.b.inp)
            self.connect(self.b.out, self.a.inp, after="1 ms")

    run(DelayedLoop(), fast=True)  # an `after` delay breaks the cycle


def test_request_stop_stops_at_next_microstep_and_runs_shutdown():
    class Stopper(Reactor):
        def __init__(self):
            super().__init__()
            self.t = Timer(period="10 ms")
            self.ticks = 0
            self.shutdown_tag = None

        @reaction("t")
        def tick(self):
            self.ticks += 1
            if self.ticks == 3:
                self.request_stop()

        @reaction("shutdown")
        def bye(self):
            self.shutdown_tag = self.tag.elapsed(self.start_time)

    s = Stopper()
    run(s, fast=True)
    assert s.ticks == 3
    assert s.shutdown_tag == (20 * MSEC, 1)


def test_program_without_events_ends_by_itself():
    r = Record()
    run(r, fast=True)
    assert r.seen == []


def test_writing_an_undeclared_effect_names_reaction_and_port():
    class Sneaky(Reactor):
        def __init__(self):
            super().__init__()
            self.a = Output()
            self.b = Output()

        @reaction("startup", effects="a")
        def go(self):
            self.b.set(1)

    with pytest.raises(ReactionError) as err:
        run(Sneaky(), fast=True)
    assert isinstance(err.value.failures[0][2], EffectError)
    assert "Sneaky.go" in str(err.value) and "Sneaky.b" in str(err.value)


def test_reading_an_undeclared_port_is_an_error():
    class Peek(Reactor):
        def __init__(self):
            super().__init__()
            self.x = Input()

        @reaction("startup")
        def go(self):
            return self.x.value

    with pytest.raises(ReactionError, match=r"read Peek\.x"):
        run(Peek(), fast=True)


def test_sources_are_readable_without_triggering():
    class Join(Reactor):
        def __init__(self):
            super().__init__()
            self.trig = Input()
            self.side = Input()
            self.pairs = []

        @reaction("trig", sources="side")
        def join(self):
            self.pairs.append((self.trig.value, self.side.is_present, self.side.value))

    class Top(Reactor):
        def __init__(self):
            super().__init__()
            self.fast_src = Emit(period="10 ms")
            self.slow_src = Emit(period="20 ms")
            self.j = Join()
            self.connect(self.fast_src.out, self.j.trig)
            self.connect(self.slow_src.out, self.j.side)

    top = Top()
    run(top, fast=True, timeout="30 ms")
    assert top.j.pairs == [(1, True, 1), (2, False, None), (3, True, 2), (4, False, None)]


def test_reaction_error_reports_tag_and_stops_cleanly_running_shutdown(caplog):
    class Faulty(Reactor):
        def __init__(self):
            super().__init__()
            self.t = Timer(period="10 ms")
            self.k = 0
            self.cleaned = False

        @reaction("t")
        def tick(self):
            self.k += 1
            if self.k == 2:
                raise RuntimeError("sensor unplugged")

        @reaction("shutdown")
        def cleanup(self):
            self.cleaned = True

    f = Faulty()
    with pytest.raises(ReactionError) as err:
        run(f, fast=True, timeout="1 s")
    assert f.k == 2 and f.cleaned
    assert err.value.failures[0][:2] == ("Faulty.tick", (10 * MSEC, 0))
    assert "reaction tick (reactor Faulty) raised at tag (10000000, 0)" in caplog.text


def test_on_error_continue_keeps_running():
    class Flaky(Reactor):
        def __init__(self):
            super().__init__()
            self.t = Timer(period="10 ms")
            self.k = 0

        @reaction("t")
        def tick(self):
            self.k += 1
            if self.k % 2:
                raise ValueError("odd")

    f = Flaky()
    run(f, fast=True, timeout="90 ms", on_error="continue")
    assert f.k == 10


def test_bank_broadcast_and_gather_into_multiport():
    class Scale(Reactor):
        def __init__(self, base):
            super().__init__()
            self.inp = Input()
            self.out = Output()
            self.factor = base + self.bank_index

        @reaction("inp", effects="out")
        def go(self):
            self.out.set(self.inp.value * self.factor)

    class Gather(Reactor):
        def __init__(self):
            super().__init__()
            self.ins = Input(width=3)
            self.rows = []

        @reaction("ins")
        def got(self):
            self.rows.append([p.value for p in self.ins])

    class Top(Reactor):
        def __init__(self):
            super().__init__()
            self.src = Emit()
            self.bank = Bank(3, Scale, base=10)
            self.g = Gather()
            self.connect(self.src.out, self.bank.inp, broadcast=True)
            self.connect(self.bank.out, self.g.ins)

    top = Top()
    run(top, fast=True, timeout="10 ms")
    assert [m.bank_index for m in top.bank] == [0, 1, 2]
    assert [m.fqn for m in top.bank] == ["Top.bank[0]", "Top.bank[1]", "Top.bank[2]"]
    assert top.g.rows == [[10, 11, 12], [20, 22, 24]]


def test_hierarchy_container_ports_relay_and_container_reactions_write_child_inputs():
    class Inner(Reactor):
        def __init__(self):
            super().__init__()
            self.inp = Input()
            self.out = Output()

        @reaction("inp", effects="out")
        def double(self):
            self.out.set(self.inp.value * 2)

    class Middle(Reactor):
        def __init__(self):
            super().__init__()
            self.inp = Input()
            self.out = Output()
            self.inner = Inner()
            self.connect(self.inp, self.inner.inp)
            self.connect(self.inner.out, self.out)

    class Top(Reactor):
        def __init__(self):
            super().__init__()
            self.mid = Middle()
            self.rec = Record()
            self.connect(self.mid.out, self.rec.inp)

        @reaction("startup", effects="mid.inp")
        def kick(self):
            self.mid.inp.set(21)

    top = Top()
    run(top, fast=True)
    assert top.rec.seen == [(0, 0, 42)]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda self: self.connect(self.a.out, self.b.ins), "width mismatch"),
        (
            lambda self: self.connect([self.a.out, self.a.out], self.b.ins, broadcast=True),
            "cannot evenly cover",
        ),
    ],
)
def test_connection_width_rules(build, message):
    class Sink3(Reactor):
        def __init__(self):
            super().__init__()
            self.ins = Input(width=3)

    class Top(Reactor):
        def __init__(self):
            super().__init__()
            self.a = Emit()
            self.b = Sink3()
            build(self)

    with pytest.raises(AssemblyError, match=message):
        run(Top(), fast=True, timeout=0)


def test_assembly_errors_name_the_problem():
    class NoSuper(Reactor):
        def __init__(self):
            self.x = Input()

    with pytest.raises(AssemblyError, match="must call super"):
        NoSuper()

    class BadName(Reactor):
        def __init__(self):
            super().__init__()

        @reaction("nothing_here")
        def r(self):
            pass

    with pytest.raises(AssemblyError, match=r"BadName\.r names 'nothing_here'.*no such element"):
        run(BadName(), fast=True)

    class TwoSources(Reactor):
        def __init__(self):
            super().__init__()
            self.a = Emit()
            self.b = Emit()
            self.r = Record()
            self.connect(self.a.out, self.r.inp)
            self.connect(self.b.out, self.r.inp)

    with pytest.raises(AssemblyError, match="two upstream connections"):
        run(TwoSources(), fast=True)


@pytest.mark.parametrize("width", ["3", 0, -1, 2.0, True])
def test_a_bad_multiport_width_is_refused_with_its_value(width):
    # Also in the compiled build, whose argument checks would otherwise answer
    # first with a TypeError that names neither the parameter nor the port.
    with pytest.raises(AssemblyError, match=re.escape(f"positive int, got {width!r}")):
        Output(width=width)


def test_run_takes_truthy_flags_as_it_always_did():
    # The compiled Scheduler wants real bools; run() passes bool(...) on.
    fired = []

    class Tick(Reactor):
        def __init__(self):
            super().__init__()
            self.t = Timer(period="1 ms")

        @reaction("t")
        def go(self):
            fired.append(self.tag)

    run(Tick(), fast=1, timeout="2 ms", keepalive=0)
    assert len(fired) == 3
