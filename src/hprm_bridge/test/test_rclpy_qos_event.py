"""QoS event callbacks of ported nodes (hprm_bridge.rclpy.qos_event): the deadline
missed, measured in logical time (hprm_bridge.rclpy.deadline), checked against real
rclpy with the same node file."""

import re
from pathlib import Path

import pytest

from hprm_bridge import messages
from hprm_bridge import rclpy as hrclpy
from hprm_bridge.rclpy.duration import Duration
from hprm_bridge.rclpy.node import Node
from hprm_bridge.rclpy.qos import LivelinessPolicy, QoSProfile
from hprm_bridge.rclpy.qos_event import PublisherEventCallbacks, SubscriptionEventCallbacks
from hprm_bridge.rclpy.timer_wheel import WheelTimer

WATCHER = Path(__file__).parent / "nodes" / "deadline_watcher.py"
# heard at 0, 50, 100 ms from the first; then both sides miss the 100 ms deadline each
# 100 ms, the subscription's first (the node created it first)
EXPECTED = [
    "HEARD 1 at 0", "HEARD 2 at 50", "HEARD 3 at 100",
    *(f"MISSED {side} {n} +1 at {100 + 100 * n}" for n in (1, 2, 3)
      for side in ("requested", "offered")),
    "STOP",
]  # fmt: skip


def _lines(out):
    return re.findall(r"^(?:\[deadline_\w+\] )?((?:HEARD|MISSED|STOP).*)$", out, re.M)


def test_a_missed_deadline_is_called_back_at_the_same_logical_time_every_run(ported_run):
    assert _lines(ported_run(WATCHER)) == EXPECTED


@pytest.mark.ros2
def test_a_missed_deadline_is_called_back_the_same_under_real_rclpy(rclpy_until_stop):
    def untimed(lines):  # the wall clock's times; one instant's two misses in any order
        return sorted(x.split(" at ")[0] for x in lines)

    out = rclpy_until_stop([WATCHER])
    lines = _lines("\n".join(out))
    assert untimed(lines) == untimed(EXPECTED) and lines[-1] == "STOP", out


LATE = Path(__file__).parent / "nodes" / "deadline_late.py"
# ticks every 50 ms from 0, beats 1-6 until 250; "late" made at 50, "again" at 150 in
# the place of "early"; both miss from 350 on ("late" hears each beat 1 ns after it)
LATE_EXPECTED = [
    "HEARD early 1 at 0", "HEARD early 2 at 50", "HEARD late 2 at 50", "HEARD early 3 at 100",
    "HEARD late 3 at 100", *(f"HEARD {name} {n} at {50 * (n - 1)}" for n in (4, 5, 6)
                             for name in ("again", "late")),
    *(f"MISSED {name} {n} +1 at {250 + 100 * n}" for n in (1, 2, 3) for name in ("again", "late")),
    "STOP",
]  # fmt: skip


@pytest.mark.parametrize("executor", ["single", "multi"])
def test_deadlines_made_after_the_start_are_called_back_in_logical_time(ported_run, executor):
    """A subscription made again in the place of a destroyed one (a lifecycle node's
    cleanup and configure) and one made in a callback on a topic of its own process
    (:mod:`hprm_bridge.rclpy.late_subscriptions`) watch their deadlines as one made
    before the start: a miss each period from the last message on; the same where its
    callbacks run as tasks (a MultiThreadedExecutor)."""
    out = ported_run(LATE, "--arguments", f"deadline_late={executor}")
    assert _lines(out) == LATE_EXPECTED, out


@pytest.mark.ros2
def test_deadlines_made_after_the_start_are_called_back_the_same_under_real_rclpy(
    rclpy_until_stop,
):
    out = rclpy_until_stop([LATE])
    lines = _lines("\n".join(out))
    assert sorted(x.split(" at ")[0] for x in lines) == sorted(
        x.split(" at ")[0] for x in LATE_EXPECTED
    ), out


def test_deadline_watches_are_made_only_for_a_deadline_and_after_the_start_on_the_wheel(
    monkeypatch,
):
    """Without a deadline period there is nothing to watch (rclpy's default). A watch
    made before the start is a timer of the node's reactor; one made after it, a timer
    of the node's wheel, for a subscription in a destroyed one's place as for one on a
    topic the node had none of, as many as it makes."""
    int32 = messages.message_class("std_msgs/msg/Int32")
    events = SubscriptionEventCallbacks(deadline=print, liveliness=print)
    node = Node("watch")
    plain = node.create_subscription(int32, "a", print, 10, event_callbacks=events)
    assert plain._deadline is None
    qos = QoSProfile(depth=1, deadline=Duration(seconds=0.5))
    watched = node.create_subscription(int32, "b", print, qos, event_callbacks=events)
    assert watched._deadline is not None and watched._deadline.timer.period == 500_000_000
    monkeypatch.setenv("HPRM_TIMEOUT", "10 ms")
    hrclpy.init()
    hrclpy.spin(node)
    node.destroy_subscription(watched)  # no more misses for it
    assert watched._deadline.timer.cancelled
    again = node.create_subscription(int32, "b", print, qos, event_callbacks=events)
    late = [node.create_subscription(int32, f"c{k}", print, qos, event_callbacks=events)
            for k in range(10)]  # fmt: skip
    for sub in (again, *late):
        assert isinstance(sub._deadline.timer, WheelTimer), sub.topic_name
        assert sub._deadline.timer.period == 500_000_000
    assert node._deadlines == [watched._deadline]


def test_a_publisher_made_after_the_start_has_its_lease_and_deadline_on_the_wheel(monkeypatch):
    """In the place of a publisher that had neither, a publisher made after the start
    may have a manual liveliness lease and a deadline: their timers are the wheel's."""
    string = messages.message_class("std_msgs/msg/String")
    node = Node("talk")
    pub = node.create_publisher(string, "chatter", 10)
    monkeypatch.setenv("HPRM_TIMEOUT", "10 ms")
    hrclpy.init()
    hrclpy.spin(node)
    node.destroy_publisher(pub)
    qos = QoSProfile(depth=10, liveliness=LivelinessPolicy.MANUAL_BY_TOPIC,
                     liveliness_lease_duration=Duration(seconds=1),
                     deadline=Duration(seconds=0.5))  # fmt: skip
    events = PublisherEventCallbacks(deadline=print)
    again = node.create_publisher(string, "chatter", qos, event_callbacks=events)
    assert again._port is pub._port and node._own_publishers == [again]
    assert isinstance(again._lease.timer, WheelTimer) and again._lease.timer.period == 10**9
    assert isinstance(again._deadline.timer, WheelTimer) and not node._leases
