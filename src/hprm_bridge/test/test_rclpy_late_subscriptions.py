"""Subscriptions made after the start (hprm_bridge.rclpy.late_subscriptions): they hear
their own process's publishers, with a transient-local publisher's history younger than
its lifespan first, as under DDS; the same node files under real rclpy (Humble, Cyclone
DDS) hear the same. A topic another federate publishes is refused, naming it."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from hprm_bridge.rclpy.duration import Duration, Infinite
from hprm_bridge.rclpy.late_subscriptions import History, history
from hprm_bridge.rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile

NODES = Path(__file__).parent / "nodes"
PROBE = NODES / "late_subscriber.py"
HEARD = [  # measured under Humble first
    "HEARD /latched 1",  # from the history: tick 0's (0.5 s) is older than 0.6 s at 1.25 s
    "HEARD /latched 2",
    "HEARD /plain 2",  # the listener drops /plain after this one
    "HEARD /latched 3",
    "HEARD /latched 4",
]
EVENTS = ["ALIVE 1 1", "LISTENER incompatible 1", "TALKER incompatible 1"]
COUNTS = ["COUNT 0 0", "COUNT 1 0", "COUNT 2 1", "COUNT 3 1", "COUNT 4 1"]


def _lines(out, word):
    return re.findall(rf"^(?:\[\w+\] )?((?:{word}).*)$", out, re.M)


def _check(out):
    assert _lines(out, "HEARD") == HEARD, out
    assert sorted(_lines(out, "ALIVE|LISTENER|TALKER")) == EVENTS, out
    assert _lines(out, "COUNT") == COUNTS, out
    assert _lines(out, "STOP") == ["STOP"], out


def test_a_listener_subscribing_late_hears_its_executors_talker(ported_run):
    """ros2/demos' lifespan shape: the two nodes in one process."""
    out = ported_run(PROBE, timeout="5 s")
    _check(out)
    # in logical time, in one order every run: created in this order, each heard a
    # nanosecond on (its events, then the history), the talker's event after
    heard = _lines(out, "SUBSCRIBED|ALIVE|HEARD|LISTENER|TALKER")
    assert heard[:5] == ["SUBSCRIBED", "ALIVE 1 1", "HEARD /latched 1",
                         "LISTENER incompatible 1", "TALKER incompatible 1"], out  # fmt: skip


def test_a_declared_port_beside_a_sibling_publisher_changes_nothing(ported_run):
    """The sibling's messages still come from the process (composition leaves a declared
    port to the federation), once each."""
    _check(ported_run(PROBE, "--late", "late_subscriber=/latched:std_msgs/msg/String",
                      timeout="5 s"))  # fmt: skip


@pytest.mark.ros2
def test_the_same_node_file_under_real_rclpy(rclpy_until_stop):
    _check("\n".join(rclpy_until_stop([PROBE])))


def test_a_node_hears_its_own_publisher_and_one_made_in_its_place(ported_run):
    out = ported_run(PROBE, "--arguments", "late_subscriber=own", timeout="2 s")
    assert _lines(out, "HEARD|STOP") == ["HEARD m2", "HEARD m3", "HEARD m4", "HEARD m5", "STOP"]


@pytest.mark.ros2
def test_a_node_hears_its_own_the_same_under_real_rclpy(rclpy_until_stop):
    out = "\n".join(rclpy_until_stop([PROBE, "own"]))
    assert _lines(out, "HEARD|STOP") == ["HEARD m2", "HEARD m3", "HEARD m4", "HEARD m5", "STOP"]


def test_a_topic_another_federate_publishes_is_refused_naming_it():
    """Its messages come through ports fixed at the start: a late subscription that heard
    nothing of them would lose them without a word."""
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", f"talker={PROBE}",
         f"listener={PROBE}", "--arguments", "talker=talker", "--arguments",
         "listener=listener", "--timeout", "5 s"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert (
        "Node.create_subscription(/latched) after its node started (by spin, a spin_once, or "
        "the first sleep of a main that never spins): /latched is published by /late_talker, "
        "outside this process"
    ) in out, out
    assert "declare it (hprm-ros run --late NAME=/latched:std_msgs/msg/String" in out, out
    assert "listener exited with code 1" in out, out


DECLARED = [f"--late=listener=/{t}:std_msgs/msg/String" for t in ("latched", "plain", "weak")]


@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
def test_declared_ports_carry_another_federates_messages_to_late_subscriptions(
    ported_run, coordination
):
    """Declared (--late), each topic is a port of the listener's federate from the start:
    its late subscriptions hear the talker's messages from their creation on, the latched
    one first what the port kept of the talker's transient-local ones within their
    lifespan (as the talker's process would have), and its QoS is checked against the
    talker's as the graph tells it (/weak: refused, its event; the talker, another
    federate, is not told, nor does its subscription count change). Under real rclpy in
    two processes what is heard depends on when each started (measured with the
    listener started 0.3 s after the talker: /latched 1 to 4, /plain 3), so there the
    one-process run is the comparison."""
    out = ported_run(f"talker={PROBE}", f"listener={PROBE}", "--arguments", "talker=talker",
                     "--arguments", "listener=listener", *DECLARED, "--coordination",
                     coordination, timeout="5 s")  # fmt: skip
    assert _lines(out, "HEARD") == HEARD, out
    assert _lines(out, "ALIVE|LISTENER|TALKER") == ["ALIVE 1 1", "LISTENER incompatible 1"], out
    assert _lines(out, "COUNT") == [f"COUNT {n} 0" for n in range(5)], out
    assert re.findall(r"^\[listener\] (STOP)$", out, re.M) == ["STOP"], out


