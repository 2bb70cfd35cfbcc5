"""Helpers for tests of HPRM programs (and of HPRM itself).

:class:`FederationRun` launches a federated program as ``hprm run`` would and keeps what
its processes print, so a test can wait for a line while it runs, read everything once it
ended, and check that it left nothing behind. ``leaked_shm`` answers "did this leave
anything in /dev/shm?" on a shared machine where other programs (benchmarks using
``multiprocessing.shared_memory``) create entries of their own: only entries that persist
and that no process outside the caller's own tree holds count. ``modules_with_examples``
and ``run_examples`` keep a package's docstring examples true: an example nobody runs goes
stale with the first change of the API it shows.

Example::

    r = run_federation("pipeline.py", timeout="1 s")
    assert r.code == 0 and "sink: 10 values" in r.text
    r.assert_clean()

    @pytest.mark.parametrize("module", modules_with_examples("my_package"))
    def test_the_docstring_examples_run(module):
        run_examples(module)

    before = set(os.listdir("/dev/shm"))
    run_my_federation()
    assert leaked_shm(before) == set()
"""

from __future__ import annotations

import contextlib
import doctest
import importlib
import importlib.util
import os
import re
import threading
import time
from pathlib import Path
from typing import Any, NoReturn

from hprm_core.launcher import Launch

__all__ = ["FederationRun", "leaked_shm", "modules_with_examples", "run_examples", "run_federation"]


class FederationRun:
    """A launched federation whose output lines are collected (``Launch``'s arguments).

    ``code`` is its exit status once :meth:`wait` returned.
    """

    def __init__(self, program: str | Path, **kwargs: Any) -> None:
        self.lines: list[str] = []
        self.code: int | None = None
        self._lock = threading.Lock()
        self.launch = Launch(program, output=self._out, **kwargs)

    def _out(self, line: str) -> None:
        with self._lock:  # one pump thread per process prints here
            self.lines.append(line)

    def wait(self) -> FederationRun:
        """Until every process exited (``code``: the federation's status)."""
        self.code = self.launch.wait()
        return self

    @property
    def text(self) -> str:
        """All lines printed so far, each prefixed with its process's name."""
        with self._lock:
            return "\n".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 30) -> None:
        """Until a line matches the regular expression ``pattern``; on a timeout the
        federation is stopped (nothing left running) and the error shows its output."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, self.text):
                return
            time.sleep(0.02)
        self.launch.terminate()
        raise AssertionError(f"{pattern!r} never appeared in:\n{self.text}")

    def assert_clean(self) -> None:
        """Nothing of the run is left: no process, no private socket directory, and (the
        arenas being memfds) never an HPRM name in /dev/shm."""
        for proc in self.launch.procs.values():
            assert proc.poll() is not None, "a federation process is still running"
        assert not os.path.exists(self.launch.dir), "the private socket directory was not removed"
        assert not [n for n in os.listdir("/dev/shm") if "hprm" in n]


def run_federation(program: str | Path, **kwargs: Any) -> FederationRun:
    """Launch ``program`` (``Launch``'s keyword arguments) and wait for its end."""
    return FederationRun(program, **kwargs).wait()


def leaked_shm(before: set[str], grace: float = 3.0) -> set[str]:
    """Entries new in /dev/shm since ``before`` that are still there after
    ``grace`` seconds (a leak stays; a concurrent run's entry goes away), and that no
    live process outside this one and its children maps or holds open: a concurrent
    run that lasts (another pytest-xdist worker's benchmark) holds its entries, while a
    leak is an entry nobody holds, or one this process tree still does."""
    suspects = set(os.listdir("/dev/shm")) - before
    deadline = time.monotonic() + grace
    while suspects and time.monotonic() < deadline:
        time.sleep(0.05)
        suspects &= set(os.listdir("/dev/shm"))
    return suspects - _held_by_others(suspects) if suspects else suspects


def _held_by_others(names: set[str]) -> set[str]:
    """Those of ``names`` (in /dev/shm) that a process outside our own tree maps or has open."""
    parent = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:  # "pid (comm) state ppid ..."
                parent[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    ours = {os.getpid()}
    grew = True
    while grew:
        kids = {pid for pid, ppid in parent.items() if ppid in ours} - ours
        ours |= kids
        grew = bool(kids)
    paths = {f"/dev/shm/{n}": n for n in names}
    held = set()
    for pid in parent.keys() - ours:
        try:
            with open(f"/proc/{pid}/maps") as f:
                maps = f.read()
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # gone meanwhile, or not ours to read
        held |= {n for p, n in paths.items() if p in maps}
        for fd in fds:
            with contextlib.suppress(OSError, KeyError):  # closed meanwhile; another file
                held.add(paths[os.readlink(f"/proc/{pid}/fd/{fd}")])
    return held


def modules_with_examples(package: str) -> list[str]:
    """The modules of ``package`` (subpackages included) whose source holds a docstring
    example (``>>>``), found without importing any: a test parametrized over them checks
    a module added later with no list to keep up to date."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"no package {package!r} to look for examples in")
    root = Path(spec.origin).parent
    names = []
    for path in sorted(root.rglob("*.py")):
        if re.search(r"^\s*>>> ", path.read_text(encoding="utf-8"), re.MULTILINE):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def run_examples(module: str) -> None:
    """Run ``module``'s docstring examples (doctest; ``...`` matches anything). A failing
    example raises AssertionError with doctest's report. A module that needs what this
    machine lacks (its import fails on another package: rclpy, torch) is skipped under
    pytest, with that package named; a broken module of its own still fails."""
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        ours = module.split(".")[0]
        if exc.name is None or exc.name.split(".")[0] == ours:
            raise
        _skip(f"{module} needs {exc.name}, not installed here")
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = doctest.DocTestFinder().find(mod, module)
    for test in tests:
        runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    if result.attempted == 0:
        if any(test.examples for test in tests):
            _skip(f"every example in {module} is marked doctest: +SKIP")
        # compiled (mypyc): doctest sees no function of a C extension; from source it does
        _skip(f"doctest finds no example in {module} as loaded ({mod.__file__})")
    assert result.failed == 0, (
        f"{result.failed} of {result.attempted} examples failed:\n" + "".join(report)
    )


def _skip(why: str) -> NoReturn:
    import pytest  # only under pytest: a check that cannot run here is a skip

    pytest.skip(why)
