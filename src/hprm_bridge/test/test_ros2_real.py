"""Against a real ROS 2 Humble (rclpy + rmw_cyclonedds_cpp + ros2cli), when one is importable.

These run where a Humble install is sourced (DEVELOPERS.md) and skip otherwise;
the same behaviour is covered ROS-free by the other test modules. Every process
here, ROS or ours, runs with ``ROS_LOCALHOST_ONLY=1`` (see ``conftest.peer_env``),
the setting whose loopback discovery differs between Humble's Cyclone and ours
(:mod:`hprm_bridge.wire.dds_config`). Each wait ends on an event; the timeouts
are only upper bounds, generous for a loaded 2-core machine.
"""

import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hprm_bridge.wire import Node

pytestmark = pytest.mark.ros2
pytest.importorskip(
    "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
)

HERE = Path(__file__).resolve().parent
WAIT = 90.0
"""Upper bound for one discovery or delivery."""


def test_rclpy_to_us(domain, peers):
    peers("rclpy_talker", {"width": 1000}, domain)
    with Node("our_listener", domain_id=domain, localhost_only=True) as node:
        strings = node.create_subscription("std_msgs/msg/String", "/from_rclpy")
        images = node.create_subscription("sensor_msgs/msg/Image", "/from_rclpy_img")
        m = strings.take(timeout_sec=WAIT)
        img = images.take(timeout_sec=WAIT)
    assert m is not None and m.data.startswith("rclpy ")
    assert img is not None and img.width == 1000 and img.encoding == "mono8"
    assert np.array_equal(img.data, (np.arange(1000) % 251).astype(np.uint8))


def test_us_to_rclpy(domain, peers):
    listener = peers("rclpy_listener", {"count": 3}, domain)
    data = (np.arange(3000) % 7).astype(np.uint8)
    with Node("our_talker", domain_id=domain, localhost_only=True) as node:
        strings = node.create_publisher("std_msgs/msg/String", "/to_rclpy")
        images = node.create_publisher("sensor_msgs/msg/Image", "/to_rclpy_img")
        assert strings.wait_for_subscriptions(1, WAIT) and images.wait_for_subscriptions(1, WAIT)
        for k in range(3):  # reliable and matched: kept until rclpy acknowledges them
            strings.publish(node.types.new("std_msgs/msg/String", data=f"ours {k}"))
            images.publish(
                node.types.new(
                    "sensor_msgs/msg/Image",
                    height=1,
                    width=3000,
                    step=3000,
                    encoding="mono8",
                    data=data,
                )
            )
        got = listener.result(timeout=2 * WAIT)
    assert got["strings"] == ["ours 0", "ours 1", "ours 2"]
    assert got["images"][0] == [3000, "mono8", hashlib.sha256(data.tobytes()).hexdigest()]


def _ros2(*args: str, env: dict[str, str]) -> str:
    return subprocess.run(
        ["ros2", *args, "--no-daemon", "--spin-time", "3"],
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    ).stdout


def _until(probe, done, timeout: float = WAIT) -> str:
    """Run ``probe()`` (itself a bounded wait) until ``done(output)``; the last output."""
    deadline = time.monotonic() + timeout
    out = probe()
    while not done(out) and time.monotonic() < deadline:
        out = probe()
    return out


@pytest.mark.skipif(shutil.which("ros2") is None, reason="ros2 CLI (ros2cli) not on PATH")
def test_ros2_cli_sees_node_and_endpoints(domain, ros_env):
    with Node("wire_node", "/hprm", domain_id=domain, localhost_only=True) as node:
        node.create_publisher("std_msgs/msg/String", "chatter")
        node.create_subscription("sensor_msgs/msg/Image", "camera")
        nodes = _until(
            lambda: _ros2("node", "list", env=ros_env), lambda out: "/hprm/wire_node" in out
        )
        info = _until(
            lambda: _ros2("topic", "info", "-v", "/hprm/chatter", env=ros_env),
            lambda out: "Publisher count: 1" in out,
        )
    assert "/hprm/wire_node" in nodes.split()
    assert "Type: std_msgs/msg/String" in info
    assert "Node name: wire_node" in info and "Node namespace: /hprm" in info
    assert "Endpoint type: PUBLISHER" in info and "RELIABLE" in info
    assert info.count("Publisher count: 1") == 1


def _echo_exchange(echo: dict, ping: dict, domain: int) -> None:
    """What every ``rclpy_echo`` / ``env_ping`` pair must show (peer.py)."""
    assert ping["domain_id"] == domain and ping["localhost_only"] is True
    assert ping["matched"], "rclpy's /ping subscription never matched us"
    assert ping["pong"] == "ping from near_node", "rclpy never echoed our ping"
    assert ping["bye"] == "bye /near_node"
    assert "ping from near_node" in echo["pings"]
    assert "/near_node" in echo["graph"] and "/rclpy_echo" in echo["graph"]


def test_domain_and_localhost_only_from_environment(domain, peers):
    """``Node("near_node")`` with neither argument: both come from ROS_DOMAIN_ID /
    ROS_LOCALHOST_ONLY (and only from there: the peer's environment has nothing else)."""
    echo = peers("rclpy_echo", {}, domain)
    ping = peers("env_ping", {}, domain).result(timeout=3 * WAIT)
    _echo_exchange(echo.result(timeout=WAIT), ping, domain)


def test_localhost_only_with_multicast_loopback(in_netns, domain):
    """Where ``lo`` carries the MULTICAST flag Humble's Cyclone multicasts discovery
    instead (random unicast ports, no participant index): we must find it there too."""
    jobs = [["rclpy_echo", {"domain": domain}], ["env_ping", {"domain": domain}]]
    r = subprocess.run(
        in_netns([sys.executable, str(HERE / "netns_pair.py"), json.dumps(jobs)]),
        capture_output=True,
        text=True,
        timeout=4 * WAIT,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    echo, ping = json.loads(r.stdout)
    for res in (echo, ping):
        assert res["done"] is not None, f"{res['role']} failed: {res['stderr']}"
    _echo_exchange(echo["done"], ping["done"], domain)


def test_domains_are_isolated_against_rclpy(domain, other_domain, peers):
    """Our node on another domain neither sees nor is seen by an rclpy node, while
    one on the rclpy node's domain (created later) completes a round trip with it."""
    echo = peers("rclpy_echo", {}, domain)
    ping = peers("env_ping", {"far_domain": other_domain}, domain).result(timeout=3 * WAIT)
    got = echo.result(timeout=WAIT)
    _echo_exchange(got, ping, domain)
    assert ping["far"] == {"subscriptions": 0, "publishers": 0, "received": False}
    assert not [p for p in got["pings"] if p.startswith("far ")]
    assert "/far_node" not in got["graph"]
