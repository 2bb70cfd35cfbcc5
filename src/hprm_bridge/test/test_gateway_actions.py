"""Actions across the gateway (``hprm-ros run --bridge``): an action is three services
and two topics (hprm_bridge.action_ports), so a ported action server answers
``ros2 action send_goal``, and a ported action client drives a plain rclpy server.
Real processes and DDS traffic; the plain side is real ROS 2 (the ros2 CLI, rclpy:
test/nodes/fibonacci_server.py), so these run where a Humble is sourced; the gateway
on each backend."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

NODES = Path(__file__).parent / "nodes"
BACKENDS = pytest.mark.parametrize("backend", ["wire", "rclpy"])
pytestmark = pytest.mark.ros2


def _federation(env, node, *args):
    """``hprm-ros run NODE --bridge`` in its own process group (stopped by a Ctrl-C)."""
    return subprocess.Popen(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", str(NODES / node), "--bridge",
         *args],
        env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip


@BACKENDS
def test_ros2_action_send_goal_reaches_a_ported_server(
    ctrl_c, backend, bridge_env, require_ros2_cli
):
    """The goal, the result request and the cancel service are served to ROS 2, the
    feedback and status topics published to it: the CLI sees what a plain server gives."""
    require_ros2_cli()
    env = bridge_env(backend)
    fed = _federation(env, "fibonacci_server.py", "--timeout", "120 s",
                      "--param", "fibonacci_server:period:=0.1")  # fmt: skip
    try:
        cli = subprocess.run(
            ["ros2", "action", "send_goal", "-f", "/fibonacci",
             "example_interfaces/action/Fibonacci", "{order: 4}"],
            env=env, capture_output=True, text=True, timeout=90,
        )  # fmt: skip
    finally:
        fed_out = ctrl_c(fed)
    out = cli.stdout + cli.stderr
    assert "Goal finished with status: SUCCEEDED" in out, out + fed_out
    assert out.count("Feedback:") == 3, out
    result = out.split("Result:")[1]
    assert re.findall(r"^- (\d+)$", result, re.M) == ["0", "1", "1", "2", "3"], out
    assert fed_out.count("[fibonacci_server] EXECUTE order 4") == 1, fed_out
    assert f"gateway ({backend}): " in fed_out


@BACKENDS
def test_a_ported_action_client_drives_a_plain_ros2_server(
    backend, bridge_env, require_ros2_cli, stop_node, ended
):
    """The goal and result calls reach the rclpy server; its feedback enters the
    federation at its arrival (so it may come before the goal's acceptance)."""
    require_ros2_cli()
    env = bridge_env(backend)
    server = subprocess.Popen(
        [sys.executable, str(NODES / "fibonacci_server.py"), "--ros-args", "-p", "period:=0.1"],
        env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        fed = _federation(env, "fibonacci_client.py", "--timeout", "60 s")
        fed_out = ended(fed, 120)
    finally:
        served = stop_node(server)
    assert fed.returncode == 0, fed_out
    client = re.findall(r"^\[fibonacci_client\] ([A-Z]+.*)$", fed_out, re.M)
    assert sorted(client[:-1]) == sorted(
        ["ACCEPTED"] + [f"FEEDBACK {[0, 1, 1, 2, 3, 5][: n + 3]}" for n in range(4)]
    ), fed_out + served
    assert client[-1] == "RESULT status 4 [0, 1, 1, 2, 3, 5]"
    assert "EXECUTE order 5" in served
