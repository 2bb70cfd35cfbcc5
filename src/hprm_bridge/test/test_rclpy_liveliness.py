"""QoS liveliness of ported nodes (hprm_bridge.rclpy.liveliness): a subscription hears
its publishers matched, a manual-liveliness publisher's lease run out, its return, and
publishers leaving, at logical times; the same node file under real rclpy (Humble,
Cyclone DDS) prints the same events in the same order. What else reads a ported
publisher's port (the bag recorder, the gateway to ROS 2) takes only its messages."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = Path(__file__).parent / "nodes" / "liveliness_probe.py"
LISTENER = [  # measured under Humble first (the probe's docstring has the script)
    "LIVELINESS alive 2 not_alive 0 +2 +0",  # both publishers matched
    "HEARD a1",
    "LIVELINESS alive 1 not_alive 1 -1 +1",  # a's lease ran out; its assertion after: none
    "HEARD b15",
    "LIVELINESS alive 2 not_alive 0 +1 -1",  # a publishes again: alive before its message
    "HEARD a20",
    "LIVELINESS alive 1 not_alive 0 -1 +0",  # a destroyed
    "LIVELINESS alive 0 not_alive 0 -1 +0",  # b: its node destroyed, or b itself
    "STOP",
]
TALKER = ["LOST 1 +1"]


def _lines(out, who=None):
    prefix = rf"\[{who}\] " if who else r"(?:\[\w+\] )?"
    return re.findall(rf"^{prefix}((?:LIVELINESS|HEARD|LOST|STOP).*)$", out, re.M)


def test_two_nodes_in_one_executor_hear_liveliness_as_under_ros2(ported_run):
    """ros2/demos' liveliness shape: the listener destroys its sibling talker node."""
    lines = _lines(ported_run(PROBE, timeout="5 s"))
    assert [x for x in lines if not x.startswith("LOST")] == LISTENER, lines
    assert [x for x in lines if x.startswith("LOST")] == TALKER, lines
    # the loss comes at its tag: after a1 (0.1 s) and before b15 (1.5 s)
    assert lines.index("LOST 1 +1") < lines.index("HEARD b15"), lines


@pytest.mark.parametrize("coordination", [[], ["--coordination", "decentralized"]])
def test_liveliness_crosses_between_federates(ported_run, coordination):
    out = ported_run(f"talker={PROBE}", f"listener={PROBE}", "--arguments", "talker=talker",
                     "--arguments", "listener=listener", *coordination, timeout="5 s")  # fmt: skip
    assert _lines(out, "listener") == LISTENER, out
    assert _lines(out, "talker") == TALKER, out


@pytest.mark.ros2
def test_the_same_node_file_under_real_rclpy(rclpy_until_stop):
    lines = _lines("\n".join(rclpy_until_stop([PROBE])))
    assert [x for x in lines if not x.startswith("LOST")] == LISTENER, lines
    assert [x for x in lines if x.startswith("LOST")] == TALKER, lines


@pytest.mark.ros2
def test_real_rclpy_across_processes_hears_the_same(rclpy_until_stop):
    lines = _lines("\n".join(rclpy_until_stop([PROBE, "listener"], [PROBE, "talker"])))
    # DDS may discover the two publishers one by one: alive 1 (+1), then alive 2 (+1)
    first = lines.index("HEARD a1")
    assert lines[first - 1].startswith("LIVELINESS alive 2 not_alive 0 "), lines
    assert lines[first:] == LISTENER[1:], lines


LATE = """
import rclpy
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import LivelinessPolicy, QoSProfile
from rclpy.qos_event import PublisherEventCallbacks, SubscriptionEventCallbacks
from std_msgs.msg import String

MANUAL = QoSProfile(depth=10, liveliness=LivelinessPolicy.MANUAL_BY_TOPIC,
                    liveliness_lease_duration=Duration(seconds=0.3))


class Late(Node):
    '''A publisher destroyed and created again in a callback: its subscription hears it
    leave and come back; the new one keeps a lease of its own, and its loss is told to
    its own callback.'''

    def __init__(self):
        super().__init__("late")
        events = SubscriptionEventCallbacks(liveliness=lambda e: print(
            f"LIVELINESS alive {e.alive_count} not_alive {e.not_alive_count}", flush=True))
        self.create_subscription(String, "/t", lambda m: print("HEARD", m.data, flush=True),
                                 10, event_callbacks=events)
        self.pub = self.create_publisher(String, "/t", MANUAL)
        self.n = 0
        self.create_timer(0.1, self.tick)

    def tick(self):
        self.n += 1
        if self.n == 1:
            self.pub.publish(String(data="first"))
        if self.n == 2:
            self.destroy_publisher(self.pub)
            self.pub = self.create_publisher(String, "/t", MANUAL, event_callbacks=
                PublisherEventCallbacks(liveliness=lambda e: print("LOST", e.total_count)))
            self.pub.publish(String(data="again"))
        if self.n == 8:
            print("STOP", flush=True)
            raise SystemExit


rclpy.init()
try:
    rclpy.spin(Late())
except SystemExit:
    pass
"""


