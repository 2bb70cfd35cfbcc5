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

The spans go into a memory-mapped file as they are taken: no system call on the frame's
path, and nothing lost when a node is killed or dies at shutdown (rows kept in memory and
written at exit went missing in some plain ROS 2 runs).
"""

from __future__ import annotations

import mmap
import os
import struct
import time

ENV = "CARLA_DEMO_TIMING"
_ROW = struct.Struct("<qqq")  # frame stamp, compute start, compute end (CLOCK_MONOTONIC ns)
_FIRST_ROWS = 1024  # doubled when full


class Timing:
    def __init__(self, node: str) -> None:
        directory = os.environ.get(ENV)
        self._fd = -1
        self._map: mmap.mmap | None = None
        self._rows = 0
        self._stamp = self._start = 0
        if directory:
            self._fd = os.open(os.path.join(directory, f"{node}.spans"),
                               os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)  # fmt: skip
            self._grow(_FIRST_ROWS)

    def _grow(self, rows: int) -> None:
        os.ftruncate(self._fd, rows * _ROW.size)  # the new rows read as zeros: not written
        if self._map is not None:
            self._map.close()
        self._map = mmap.mmap(self._fd, rows * _ROW.size)

    def measure(self, stamp_ns: int) -> Timing:
        """``with timing.measure(stamp):`` around a frame's compute. The instance is its
        own context manager (one span at a time, as a node computes one frame at a time):
        no generator or helper object is made, since what the timing itself costs before
        and after the span falls into the frame's transport."""
        self._stamp = stamp_ns
        return self

    def __enter__(self) -> None:
        self._start = time.monotonic_ns()

    def __exit__(self, *exc: object) -> None:
        if self._map is not None:
            end = time.monotonic_ns()
            offset = self._rows * _ROW.size
            if offset == len(self._map):
                self._grow(2 * self._rows)
            _ROW.pack_into(self._map, offset, self._stamp, self._start, end)
            self._rows += 1


def read(directory: str) -> dict[str, dict[int, tuple[int, int]]]:
    """node -> frame stamp -> (compute start, end), from the files the nodes wrote."""
    found: dict[str, dict[int, tuple[int, int]]] = {}
    for name in os.listdir(directory):
        if name.endswith(".spans"):
            with open(os.path.join(directory, name), "rb") as f:
                rows = _ROW.iter_unpack(f.read())
                found[name[: -len(".spans")]] = {s: (a, b) for s, a, b in rows if b}
    return found
