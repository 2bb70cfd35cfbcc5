"""A node file's main that steps an executor of several nodes (``executor.spin_once``,
``executor.spin_until_future_complete``): the nodes are one federate and the main takes
turns with all of them (hprm_bridge.rclpy.main_turns); compared with real rclpy."""

import re
from pathlib import Path

import pytest

NODES = Path(__file__).parent / "nodes"
STEPPED = NODES / "stepped_pair.py"
SAYS = ["HEARD [0, 1, 2]", "PROMPT True", "SUM 5", "TICKS True", "STOP"]


@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
def test_a_main_steps_both_nodes_of_its_executor(ported_run, coordination):
    """What the main publishes on the second node's publisher goes out at the tag of
    its turn (PROMPT: not at that node's next timer tick), a sibling's service answers
    the first node's client, and spin_once wakes for the second node's timer."""
    out = ported_run(STEPPED, "--coordination", coordination, timeout="10 s")
    said = re.findall(r"^\[stepped_pair\] ((?:HEARD|PROMPT|SUM|TICKS|STOP).*)$", out, re.M)
    assert said == SAYS, out


@pytest.mark.ros2
def test_the_stepped_pair_says_the_same_under_real_rclpy(rclpy_until_stop):
    assert rclpy_until_stop([STEPPED]) == SAYS


def test_ros2_demos_incompatible_qos_shape_runs_to_its_end(ported_run, tmp_path):
    """ros2/demos' incompatible_qos: a main that steps a talker and a listener whose QoS
    do not match until the talker published five times; its end ends the federation."""
    demo = tmp_path / "incompatible.py"
    demo.write_text(
        "import sys\n"
        "import rclpy\n"
        "from rclpy.executors import SingleThreadedExecutor\n"
        "from rclpy.qos import DurabilityPolicy, QoSProfile\n"
        "from rclpy.qos_event import PublisherEventCallbacks, SubscriptionEventCallbacks\n"
        "from std_msgs.msg import String\n"
        "rclpy.init()\n"
        "talker, listener = rclpy.create_node('qos_talker'), rclpy.create_node('qos_listener')\n"
        "sent = []\n"
        "def say(side):\n"
        "    return lambda e: print('EVENT', side, e.total_count, e.last_policy_kind, flush=True)\n"
        "pub = talker.create_publisher(String, 'chatter', QoSProfile(depth=10),\n"
        "    event_callbacks=PublisherEventCallbacks(incompatible_qos=say('talker')))\n"
        "def tick():\n"
        "    pub.publish(String(data='x'))\n"
        "    sent.append(1)\n"
        "talker.create_timer(0.5, tick)\n"
        "listener.create_subscription(String, 'chatter', lambda m: print('HEARD'),\n"
        "    QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL),\n"
        "    event_callbacks=SubscriptionEventCallbacks(incompatible_qos=say('listener')))\n"
        "executor = SingleThreadedExecutor()\n"
        "executor.add_node(listener)\n"
        "executor.add_node(talker)\n"
        "while len(sent) < 5:\n"
        "    executor.spin_once()\n"
        "print('SENT', len(sent), flush=True)\n"
    )
    out = ported_run(demo, timeout="60 s")
    said = re.findall(r"^\[incompatible\] ((?:EVENT|HEARD|SENT).*)$", out, re.M)
    assert said == ["EVENT listener 1 2", "EVENT talker 1 2", "SENT 5"], out  # 2: DURABILITY