def test_a_publisher_created_again_comes_back_with_its_own_lease(ported_run, tmp_path):
    node = tmp_path / "late.py"
    node.write_text(LATE)
    assert _lines(ported_run(node, timeout="3 s")) == [
        "LIVELINESS alive 1 not_alive 0",  # itself
        "HEARD first",
        "LIVELINESS alive 0 not_alive 0",  # destroyed at 0.2 s
        "LIVELINESS alive 1 not_alive 0",  # created in its place
        "HEARD again",
        "LOST 1",  # 0.3 s after "again"
        "LIVELINESS alive 0 not_alive 1",
        "STOP",
    ]


def test_the_recorder_and_the_gateway_take_only_messages(tmp_path, bridge_env, bridged_run):
    """The talker's port carries its loss and two leavings besides three messages: the
    bag has the three, and the gateway publishes the three to ROS 2."""
    out = tmp_path / "bag"
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "bag", "record", str(out),
         f"talker={PROBE}", "--arguments", "talker=talker", "--timeout", "3 s"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    from rosbags.rosbag2 import Reader

    with Reader(out) as reader:
        assert [c.topic for c, _, _ in reader.messages() if c.topic == "/live"] == ["/live"] * 3
    r = bridged_run("liveliness_probe.py", bridge_env(), "--arguments",
                    "liveliness_probe=talker")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"gateway: 0 messages in, 3 out", r.stdout + r.stderr), r.stdout


LEASE_ONLY = Path(__file__).parent / "nodes" / "lease_only.py"


def _waited_it_out(lines):
    """``WAITED n`` then ``STOP`` with n >= 2: spin_once did not return at the lease's
    loss (0.5 s). More than 2 on a loaded machine: ported, the node's clock before the
    start is physical time, and joining the federation counts; under rclpy, wall time."""
    waited = re.fullmatch(r"WAITED (\d+)", lines[0]) if len(lines) == 2 else None
    return waited is not None and int(waited[1]) >= 2 and lines[1] == "STOP"


def test_a_lease_without_a_callback_does_not_end_a_spin_once(ported_run):
    """Its loss calls nothing, so the main's spin_once waits out its 2 s (it returned at
    the loss before)."""
    out = ported_run(LEASE_ONLY, timeout="5 s")
    assert _waited_it_out(re.findall(r"^\[lease_only\] (WAITED \d+|STOP)$", out, re.M)), out


@pytest.mark.ros2
def test_a_lease_without_a_callback_under_real_rclpy(rclpy_until_stop):
    lines = rclpy_until_stop([LEASE_ONLY])
    assert _waited_it_out(lines), lines


LEAVING = Path(__file__).parent / "nodes" / "leaving_talker.py"


def test_a_publishers_leaving_alone_does_not_end_a_spin_once(ported_run):
    """The waiter's subscription has no liveliness callback: the talker's leaving at
    0.5 s calls nothing, so the main's spin_once waits out its 2 s (it returned then
    before)."""
    out = ported_run(f"talker={LEAVING}", f"waiter={LEAVING}", "--arguments", "talker=talker",
                     "--arguments", "waiter=waiter", timeout="5 s")  # fmt: skip
    assert _waited_it_out(re.findall(r"^\[waiter\] (WAITED \d+|STOP)$", out, re.M)), out


@pytest.mark.ros2
def test_a_publishers_leaving_under_real_rclpy(rclpy_until_stop):
    lines = rclpy_until_stop([LEAVING, "waiter"], [LEAVING, "talker"])
    assert _waited_it_out(lines), lines
