"""HPRM's rclpy API (hprm_bridge.rclpy) in one process: names, clocks, the
errors for what is not offered, a node run on its own in logical time."""

import re

import pytest

from hprm_bridge import messages
from hprm_bridge import rclpy as hrclpy
from hprm_bridge.rclpy.duration import Duration
from hprm_bridge.rclpy.node import Node, UnsupportedError
from hprm_bridge.rclpy.time import Time

String = messages.message_class("std_msgs/msg/String")


def test_time_and_duration_arithmetic_and_messages():
    t = Time(seconds=1, nanoseconds=500)
    assert (t + Duration(seconds=0.5)).nanoseconds == 1_500_000_500
    assert (t - Time(seconds=1)) == Duration(nanoseconds=500)
    assert t.seconds_nanoseconds() == (1, 500)
    msg = t.to_msg()
    assert (type(msg).__name__, msg.sec, msg.nanosec) == ("Time", 1, 500)
    assert Time.from_msg(msg) == t
    with pytest.raises(ValueError, match="cannot be negative"):
        Time(seconds=-1)


def test_topic_names_resolve_as_in_ros_2():
    node = Node("cam", namespace="robot1")
    assert node.get_namespace() == "/robot1"
    assert node.resolve_topic_name("image") == "/robot1/image"
    assert node.resolve_topic_name("/abs") == "/abs"
    assert node.resolve_topic_name("~/debug") == "/robot1/cam/debug"
    assert Node("n").resolve_topic_name("x") == "/x"
    with pytest.raises(ValueError, match="invalid node name"):
        Node("bad-name")


def test_what_is_not_offered_says_so_by_name():
    node = Node("n")
    with pytest.raises(UnsupportedError, match=r"Node\.create_service is not supported"):
        node.create_service(object, "srv", lambda req, res: res)
    with pytest.raises(UnsupportedError, match=r"rclpy\.spin_once is not supported"):
        hrclpy.spin_once(node)
    pub = node.create_publisher(String, "t", 10)
    with pytest.raises(UnsupportedError, match="get_subscription_count"):
        pub.get_subscription_count()


def test_a_node_runs_on_its_own_in_logical_time(capsys, monkeypatch):
    monkeypatch.setenv("HPRM_TIMEOUT", "35 ms")
    node = Node("solo")
    stamps = []

    def tick():
        stamps.append(node.get_clock().now().nanoseconds)
        node.get_logger().info("tick")
        node.get_logger().info("first", once=True)

    node.create_timer(0.01, tick)
    hrclpy.init()
    hrclpy.spin(node)
    assert not hrclpy.ok()
    # rclpy timers first fire one period after the start: 10, 20, 30 ms
    assert [s - stamps[0] for s in stamps] == [0, 10_000_000, 20_000_000]
    err = capsys.readouterr().err
    assert re.search(r"^\[INFO\] \[\d+\.\d{9}\] \[solo\]: tick$", err, re.M), err
    assert err.count("first") == 1
    with pytest.raises(UnsupportedError, match="create_timer after spin"):
        node.create_timer(0.01, tick)
