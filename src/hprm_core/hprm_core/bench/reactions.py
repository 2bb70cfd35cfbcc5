"""``hprm bench reactions``: trivial reaction invocations per second.

Two shapes, each run through the reactor runtime (fast mode, one core) and, in
the same run, as the same work done by plain Python callbacks on an
``asyncio`` event loop (``call_soon`` hand-offs), the cheapest way Python
programs usually chain callbacks:

- chain: a timer starts a chain of ``depth`` reactors, each forwarding an int;
- fan-out: a timer's reaction writes one output connected to ``width`` sinks.

The ratio ``hprm / asyncio`` is what to watch (goal: >= 1/3), together with
the absolute rate (goal: >= 200,000 reactions/s). The runtime does more per
invocation than asyncio (tag ordering, presence, effect checks), so it cannot
be free; it must stay within a small factor. The hprm shapes also run, in the
same run, in a child process with ``HPRM_PURE_PYTHON=1``: what the compiled
build (:mod:`hprm_core.compiled`) gains; ``compiled`` in the parameters says
which build the other rows ran.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

from hprm_core import bench, compiled
from hprm_core.environment import Environment
from hprm_core.reactor import Input, Output, Reactor, Timer, reaction


class _Head(Reactor):
    def __init__(self) -> None:
        super().__init__()
        self.tick = Timer(period=1)
        self.out = Output()
        self.n = 0

    @reaction("tick", effects="out")
    def fire(self) -> None:
        self.n += 1
        self.out.set(self.n)


class _Stage(Reactor):
    def __init__(self) -> None:
        super().__init__()
        self.inp = Input()
        self.out = Output()

    @reaction("inp", effects="out")
    def forward(self) -> None:
        self.out.set(self.inp.value)


class _Sink(Reactor):
    def __init__(self) -> None:
        super().__init__()
        self.inp = Input()
        self.last = 0

    @reaction("inp")
    def take(self) -> None:
        self.last = self.inp.value


class _Chain(Reactor):
    def __init__(self, depth: int) -> None:
        super().__init__()
        self.head = _Head()
        prev = self.head.out
        for i in range(depth - 1):
            stage = _Stage()
            setattr(self, f"s{i}", stage)
            self.connect(prev, stage.inp)
            prev = stage.out


class _FanOut(Reactor):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.head = _Head()
        for i in range(width):
            sink = _Sink()
            setattr(self, f"k{i}", sink)
            self.connect(self.head.out, sink.inp)


def _hprm(top: Reactor, tags: int) -> tuple[int, float]:
    """(reactions run, seconds) for ``tags`` tags of a fast-mode program."""
    env = Environment(top, fast=True, timeout=tags - 1)  # timer period is 1 ns
    per_tag = sum(1 for r in env.reactions if r.triggers and r.name != "startup")
    t0 = time.perf_counter()
    env.run()
    return per_tag * tags, time.perf_counter() - t0


def _asyncio_chain(depth: int, tags: int) -> tuple[int, float]:
    loop = asyncio.new_event_loop()
    state = {"value": 0, "remaining": tags}
    done = loop.create_future()

    def make_stage(i: int) -> Callable[[int], None]:
        if i == depth - 1:

            def last(v: int) -> None:
                state["value"] = v
                state["remaining"] -= 1
                if state["remaining"]:
                    loop.call_soon(stages[0], v + 1)
                else:
                    done.set_result(None)

            return last

        def stage(v: int) -> None:
            loop.call_soon(stages[i + 1], v)

        return stage

    stages = [make_stage(i) for i in range(depth)]
    loop.call_soon(stages[0], 1)
    t0 = time.perf_counter()
    loop.run_until_complete(done)
    dt = time.perf_counter() - t0
    loop.close()
    return depth * tags, dt


def _asyncio_fanout(width: int, tags: int) -> tuple[int, float]:
    loop = asyncio.new_event_loop()
    sinks = [0] * width
    state = {"remaining": tags}
    done = loop.create_future()

    def sink(i: int, v: int) -> None:
        sinks[i] = v
        if i == width - 1:
            state["remaining"] -= 1
            if state["remaining"]:
                loop.call_soon(head, v + 1)
            else:
                done.set_result(None)

    def head(v: int) -> None:
        for i in range(width):
            loop.call_soon(sink, i, v)

    loop.call_soon(head, 1)
    t0 = time.perf_counter()
    loop.run_until_complete(done)
    dt = time.perf_counter() - t0
    loop.close()
    return (width + 1) * tags, dt


def _best(fn: Callable[[], tuple[int, float]], repeats: int) -> float:
    """Best rate over ``repeats`` runs: the least-disturbed one on a noisy machine."""
    return max(n / dt for n, dt in (fn() for _ in range(repeats)))


def _hprm_rates(depth: int, width: int, tags: int, repeats: int) -> tuple[float, float]:
    """(chain, fan-out) reactions/s through the runtime, in this process."""
    return (
        _best(lambda: _hprm(_Chain(depth), tags), repeats),
        _best(lambda: _hprm(_FanOut(width), tags), repeats),
    )


def _hprm_rates_pure_python(depth: int, width: int, tags: int, repeats: int) -> list[float]:
    """:func:`_hprm_rates` in a child process that runs every module from source."""
    code = (
        "import json, sys; from hprm_core.bench.reactions import _hprm_rates; "
        f"print(json.dumps(_hprm_rates({depth}, {width}, {tags}, {repeats})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "HPRM_PURE_PYTHON": "1"},
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout
    return json.loads(out)


def measure(depth: int, width: int, tags: int, repeats: int) -> dict:
    chain_h, fan_h = _hprm_rates(depth, width, tags, repeats)
    chain_a = _best(lambda: _asyncio_chain(depth, tags), repeats)
    fan_a = _best(lambda: _asyncio_fanout(width, tags), repeats)
    chain_p, fan_p = _hprm_rates_pure_python(depth, width, tags, repeats)
    rows = [
        {"variant": f"hprm chain (depth {depth})", "reactions_per_s": chain_h},
        {"variant": f"asyncio chain (depth {depth})", "reactions_per_s": chain_a},
        {"variant": f"hprm chain (depth {depth}), pure python", "reactions_per_s": chain_p},
        {"variant": f"hprm fan-out (width {width})", "reactions_per_s": fan_h},
        {"variant": f"asyncio fan-out (width {width})", "reactions_per_s": fan_a},
        {"variant": f"hprm fan-out (width {width}), pure python", "reactions_per_s": fan_p},
    ]
    ratios = {
        "chain hprm/asyncio": chain_h / chain_a,
        "fan-out hprm/asyncio": fan_h / fan_a,
        "chain hprm/hprm pure python": chain_h / chain_p,
        "fan-out hprm/hprm pure python": fan_h / fan_p,
    }
    params = {
        "compiled": compiled.is_compiled(),
        "depth": depth,
        "width": width,
        "tags": tags,
        "repeats": repeats,
    }
    return bench.result("reactions", params, rows, ratios)


def main(argv: list[str] | None = None) -> int:
    p = bench.parser("reactions", "Trivial reaction invocations per second vs asyncio callbacks")
    p.add_argument("--depth", type=bench.at_least(1), default=10, help="reactors in the chain")
    p.add_argument("--width", type=bench.at_least(1), default=10, help="sinks in the fan-out")
    args = p.parse_args(argv)
    tags, repeats = (2_000, 1) if args.quick else (20_000, 3)
    doc = measure(args.depth, args.width, tags, repeats)
    doc["params"]["quick"] = args.quick
    bench.report(doc, args)
    return 0
