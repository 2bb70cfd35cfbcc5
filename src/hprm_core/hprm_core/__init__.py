"""HPRM core: a deterministic reactor runtime with Lingua Franca semantics.

Reactors exchange values through ports at logical *tags*; the runtime runs the
reactions of each tag in an order fixed by the program's dependency graph, so
the same inputs give the same outputs, every run. See :mod:`hprm_core.reactor`
for how to write reactors and :mod:`hprm_core.scheduler` for how time advances.

Example::

    from hprm_core import Reactor, Output, Input, Timer, main, reaction, run

    class Source(Reactor):
        def __init__(self):
            super().__init__()
            self.out = Output()
            self.tick = Timer(period="100 ms")

        @reaction("tick", effects="out")
        def emit(self):
            self.out.set(self.elapsed)

    class Sink(Reactor):
        def __init__(self):
            super().__init__()
            self.inp = Input()

        @reaction("inp")
        def show(self):
            print(self.tag, self.inp.value)

    @main(timeout="1 s")
    class App(Reactor):
        def __init__(self):
            super().__init__()
            self.src = Source()
            self.sink = Sink()
            self.connect(self.src.out, self.sink.inp)

    run(App(), fast=True, timeout="1 s")
"""

# First: it decides where the compiled modules are imported from.
from hprm_core import compiled as _compiled  # noqa: F401
from hprm_core.environment import Environment
from hprm_core.errors import (
    AssemblyError,
    CycleError,
    EffectError,
    HprmError,
    ProgramError,
    ReactionError,
)
from hprm_core.program import main, run
from hprm_core.reactor import (
    Bank,
    Input,
    LogicalAction,
    Output,
    PhysicalAction,
    Reactor,
    Timer,
    reaction,
)
from hprm_core.tag import FOREVER, MSEC, NEVER, SEC, USEC, Tag, duration

__version__ = "0.1.0"

__all__ = [
    "FOREVER",
    "MSEC",
    "NEVER",
    "SEC",
    "USEC",
    "AssemblyError",
    "Bank",
    "CycleError",
    "EffectError",
    "Environment",
    "HprmError",
    "Input",
    "LogicalAction",
    "Output",
    "PhysicalAction",
    "ProgramError",
    "ReactionError",
    "Reactor",
    "Tag",
    "Timer",
    "duration",
    "main",
    "reaction",
    "run",
]
