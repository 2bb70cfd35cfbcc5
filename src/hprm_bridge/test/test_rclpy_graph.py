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
PARAMETER_SERVICES = {"describe_parameters": "DescribeParameters",
                      "get_parameter_types": "GetParameterTypes",
                      "get_parameters": "GetParameters", "list_parameters": "ListParameters",
                      "set_parameters": "SetParameters",
                      "set_parameters_atomically": "SetParametersAtomically"}  # fmt: skip


def _parameter_services(node):
    """The six services every rclpy node serves."""
    return [[f"/{node}/{name}", [f"rcl_interfaces/srv/{kind}"]]
            for name, kind in PARAMETER_SERVICES.items()]  # fmt: skip


EVERY_NODES = {node: _parameter_services(node) for node in ("listener", "talker")}
SERVED = sorted(
    [*_parameter_services("graph_probe"), ["/graph_probe/reset", ["std_srvs/srv/Trigger"]]]
)
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
INF, GID = "Infinite", 24  # rmw's durations resolved; the gid's size
DEFAULT = ["KEEP_LAST", 10, "RELIABLE", "VOLATILE", "AUTOMATIC", INF, INF, INF]
PROBE_PUB = [
    "PUBLISHER",
    "/",
    "graph_probe",
    "std_msgs/msg/Int32",
    GID,
    "KEEP_LAST",
    3,
    "RELIABLE",
    "TRANSIENT_LOCAL",
    "AUTOMATIC",
    INF,
    "2000000000 nanoseconds",
    INF,
]
PROBE_SUB = [
    "SUBSCRIPTION",
    "/",
    "graph_probe",
    "std_msgs/msg/Int32",
    GID,
    "KEEP_LAST",
    5,
    "BEST_EFFORT",
    "VOLATILE",
    "AUTOMATIC",
    INF,
    INF,
    INF,
]
STRING = "std_msgs/msg/String"
MY_ENDPOINTS = [PROBE_PUB, PROBE_SUB, ["SUBSCRIPTION", "/", "graph_probe", STRING, GID, *DEFAULT]]
MINE = {"services": CALLED + SERVED, "served_by_me": SERVED, "called_by_me": CALLED,
        "my_subscriptions": SUBSCRIBED, "hidden_topics": [],
        "actions": [["/fibonacci", [FIBONACCI]]],
        "my_action_clients": [["/fibonacci", [FIBONACCI]]], "dds_named": 1}  # fmt: skip


def test_queries_answer_from_the_federation_graph():
    out = _hprm_run(*FILES)
    # in the constructor, as rclpy before discovery: the node's own endpoints
    assert _answers(out, "BUILT") == {
        "chatter_publishers": 0, "chatter_subscribers": 1, "probe_subscribers": 1,
        "topics": TOPICS, "nodes": ["graph_probe"], **MINE,
        "ready": [True, True],  # not known before the start: a main goes on to spin
        "talker_publishes": "NodeNameNonExistentError", "endpoints": MY_ENDPOINTS,
    }  # fmt: skip
    assert _answers(out, "RUNNING") == {
        "chatter_publishers": 1, "chatter_subscribers": 2, "probe_subscribers": 1,
        "topics": TOPICS, "nodes": ["graph_probe", "listener", "talker"], **MINE,
        "services": sorted(CALLED + SERVED + EVERY_NODES["listener"] + EVERY_NODES["talker"]),
        "ready": [False, False],  # nobody serves /add_two_ints or /fibonacci
        "talker_publishes": [["/chatter", ["std_msgs/msg/String"]]],
        # each endpoint's QoS as the node asked for it, as rmw_cyclonedds reports it
        "endpoints": sorted([*MY_ENDPOINTS, ["PUBLISHER", "/", "talker", STRING, GID, *DEFAULT],
                             ["SUBSCRIPTION", "/", "listener", STRING, GID, *DEFAULT]]),
    }  # fmt: skip


