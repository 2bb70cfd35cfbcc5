"""Putting the calling thread, and only it, on one CPU (the harness's ``cpu``: `carla_demo.ab`).

A thread, not the process: the models' worker threads (onnxruntime's), started before, keep
their CPUs. On Linux ``sched_setaffinity(0, ...)`` acts on the calling thread.
"""

from __future__ import annotations

import os


def check(cpu: int) -> None:
    """Raises ValueError naming the CPUs there are when `cpu` is not one of them."""
    allowed = os.sched_getaffinity(0)
    if cpu not in allowed:
        raise ValueError(f"cpu {cpu}: this process may run on CPUs {sorted(allowed)} only")


def pin_thread(cpu: int) -> None:
    check(cpu)
    os.sched_setaffinity(0, {cpu})
