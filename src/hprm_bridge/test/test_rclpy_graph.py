"""Graph queries of ported nodes (hprm_bridge.rclpy.graph): answered from the federation
graph, fixed before the start, so the same at every tag of every run; and, once plain
ROS 2's discovery has settled, what real rclpy answers for the same node files."""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

NODES = Path(__file__).parent / "nodes"
FILES = [NODES / "graph_probe.py", NODES / "talker.py", NODES / "listener.py"]


def _answers(out: str, when: str) -> dict:
    found = re.search(rf"^(?:\[graph_probe\] )?{when} (.*)$", out, re.M)
    assert found, out
    return json.loads(found.group(1))


def _hprm_run(*args, env=None):
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", *args],
        capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout + r.stderr


TOPICS = [["/chatter", ["std_msgs/msg/String"]], ["/probe", ["std_msgs/msg/Int32"]]]
SERVED = [["/graph_probe/reset", ["std_srvs/srv/Trigger"]]]
FIBONACCI = "example_interfaces/action/Fibonacci"
CALLED = [  # its client's service and its action client's three
    ["/add_two_ints", ["example_interfaces/srv/AddTwoInts"]],
    ["/fibonacci/_action/cancel_goal", ["action_msgs/srv/CancelGoal"]],
    ["/fibonacci/_action/get_result", [f"{FIBONACCI}_GetResult"]],
    ["/fibonacci/_action/send_goal", [f"{FIBONACCI}_SendGoal"]],
]
SUBSCRIBED = [
    TOPICS[0],
    ["/fibonacci/_action/feedback", [f"{FIBONACCI}_FeedbackMessage"]],
    ["/fibonacci/_action/status", ["action_msgs/msg/GoalStatusArray"]],
    TOPICS[1],
]
MINE = {"services": CALLED + SERVED, "served_by_me": SERVED, "called_by_me": CALLED,
        "my_subscriptions": SUBSCRIBED, "hidden_topics": [],
        "actions": [["/fibonacci", [FIBONACCI]]],
        "my_action_clients": [["/fibonacci", [FIBONACCI]]]}  # fmt: skip


def test_queries_answer_from_the_federation_graph():
    out = _hprm_run(*FILES)
    # in the constructor, as rclpy before discovery: the node's own endpoints
    assert _answers(out, "BUILT") == {
        "chatter_publishers": 0, "chatter_subscribers": 1, "probe_subscribers": 1,
        "topics": TOPICS, "nodes": ["graph_probe"], **MINE,
        "talker_publishes": "NodeNameNonExistentError",
    }  # fmt: skip
    assert _answers(out, "RUNNING") == {
        "chatter_publishers": 1, "chatter_subscribers": 2, "probe_subscribers": 1,
        "topics": TOPICS, "nodes": ["graph_probe", "listener", "talker"], **MINE,
        "talker_publishes": [["/chatter", ["std_msgs/msg/String"]]],
    }  # fmt: skip


def test_the_gateway_stands_for_the_ros2_side_of_a_topic_it_carries(bridge_env):
    out = _hprm_run(NODES / "graph_probe.py", "--bridge", "--node-services", env=bridge_env("wire"))
    assert "/chatter (in)" in out  # no publisher inside: the gateway brings it from ROS 2
    running = _answers(out, "RUNNING")
    assert (running["chatter_publishers"], running["chatter_subscribers"]) == (1, 1)
    # its services' ports are services to the node, not topics: the ROS 2 side's clients
    # of ~/reset and server of /add_two_ints, which it carries
    assert (running["services"], running["hidden_topics"]) == (CALLED + SERVED, [])


@pytest.mark.ros2
def test_plain_ros2_answers_the_same_once_discovery_has_settled(bridge_env, stop_node):
    pytest.importorskip(
        "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
    )
    env = bridge_env("rclpy")  # its own DDS domain
    others = [subprocess.Popen([sys.executable, f], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True) for f in FILES[1:]]  # fmt: skip
    try:
        time.sleep(1.0)
        probe = subprocess.run(
            [sys.executable, FILES[0], "--ros-args", "-p", "period:=3.0"],
            capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip
    finally:
        for p in others:
            stop_node(p)
    assert probe.returncode == 0, probe.stdout + probe.stderr
    assert _answers(probe.stdout, "RUNNING") == _answers(_hprm_run(*FILES), "RUNNING")