def test_the_gateway_stands_for_the_ros2_side_of_a_topic_it_carries(bridge_env):
    out = _hprm_run(NODES / "graph_probe.py", "--bridge", "--node-services", env=bridge_env("wire"))
    assert "/chatter (in)" in out  # no publisher inside: the gateway brings it from ROS 2
    running = _answers(out, "RUNNING")
    assert (running["chatter_publishers"], running["chatter_subscribers"]) == (1, 1)
    # its services' ports are services to the node, not topics: the ROS 2 side's clients
    # of ~/reset and server of /add_two_ints, which it carries
    assert (running["services"], running["hidden_topics"]) == (CALLED + SERVED, [])
    assert running["ready"] == [True, True]  # the gateway carries the calls to ROS 2
    # the gateway's endpoint stands for ROS 2's publishers of /chatter, which come and go:
    # the topic's type, an unknown QoS
    unknown = ["UNKNOWN", 0, "UNKNOWN", "UNKNOWN", "UNKNOWN", *["0 nanoseconds"] * 3]
    gateway = ["PUBLISHER", "/", "ros2_gateway", STRING, GID, *unknown]
    assert running["endpoints"] == sorted([*MY_ENDPOINTS, gateway])


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


def _endpoint_probe(hprm):
    probe = NODES / "endpoint_qos_probe.py"
    prelude = "from hprm_bridge import porting; porting.install_imports(); " if hprm else ""
    code = f"import runpy; {prelude}runpy.run_path({str(probe)!r}, run_name='__main__')"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def _qos_lines(infos):
    return [[line.strip() for line in info if line.startswith("  ")] for info in infos]


def test_endpoint_infos_give_each_endpoints_qos_as_rmw_reports_it():
    got = _endpoint_probe(hprm=True)
    pub, sub = _qos_lines(got["system_default"])  # the policies DDS applies for "default"
    assert pub == sub == ["Reliability: RELIABLE", "History (Depth): KEEP_LAST (1)",
                          "Durability: VOLATILE", f"Lifespan: {INF}", f"Deadline: {INF}",
                          "Liveliness: AUTOMATIC", f"Liveliness lease duration: {INF}"]  # fmt: skip
    assert [q[1] for q in _qos_lines(got["keep_all"])] == ["History (Depth): KEEP_ALL"] * 2
    assert [q[1] for q in _qos_lines(got["depth_zero"])] == ["History (Depth): KEEP_LAST (1)"] * 2
    pub, sub = _qos_lines(got["manual"])  # a lifespan is the publisher's only
    assert (pub[3], sub[3]) == ("Lifespan: 5 nanoseconds", f"Lifespan: {INF}")
    assert pub[5:] == sub[5:] == ["Liveliness: MANUAL_BY_TOPIC",
                                  "Liveliness lease duration: 3000000000 nanoseconds"]  # fmt: skip
    assert got["system_default"][0][:4] == ["Node name: qos_probe", "Node namespace: /robot",
                                            "Topic type: std_msgs/msg/String",
                                            "Endpoint type: PUBLISHER"]  # fmt: skip
    assert (got["nobody"], got["dds_name"]) == (0, 1)
    assert got["resolved"] == ["/robot/qos_probe/x", "/robot/qos_probe", "/robot/y", "/robot/z"]
    refused = got["refused"]
    assert refused.pop("info") == "ValueError"
    kinds = {"publisher": "TopicName", "digit": "TopicName", "slash": "TopicName",
             "tilde": "TopicName", "service": "ServiceName", "client": "ServiceName",
             "node": "NodeName", "namespace": "Namespace"}  # fmt: skip
    for what, kind in kinds.items():
        assert refused[what] == ["NameValidationException", f"Invalid{kind}Exception"], what


@pytest.mark.ros2
def test_endpoint_infos_and_names_match_real_rclpy():
    pytest.importorskip(
        "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
    )
    assert _endpoint_probe(hprm=True) == _endpoint_probe(hprm=False)


def test_a_node_with_hundreds_of_topics_joins_its_federation(tmp_path):
    """Every endpoint goes into the node's description of itself (its ports, and its
    label for the graph queries): 300 topics with long names used to be refused."""
    node = tmp_path / "big.py"
    node.write_text(
        "import rclpy\nfrom rclpy.node import Node\nfrom std_msgs.msg import String\n"
        "rclpy.init()\nnode = Node('big')\ntopic = 'sensors/front_camera_{}/image_rect_color'\n"
        "for i in range(300):\n"
        "    node.create_publisher(String, topic.format(i), 10)\n"
        "def tick():\n"
        "    print('PUBLISHERS', node.count_publishers(topic.format(299)))\n"
        "    raise SystemExit(0)\n"
        "node.create_timer(0.01, tick)\n"
        "try:\n    rclpy.spin(node)\nexcept SystemExit:\n    pass\n"
    )
    assert "PUBLISHERS 1" in _hprm_run(node)
