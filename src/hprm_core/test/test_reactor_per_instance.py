"""Elements and reactions made per instance (Reactor.attach, add_reaction) and
port taps: what an rclpy node's create_subscription/create_publisher/
create_timer build on, run by the real scheduler."""

import pytest

from hprm_core import (  # fmt: skip
    AssemblyError,
    EffectError,
    Input,
    Output,
    ReactionError,
    Reactor,
    Timer,
    reaction,
    run,
)
from hprm_core.environment import Environment


class Node(Reactor):
    """Like an rclpy node: a helper creates its ports and callbacks in __init__."""

    def __init__(self):
        super().__init__()
        self.log = []
        self.timer = Timer(period="10 ms")

    @reaction("timer")
    def declared(self):  # class-declared: runs before any added reaction
        self.log.append(("declared", self.elapsed))


class Publisher:
    """A helper object, created after super().__init__(), that owns a port."""

    def __init__(self, node, topic):
        self.port = node.attach(topic, Output())


def test_added_reactions_run_after_the_class_ones_in_the_order_added():
    class Talker(Node):
        def __init__(self):
            super().__init__()
            self.pub = Publisher(self, "chatter")
            count = [0]

            def on_timer():  # a closure, no self
                count[0] += 1
                self.pub.port.set(count[0])
                self.log.append(("closure", count[0]))

            self.add_reaction(on_timer, self.timer, effects=self.pub.port)
            self.add_reaction(self.second, "timer")  # a bound method, by name

        def second(self):
            self.log.append(("bound", self.elapsed))

    class Listener(Reactor):
        def __init__(self):
            super().__init__()
            self.got = []
            self.attach("sub", Input())
            self.add_reaction(lambda: self.got.append(self.sub.value), self.sub)

    class Main(Reactor):
        def __init__(self):
            super().__init__()
            self.talker = Talker()
            self.listener = Listener()
            self.connect(self.talker.chatter, self.listener.sub)

    m = Main()
    run(m, fast=True, timeout="25 ms")
    assert m.talker.log == [
        ("declared", 0), ("closure", 1), ("bound", 0),
        ("declared", 10_000_000), ("closure", 2), ("bound", 10_000_000),
        ("declared", 20_000_000), ("closure", 3), ("bound", 20_000_000),
    ]  # fmt: skip
    assert m.listener.got == [1, 2, 3]
    names = [r.name for r in m.talker._reactions]
    assert names == ["declared", "on_timer", "second"]
    assert m.listener._reactions[0].name == "reaction"  # a lambda gets a plain name


def test_added_reactions_take_part_in_precedence_and_cycle_detection():
    class A(Reactor):
        def __init__(self):
            super().__init__()
            self.attach("inp", Input())
            self.attach("out", Output())
            self.add_reaction(lambda: self.out.set(self.inp.value), self.inp, effects=self.out)

    class Loop(Reactor):
        def __init__(self):
            super().__init__()
            self.a = A()
            self.b = A()
            self.connect(self.a.out, self.b.inp)
            self.connect(self.b.out, self.a.inp)

    with pytest.raises(AssemblyError, match=r"zero-delay cycle: .*Loop\.[ab]\.reaction"):
        Environment(Loop())


def test_effects_are_enforced_on_added_reactions():
    class Sneaky(Reactor):
        def __init__(self):
            super().__init__()
            self.attach("out", Output())
            self.add_reaction(lambda: self.out.set(1), "startup", name="sneak")

    with pytest.raises(ReactionError) as info:
        run(Sneaky(), fast=True)
    assert isinstance(info.value.__cause__, EffectError)
    assert "Sneaky.sneak" in str(info.value) and "Sneaky.out" in str(info.value)


def test_add_reaction_and_attach_refuse_bad_input_with_the_reason():
    class R(Reactor):
        def __init__(self):
            super().__init__()
            self.out = Output()

    r = R()
    with pytest.raises(AssemblyError, match="give it a name first"):
        r.add_reaction(lambda: None, Input())  # not part of r
    with pytest.raises(AssemblyError, match="is not callable"):
        r.add_reaction(42, "startup")
    with pytest.raises(AssemblyError, match="already has an attribute 'out'"):
        r.attach("out", Output())
    with pytest.raises(AssemblyError, match=r"without '\.'"):
        r.attach("camera.image", Input())
    with pytest.raises(AssemblyError, match="takes a port, timer, action"):
        r.attach("x", 3)
    r.add_reaction(lambda: None, "startup")
    r.add_reaction(lambda: None, "startup")
    assert [s.name for s in r._added_reactions] == ["reaction", "reaction_2"]
    run(r, fast=True)
    with pytest.raises(AssemblyError, match="before the program runs"):
        r.add_reaction(lambda: None, "startup")


def test_a_deadline_handler_can_be_given_to_an_added_reaction():
    import time

    class Slow(Reactor):
        def __init__(self):
            super().__init__()
            self.seen = []
            self.add_reaction(
                lambda: self.seen.append("ran"),
                "startup",
                deadline="1 ns",
                deadline_missed=lambda: self.seen.append("missed"),
            )
            self.add_reaction(lambda: time.sleep(0.01), "startup")

        @reaction("startup")
        def first(self):
            time.sleep(0.01)  # the added reaction now starts late

    s = Slow()
    run(s)
    assert s.seen == ["missed"]


def test_a_tap_sees_every_value_set_on_a_port_until_removed():
    class Count(Reactor):
        def __init__(self):
            super().__init__()
            self.out = Output()
            self.t = Timer(period="1 ms")
            self.n = 0

        @reaction("t", effects="out")
        def tick(self):
            self.n += 1
            self.out.set(self.n)
            if self.n == 3:
                untap()

    c = Count()
    seen = []
    untap = c.out.tap(lambda port, value: seen.append((port.fqn, value)))
    run(c, fast=True, timeout="5 ms")
    assert seen == [("Count.out", 1), ("Count.out", 2), ("Count.out", 3)]
