"""Helpers for tests of HPRM programs (and of HPRM itself).

``leaked_shm`` answers "did this leave anything in /dev/shm?" on a shared
machine where other programs (benchmarks using ``multiprocessing.shared_memory``)
create short-lived entries: only entries that persist count.

Example::

    before = set(os.listdir("/dev/shm"))
    run_my_federation()
    assert leaked_shm(before) == set()
"""

from __future__ import annotations

import os
import time


def leaked_shm(before: set[str], grace: float = 3.0) -> set[str]:
    """Entries new in /dev/shm since ``before`` that are still there after
    ``grace`` seconds (a leak stays; a concurrent run's entry goes away)."""
    suspects = set(os.listdir("/dev/shm")) - before
    deadline = time.monotonic() + grace
    while suspects and time.monotonic() < deadline:
        time.sleep(0.05)
        suspects &= set(os.listdir("/dev/shm"))
    return suspects