def test_a_declared_port_keeps_and_carries_every_publishers_messages(ported_run):
    """Two talkers in two federates: what the port kept holds both tick-1 messages, each
    tick's two come live, both /weak publishers are refused (total 1, then 2)."""
    talkers = [f"t{n}={PROBE}" for n in (1, 2)]
    out = ported_run(*talkers, f"listener={PROBE}", "--arguments", "t1=talker", "--arguments",
                     "t2=talker", "--arguments", "listener=listener", *DECLARED,
                     timeout="5 s")  # fmt: skip
    assert _lines(out, "HEARD|ALIVE|LISTENER|STOP") == [
        "ALIVE 2 2", "HEARD /latched 1", "HEARD /latched 1", "LISTENER incompatible 1",
        "LISTENER incompatible 2", "HEARD /latched 2", "HEARD /latched 2", "HEARD /plain 2",
        "HEARD /latched 3", "HEARD /latched 3", "HEARD /latched 4", "STOP",
    ], out  # fmt: skip


@pytest.mark.ros2
@pytest.mark.parametrize("backend", ["wire", "rclpy"])
def test_a_declared_port_hears_plain_ros2_through_the_gateway(backend, bridge_env):
    """A plain ROS 2 talker (real rclpy): the gateway carries /chatter in for the declared
    port, and the late subscription hears it from its creation on."""
    pytest.importorskip("rclpy", reason="needs a real ROS 2 Humble for the plain talker")
    env = bridge_env(backend)
    talker = subprocess.Popen([sys.executable, str(NODES / "talker.py")], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        r = subprocess.run(
            [sys.executable, "-m", "hprm_bridge.ros_cli", "run", str(NODES / "late_chatter.py"),
             "--bridge", "--late", "late_chatter=/chatter:std_msgs/msg/String",
             "--timeout", "60 s"],
            capture_output=True, text=True, timeout=180, env=env,
        )  # fmt: skip
    finally:
        talker.kill()
        talker.communicate()
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "gateway" in out and "/chatter (in)" in out, out
    heard = re.findall(r"^\[late_chatter\] HEARD (\d+)([ab])$", out, re.M)
    assert len(heard) == 3, out
    # in the talker's order: 1a 1b 2a ..., from wherever the subscription began
    order = [2 * int(n) + (part == "b") for n, part in heard]
    assert order == list(range(order[0], order[0] + 3)), out
    # A few tags after its SystemExit, not a tag a nanosecond up to the granted stop (the
    # late subscriptions' kick left running when a message came after it: under load, 8 ms
    # later, minutes of 40-byte tag messages, which hung this test past its 180 s)
    sent = int(re.search(r"^\[late_chatter\] .*late_chatter left: (\d+) bytes", out, re.M)[1])
    assert sent < 50_000, out


@pytest.mark.parametrize(
    ("late", "why"),
    [("--late=listener=latched:std_msgs/msg/String", "expected TOPIC:TYPE, a full topic name"),
     ("--late=nobody=/latched:std_msgs/msg/String", "--late names no node nobody"),
     ("--late=listener=/latched:std_msgs/msg/Nope", "std_msgs/msg/Nope")],
)  # fmt: skip
def test_a_wrong_declaration_is_refused_naming_it(late, why):
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", f"listener={PROBE}", late,
         "--arguments", "listener=listener", "--timeout", "2 s"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert r.returncode != 0 and why in r.stdout + r.stderr, r.stdout + r.stderr


class _Clock:
    def __init__(self):
        self.ns = 0

    def __call__(self):
        return self.ns


def test_a_transient_local_history_keeps_depth_and_drops_what_outlived_its_lifespan():
    clock = _Clock()
    qos = QoSProfile(depth=2, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     lifespan=Duration(nanoseconds=100))  # fmt: skip
    kept = history(qos, clock)
    for t, m in ((0, "a"), (50, "b"), (60, "c")):
        clock.ns = t
        kept.keep(m)
    assert kept.alive() == ["b", "c"]  # depth 2: a is gone
    clock.ns = 149
    assert kept.alive() == ["b", "c"]
    clock.ns = 150  # b is 100 ns old: its lifespan is over
    assert kept.alive() == ["c"]
    clock.ns = 10**18
    assert kept.alive() == []


@pytest.mark.parametrize("lifespan", [None, Infinite], ids=["default", "infinite"])
def test_keep_all_keeps_everything_and_no_lifespan_expires(lifespan):
    """rclpy's default lifespan (0 ns) is rmw's "infinite", as Infinite itself."""
    clock = _Clock()
    qos = QoSProfile(history=HistoryPolicy.KEEP_ALL, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     **({} if lifespan is None else {"lifespan": lifespan}))  # fmt: skip
    kept = History(qos, clock)
    for m in range(1000):
        kept.keep(m)
    clock.ns = 10**18
    assert kept.alive() == list(range(1000))


def test_a_volatile_publisher_keeps_nothing():
    assert history(QoSProfile(depth=10), _Clock()) is None
