"""hprm_bridge's benchmarks (``hprm bench NAME``), one module each:
``ros2-wire`` (:mod:`.wire`), ``ported-pipeline`` (:mod:`.ported_pipeline`),
``bridge`` (:mod:`.bridge`), ``replay`` (:mod:`.replay`) and ``services``
(:mod:`.services`)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable


def stop_processes(
    procs: Iterable[subprocess.Popen], *, terminate: bool = True, timeout: float = 20
) -> None:
    """End the plain ROS 2 node processes a benchmark started (they spin forever):
    SIGTERM to all (``terminate=False``: they were told to stop otherwise), then
    SIGKILL to any still there after ``timeout`` s."""
    procs = list(procs)
    for p in procs:
        if terminate:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
