"""The RTI as a process (`hprm_core.rti_process`): a real ``hprm rti``, its scheduling
policy read back from the kernel, and its exit on SIGTERM."""

import os
import signal
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "hprm_core.cli"]


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="no SCHED_BATCH (not Linux)")
def test_the_rti_runs_as_a_batch_task_and_leaves_on_sigterm(tmp_path):
    """SCHED_BATCH: its wake-ups do not preempt the federates it coordinates (why:
    `rti_process._yield_to_federates`)."""
    rti = subprocess.Popen(
        [*CLI, "rti", "--address", f"unix:{tmp_path}/rti.sock", "--federates", "a,b",
         "--federation", "batch"],
        env=dict(os.environ, HPRM_SECRET="batch", PYTHONUNBUFFERED="1"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert any(line.startswith("RTI_ADDRESS") for line in rti.stdout), "no address"
        assert os.sched_getscheduler(rti.pid) == os.SCHED_BATCH
        assert os.getpriority(os.PRIO_PROCESS, rti.pid) == os.getpriority(os.PRIO_PROCESS, 0)
        rti.send_signal(signal.SIGTERM)
        rti.communicate(timeout=30)
    finally:
        if rti.poll() is None:
            rti.kill()
            rti.wait()
    assert rti.returncode == 128 + signal.SIGTERM
    assert not (tmp_path / "rti.sock").exists()
