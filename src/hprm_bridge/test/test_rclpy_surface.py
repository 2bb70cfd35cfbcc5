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

# The node is /robot1/cam (namespace remapped): "cam" is the root-namespace
# /cam, another node; "robot1/cam" is this one.
PARAMS = (
    "/**:\n  ros__parameters:\n    shared: 1\n"
    "cam:\n  ros__parameters:\n    rate: 99.0\n"
    "robot1/cam:\n  ros__parameters:\n    rate: 15.0\n    frame: {id: optical}\n"
)


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


def test_parameters_come_from_defaults_files_arguments_and_overrides(tmp_path):
    from hprm_bridge.rclpy.parameter import (
        InvalidParameterTypeException,
        Parameter,
        ParameterAlreadyDeclaredException,
        ParameterNotDeclaredException,
    )

    params = tmp_path / "params.yaml"
    params.write_text(PARAMS)
    hrclpy.init(args=["prog", "--ros-args", "--params-file", str(params), "-p", "gain:=2",
                      "-r", "image:=image_raw", "-r", "__ns:=/robot1"])  # fmt: skip
    try:
        node = Node("cam", parameter_overrides=[Parameter("gain", value=3)])
        assert node.declare_parameter("rate", 30.0).value == 15.0  # the file's
        assert node.declare_parameter("gain", 1).value == 3  # override beats -p
        assert node.declare_parameter("shared", 0).value == 1  # /**
        assert node.declare_parameter("frame.id", "").value == "optical"
        assert node.declare_parameter("unset", "x").value == "x"
        assert node.get_parameter("rate").type_ == Parameter.Type.DOUBLE
        assert node.get_namespace() == "/robot1"
        assert node.resolve_topic_name("image") == "/robot1/image_raw"
        with pytest.raises(ParameterAlreadyDeclaredException):
            node.declare_parameter("rate", 1.0)
        with pytest.raises(ParameterNotDeclaredException, match="'nope' of node cam"):
            node.get_parameter("nope")
        with pytest.raises(InvalidParameterTypeException, match="declared STRING"):
            Node("cam").declare_parameter("shared", "text")  # the file says 1
        (ok,) = node.set_parameters([Parameter("rate", value=5.0)])
        assert ok.successful and node.get_parameter("rate").value == 5.0
        assert not node.set_parameters([Parameter("undeclared", value=1)])[0].successful
        hrclpy.init(args=["--ros-args", "-p", "oops"])
        with pytest.raises(ValueError, match="expects NAME:=VALUE"):
            Node("x")
    finally:
        hrclpy.init(args=[])


def _probe(tmp_path, runtime):
    import subprocess
    import sys
    from pathlib import Path

    params = tmp_path / "params.yaml"
    params.write_text(PARAMS)
    probe = Path(__file__).parent / "nodes" / "param_probe.py"
    if runtime == "hprm":
        # as hprm_bridge.porting runs a node file, with the probe's argv[1]
        cmd = [sys.executable, "-c",
               "import sys, runpy; from hprm_bridge import porting; porting.install_imports(); "
               f"sys.argv = [{str(probe)!r}, {str(params)!r}]; "
               f"runpy.run_path({str(probe)!r}, run_name='__main__')"]  # fmt: skip
    else:
        cmd = [sys.executable, str(probe), str(params)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()[-1]


def test_the_probe_node_sees_its_parameters_and_names_under_hprm(tmp_path):
    import json

    seen = json.loads(_probe(tmp_path, "hprm"))
    assert seen["values"] == {"rate": 15.0, "gain": 2, "shared": 1, "frame.id": "optical",
                              "name": "hello", "unset": "x", "rate_type": 3}  # fmt: skip
    assert seen["names"] == {"ns": "/robot1", "image": "/robot1/image_raw",
                             "private": "/robot1/cam/debug", "abs": "/abs"}  # fmt: skip


@pytest.mark.ros2
def test_parameters_and_names_match_real_rclpy(tmp_path):
    pytest.importorskip(
        "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
    )
    assert _probe(tmp_path, "hprm") == _probe(tmp_path, "rclpy")
