"""QoS event callbacks of ported nodes (hprm_bridge.rclpy.qos_event): the deadline
missed, measured in logical time (hprm_bridge.rclpy.deadline), checked against real
rclpy with the same node file."""

import re
from pathlib import Path

import pytest

from hprm_bridge import messages
from hprm_bridge import rclpy as hrclpy
from hprm_bridge.rclpy.duration import Duration
from hprm_bridge.rclpy.node import Node, UnsupportedError
from hprm_bridge.rclpy.qos import QoSProfile
from hprm_bridge.rclpy.qos_event import SubscriptionEventCallbacks

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
    return re.findall(r"^(?:\[deadline_watcher\] )?((?:HEARD|MISSED|STOP).*)$", out, re.M)


def test_a_missed_deadline_is_called_back_at_the_same_logical_time_every_run(ported_run):
    assert _lines(ported_run(WATCHER)) == EXPECTED


@pytest.mark.ros2
def test_a_missed_deadline_is_called_back_the_same_under_real_rclpy(rclpy_until_stop):
    def untimed(lines):  # the wall clock's times; one instant's two misses in any order
        return sorted(x.split(" at ")[0] for x in lines)

    out = rclpy_until_stop([WATCHER])
    lines = _lines("\n".join(out))
    assert untimed(lines) == untimed(EXPECTED) and lines[-1] == "STOP", out


def test_deadline_watches_are_made_before_the_start_and_only_for_a_deadline(monkeypatch):
    """Without a deadline period there is nothing to watch (rclpy's default); a watch
    is a timer of the node's reactor, so one asked for after the start is refused."""
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
    with pytest.raises(UnsupportedError, match="with a deadline callback after its node started"):
        node.create_subscription(int32, "b", print, qos, event_callbacks=events)
