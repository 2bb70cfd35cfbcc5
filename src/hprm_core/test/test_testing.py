"""hprm_core.testing's leak check, with the other pytest-xdist workers beside it: an entry
in /dev/shm that nobody holds, or that this test's process tree holds, is a leak; one that
an unrelated process (another worker's benchmark) has mapped is not."""

import mmap
import os
import subprocess
import sys
import textwrap
import time

import pytest

from hprm_core.testing import leaked_shm

HOLD = textwrap.dedent("""
    import mmap, os, sys, time
    if sys.argv[2] == "orphan" and os.fork():
        os._exit(0)  # the holder goes on as a grandchild, adopted away from the test
    with open("/dev/shm/" + sys.argv[1], "w+b") as f:
        f.truncate(4096)
        m = mmap.mmap(f.fileno(), 4096)
    print(os.getpid(), flush=True)
    time.sleep(60)
""")


@pytest.fixture
def shm_name():
    name = f"leak-check-{os.getpid()}-{time.monotonic_ns()}"
    yield name
    if os.path.exists(f"/dev/shm/{name}"):
        os.unlink(f"/dev/shm/{name}")


def _held_by(how, name):
    """A process holding /dev/shm/``name`` mapped: our child, or an orphan not in our tree."""
    p = subprocess.Popen([sys.executable, "-c", HOLD, name, how], stdout=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    return p, pid


@pytest.mark.parametrize("how", ["child", "orphan"])
def test_an_entry_held_by_an_unrelated_process_is_not_a_leak(how, shm_name):
    before = set(os.listdir("/dev/shm"))
    p, pid = _held_by(how, shm_name)
    try:
        leaked = leaked_shm(before, grace=0.2)
    finally:
        os.kill(pid, 9)
        p.wait()
    # our own child's hold is the test's leak; an orphan belongs to nobody we started
    assert leaked == ({shm_name} if how == "child" else set())


def test_an_entry_nobody_holds_or_we_hold_is_a_leak(shm_name):
    before = set(os.listdir("/dev/shm"))
    with open(f"/dev/shm/{shm_name}", "w+b") as f:
        f.truncate(4096)
    assert leaked_shm(before, grace=0.2) == {shm_name}  # left behind, held by nobody
    with open(f"/dev/shm/{shm_name}", "r+b") as f:
        m = mmap.mmap(f.fileno(), 4096)
    try:
        assert leaked_shm(before, grace=0.2) == {shm_name}  # mapped by this very process
    finally:
        m.close()
