"""Per-frame compute times of the demo's nodes, for the A/B harness.

A frame's latency is compute (the models, the rules) plus what carries the data between
them. On a CPU-only machine the detector's ~100 ms varies by several ms from run to run,
more than the middleware costs, so a difference of medians between variants cannot show
the middleware's share. Each node therefore notes, per frame stamp, when its compute began
and ended (CLOCK_MONOTONIC, one clock for every process of a host): the model or the rules,
what the floor runs too, and nothing else. Taking the inputs out of their messages and
building and publishing the output are the middleware's work and stay outside the span. The
harness subtracts the compute on the frame's critical path from the frame's latency,
leaving the time spent carrying the data between the nodes. Off unless
``CARLA_DEMO_TIMING`` names a directory (the harness sets it).
"""

from __future__ import annotations

import atexit
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "CARLA_DEMO_TIMING"


class Timing:
    def __init__(self, node: str) -> None:
        directory = os.environ.get(ENV)
        self._path = os.path.join(directory, f"{node}.csv") if directory else None
        self._rows: list[str] = []
        if self._path:
            atexit.register(self.flush)

    @contextmanager
    def measure(self, stamp_ns: int) -> Iterator[None]:
        start = time.monotonic_ns()
        try:
            yield
        finally:
            if self._path:
                self._rows.append(f"{stamp_ns},{start},{time.monotonic_ns()}\n")

    def flush(self) -> None:
        if self._path and self._rows:
            with open(self._path, "a") as f:
                f.writelines(self._rows)
            self._rows.clear()


def read(directory: str) -> dict[str, dict[int, tuple[int, int]]]:
    """node -> frame stamp -> (callback start, end), from the files the nodes wrote."""
    found: dict[str, dict[int, tuple[int, int]]] = {}
    for name in os.listdir(directory):
        if name.endswith(".csv"):
            with open(os.path.join(directory, name)) as f:
                rows = (line.split(",") for line in f if line.strip())
                found[name[:-4]] = {int(s): (int(a), int(b)) for s, a, b in rows}
    return found
