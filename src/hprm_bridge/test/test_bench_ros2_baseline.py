"""The plain ROS 2 baselines' DDS tuning (``hprm_bridge.bench.ros2_baseline_env``): what the
benchmarks give real rclpy's Cyclone DDS, and that a real node takes it."""

import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hprm_bridge.bench import ros2_baseline_env
from hprm_bridge.wire.dds_config import random_domain_id


def test_the_tuning_comes_before_the_users_own_cyclone_settings():
    tuned = ros2_baseline_env({"PATH": "/bin"})
    assert tuned["PATH"] == "/bin"
    assert tuned["CYCLONEDDS_URI"].startswith("<CycloneDDS>")
    assert "SocketReceiveBufferSize" in tuned["CYCLONEDDS_URI"]
    mine = "file:///home/me/cyclone.xml"
    listed = ros2_baseline_env({"CYCLONEDDS_URI": f" {mine} "})["CYCLONEDDS_URI"].split(",")
    assert listed == [tuned["CYCLONEDDS_URI"], mine]  # later fragments override earlier ones


def _receive_buffers(environ: dict[str, str]) -> list[int]:
    """The receive buffers (bytes) of the UDP sockets a real rclpy node opens (``ss``)."""
    code = ("import os, subprocess, rclpy; rclpy.init(); n = rclpy.create_node('rcvbuf'); "
            "print(subprocess.run(['ss', '-uampn'], capture_output=True, text=True).stdout, "
            "'PID', os.getpid()); n.destroy_node(); rclpy.shutdown()")  # fmt: skip
    env = dict(environ, ROS_DOMAIN_ID=str(random_domain_id()))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr  # a tuning Cyclone refuses fails the node here
    table, pid = r.stdout.rsplit("PID", 1)
    ours = f"pid={pid.strip()},"  # ss prints a socket's buffers on the line after it
    return [int(nxt.split("rb")[1].split(",")[0])
            for line, nxt in itertools.pairwise(table.splitlines()) if ours in line]  # fmt: skip


@pytest.mark.ros2
def test_a_real_rclpy_node_takes_the_larger_receive_buffer():
    """Real rclpy on Cyclone DDS: the tuning is accepted and the node's sockets get the
    larger buffer, as far as the kernel allows."""
    pytest.importorskip("rclpy", reason="needs a real ROS 2 Humble (source a Humble install)")
    if shutil.which("ss") is None:
        pytest.skip("needs ss (iproute2) to read the sockets' buffers")
    cap = int(Path("/proc/sys/net/core/rmem_max").read_text())
    plain = {k: v for k, v in os.environ.items() if k != "CYCLONEDDS_URI"}
    before, after = _receive_buffers(plain), _receive_buffers(ros2_baseline_env(plain))
    assert before and after
    if 2 * cap <= max(before):
        pytest.skip(f"net.core.rmem_max is {cap}: the kernel allows no larger buffer here")
    assert min(after) == 2 * min(cap, 8 << 20) > max(before)  # the kernel doubles what it grants
