"""Same inputs, same reaction sequence and outputs: every run, and across processes."""

import io
import subprocess
import sys
from pathlib import Path

from hprm_core import Bank, Input, LogicalAction, Output, Reactor, Timer, reaction, run
from hprm_core.trace import deterministic_view

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


class Source(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output()
        self.t = Timer(period="1 ms")
        self.k = 0

    @reaction("t", effects="out")
    def emit(self):
        self.k += 1
        self.out.set(self.k)


class Stage(Reactor):
    """Each bank member does different work and may re-trigger itself at a microstep."""

    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.out = Output()
        self.retry = LogicalAction()
        self.acc = 0

    @reaction("inp", effects=("out", "retry"))
    def work(self):
        self.acc += self.inp.value * (self.bank_index + 1)
        if (self.inp.value + self.bank_index) % 3 == 0:
            self.retry.schedule(self.acc)
        else:
            self.out.set(self.acc)

    @reaction("retry", effects="out")
    def again(self):
        self.out.set(-self.retry.value)


class Merge(Reactor):
    def __init__(self, width):
        super().__init__()
        self.ins = Input(width=width)
        self.out = Output()

    @reaction("ins", effects="out")
    def merge(self):
        self.out.set(tuple(p.value if p.is_present else None for p in self.ins))


class Sink(Reactor):
    def __init__(self):
        super().__init__()
        self.a = Input()
        self.b = Input()
        self.rows = []

    @reaction("a", "b")
    def take(self):
        self.rows.append((self.a.value, self.b.value))


class FanOutFanIn(Reactor):
    def __init__(self):
        super().__init__()
        self.src = Source()
        self.left = Bank(4, Stage)
        self.right = Bank(3, Stage)
        self.mleft = Merge(4)
        self.mright = Merge(3)
        self.sink = Sink()
        self.connect(self.src.out, self.left.inp, broadcast=True)
        self.connect(self.src.out, self.right.inp, broadcast=True)
        self.connect(self.left.out, self.mleft.ins)
        self.connect(self.right.out, self.mright.ins, after="2 ms")
        self.connect(self.mleft.out, self.sink.a)
        self.connect(self.mright.out, self.sink.b)


def _trace_once() -> list[dict]:
    buf = io.StringIO()
    run(FanOutFanIn(), fast=True, timeout="50 ms", trace=buf)
    return deterministic_view(buf.getvalue().splitlines())


def test_fan_out_fan_in_with_banks_gives_identical_traces_in_20_runs():
    first = _trace_once()
    assert len(first) > 500  # the program really did something
    assert any(rec["tag"][1] > 0 for rec in first)  # microsteps are exercised
    for _ in range(19):
        assert _trace_once() == first


def test_trace_records_reaction_tag_presence_and_written_digests():
    recs = _trace_once()
    merges = [r for r in recs if r["reactor"] == "FanOutFanIn.mleft" and r["tag"] == [0, 1]]
    assert len(merges) == 1
    assert merges[0]["reaction"] == "merge"
    assert set(merges[0]["present"]) <= {f"ins[{i}]" for i in range(4)}
    assert list(merges[0]["written"]) == ["out"] and len(merges[0]["written"]["out"]) == 16
    seqs = [r["seq"] for r in recs]
    assert seqs == list(range(len(recs)))


def test_traces_from_separate_processes_are_identical(tmp_path):
    outs = []
    for i in range(2):
        path = tmp_path / f"run{i}.jsonl"
        subprocess.run(
            [sys.executable, "-m", "hprm_core.cli", "run", str(EXAMPLES / "bank.py"),
             "--fast", "--trace", str(path)],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        outs.append(deterministic_view(path.read_text().splitlines()))
    assert outs[0] and outs[0] == outs[1]
