"""Publishers made after the start on a topic the node had none of
(hprm_bridge.rclpy.late_entities): with the port declared (--late-publisher), another
federate hears every message, in both coordinations; undeclared, the refusal names the
option; wrong declarations are refused before anything runs."""

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

NODES = Path(__file__).parent / "nodes"
TALKER = NODES / "late_talker.py"
LISTENER = NODES / "listener.py"
DECLARED = "--late-publisher=late_talker=/chatter:std_msgs/msg/String"


def _run(*args, talker=TALKER):
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", talker, LISTENER, *args,
         "--timeout", "10 s"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    return r.returncode, r.stdout + r.stderr


@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
def test_a_declared_late_publisher_is_heard_by_another_federate(coordination):
    code, out = _run(DECLARED, "--coordination", coordination)
    assert code == 0, out
    heard = re.findall(r"^\[listener\] HEARD (.*)$", out, re.M)
    assert heard == [f"late {n}" for n in range(1, 5)], out


def test_an_undeclared_late_publisher_is_refused_naming_the_option():
    code, out = _run()
    assert code != 0, out
    assert "Node.create_publisher(/chatter) after its node started" in out
    assert "--late-publisher NODE=/chatter:std_msgs/msg/String" in out


@pytest.mark.parametrize(
    ("late", "why"),
    [("--late-publisher=late_talker=chatter:std_msgs/msg/String", "expected TOPIC:TYPE"),
     ("--late-publisher=nobody=/chatter:std_msgs/msg/String",
      "--late-publisher names no node nobody"),
     ("--late-publisher=late_talker=/chatter:std_msgs/msg/Nope", "std_msgs/msg/Nope")],
)  # fmt: skip
def test_a_wrong_declaration_is_refused_naming_it(late, why):
    code, out = _run(late)
    assert code != 0 and why in out, out


def test_a_declaration_of_a_topic_the_node_publishes_from_the_start_is_refused():
    code, out = _run("--late-publisher=talker=/chatter:std_msgs/msg/String",
                     talker=NODES / "talker.py")  # fmt: skip
    assert code != 0 and "--late-publisher /chatter: node talker publishes it" in out, out


@pytest.mark.ros2
@pytest.mark.parametrize("backend", ["wire", "rclpy"])
def test_a_declared_late_publisher_reaches_plain_ros2_through_the_gateway(backend, bridge_env):
    """Nobody in the federation subscribes: the declared port is open, and the gateway
    carries it out to a plain rclpy listener (which may miss the first messages, before
    DDS matched it with the gateway's writer, as it would any publisher's)."""
    pytest.importorskip("rclpy", reason="needs a real ROS 2 Humble for the plain listener")
    env = bridge_env(backend)
    listener = subprocess.Popen([sys.executable, str(LISTENER)], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        r = subprocess.run(
            [sys.executable, "-m", "hprm_bridge.ros_cli", "run", TALKER, "--bridge", DECLARED,
             "--param", "late_talker:ticks:=30", "--timeout", "60 s"],
            capture_output=True, text=True, timeout=180, env=env,
        )  # fmt: skip
    finally:
        listener.send_signal(signal.SIGINT)
        try:
            heard_out = listener.communicate(timeout=10)[0]
        except subprocess.TimeoutExpired:
            listener.kill()
            heard_out = listener.communicate()[0]
    assert r.returncode == 0, r.stdout + r.stderr
    heard = [int(n) for n in re.findall(r"^HEARD late (\d+)$", heard_out, re.M)]
    # Once matched, nothing is lost: in order, the last 10 all there. Before both sides
    # matched, an early one may slip through alone (1, then 4 once beside CPU hogs).
    assert heard == sorted(set(heard)) and heard[-10:] == list(range(21, 31)), heard_out


@pytest.mark.ros2
def test_the_late_talker_runs_under_real_rclpy_too(rclpy_until_stop):
    lines = rclpy_until_stop([TALKER])
    assert lines == [f"SENT late {n}" for n in range(1, 5)] + ["STOP"], lines
