"""Fixtures shared by hprm_core's test files.

``arenas``: what this test process holds of the object store (arena fds, arena mappings),
checked empty after the test along with /dev/shm and the process's fds. The object-store
tests use it on every test (``usefixtures`` in their files), and ask for it by name where a
test counts arenas itself.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest

from hprm_core.testing import leaked_shm


class ArenaProbe:
    """This process's hold on the object store's arenas, read from /proc."""

    @staticmethod
    def fds() -> list[str]:
        """Our fds that are hprm arenas (memfd:hprm-arena-...)."""
        out = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                if "hprm-arena-" in os.readlink(f"/proc/self/fd/{fd}"):
                    out.append(fd)
            except OSError:
                pass  # the fd listdir itself used, closed since
        return out

    @staticmethod
    def mappings(pid: str | int = "self") -> list[str]:
        with open(f"/proc/{pid}/maps") as f:
            return [line for line in f if "hprm-arena-" in line]

    @staticmethod
    def open_fds() -> set[str]:
        return set(os.listdir("/proc/self/fd"))


@pytest.fixture
def arenas() -> Iterator[type[ArenaProbe]]:
    """After the test: nothing new in /dev/shm, no arena fd or mapping, no fd leaked."""
    gc.collect()
    shm0, fds0 = set(os.listdir("/dev/shm")), ArenaProbe.open_fds()
    yield ArenaProbe
    gc.collect()
    assert leaked_shm(shm0) == set(), "files left in /dev/shm"
    assert ArenaProbe.fds() == [], "arena fds left open"
    assert ArenaProbe.mappings() == [], "arena mappings left"
    assert ArenaProbe.open_fds() - fds0 == set(), "fds leaked"
