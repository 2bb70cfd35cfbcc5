"""Against a real ROS 2 Humble (rclpy + an rmw + ros2cli), when one is importable.

These run where a local Humble build is sourced (DEVELOPERS.md) and skip
otherwise; the same behaviour is covered ROS-free by the other test modules.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from hprm_bridge.wire import Node

pytestmark = pytest.mark.ros2
pytest.importorskip(
    "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
)

RCLPY_TALKER = """
import sys, time, json, numpy as np, rclpy
from rclpy.node import Node
from std_msgs.msg import String
from sensor_msgs.msg import Image
rclpy.init()
n = Node("rclpy_talker")
ps = n.create_publisher(String, "/from_rclpy", 10)
pi = n.create_publisher(Image, "/from_rclpy_img", 10)
end = time.time() + 20
i = 0
while time.time() < end:
    ps.publish(String(data=f"rclpy {i}"))
    img = Image(height=1, width=1000, encoding="mono8", step=1000)
    img.header.frame_id = f"f{i}"
    img.data = (np.arange(1000) % 251).astype(np.uint8).tobytes()
    pi.publish(img)
    i += 1
    rclpy.spin_once(n, timeout_sec=0.1)
"""

RCLPY_LISTENER = """
import json, time, hashlib, rclpy
from rclpy.node import Node
from std_msgs.msg import String
from sensor_msgs.msg import Image
rclpy.init()
n = Node("rclpy_listener")
got = {"s": [], "i": []}
n.create_subscription(String, "/to_rclpy", lambda m: got["s"].append(m.data), 10)
n.create_subscription(Image, "/to_rclpy_img", lambda m: got["i"].append(
    [m.width, m.encoding, hashlib.sha256(bytes(m.data)).hexdigest()]), 10)
end = time.time() + 20
while time.time() < end and (len(got["s"]) < 3 or len(got["i"]) < 3):
    rclpy.spin_once(n, timeout_sec=0.1)
print(json.dumps(got), flush=True)
"""


def _env(domain: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(ROS_DOMAIN_ID=str(domain), ROS_LOCALHOST_ONLY="1")
    env.pop("CYCLONEDDS_URI", None)
    return env


def test_rclpy_to_us(domain):
    talker = subprocess.Popen([sys.executable, "-c", RCLPY_TALKER], env=_env(domain))
    try:
        with Node("our_listener", domain_id=domain, localhost_only=True) as node:
            s = node.create_subscription("std_msgs/msg/String", "/from_rclpy")
            i = node.create_subscription("sensor_msgs/msg/Image", "/from_rclpy_img")
            m = s.take(timeout_sec=15)
            img = i.take(timeout_sec=15)
        assert m is not None and m.data.startswith("rclpy ")
        assert img is not None and img.width == 1000 and img.encoding == "mono8"
        assert np.array_equal(img.data, (np.arange(1000) % 251).astype(np.uint8))
    finally:
        talker.kill()
        talker.wait()


def test_us_to_rclpy(domain):
    import hashlib

    listener = subprocess.Popen(
        [sys.executable, "-c", RCLPY_LISTENER], env=_env(domain), stdout=subprocess.PIPE, text=True
    )
    data = (np.arange(3000) % 7).astype(np.uint8)
    with Node("our_talker", domain_id=domain, localhost_only=True) as node:
        ps = node.create_publisher("std_msgs/msg/String", "/to_rclpy")
        pi = node.create_publisher("sensor_msgs/msg/Image", "/to_rclpy_img")
        assert ps.wait_for_subscriptions(1, 20) and pi.wait_for_subscriptions(1, 20)
        for k in range(3):
            ps.publish(node.types.new("std_msgs/msg/String", data=f"ours {k}"))
            pi.publish(
                node.types.new(
                    "sensor_msgs/msg/Image",
                    height=1,
                    width=3000,
                    step=3000,
                    encoding="mono8",
                    data=data,
                )
            )
            time.sleep(0.1)
        out, _ = listener.communicate(timeout=30)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["s"][:3] == ["ours 0", "ours 1", "ours 2"]
    assert got["i"][0] == [3000, "mono8", hashlib.sha256(data.tobytes()).hexdigest()]


@pytest.mark.skipif(shutil.which("ros2") is None, reason="ros2 CLI (ros2cli) not on PATH")
def test_ros2_cli_sees_node_and_endpoints(domain):
    with Node("wire_node", "/hprm", domain_id=domain, localhost_only=True) as node:
        node.create_publisher("std_msgs/msg/String", "chatter")
        node.create_subscription("sensor_msgs/msg/Image", "camera")
        time.sleep(1.0)
        env = _env(domain)
        nodes = subprocess.run(
            ["ros2", "node", "list", "--no-daemon", "--spin-time", "3"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        info = subprocess.run(
            ["ros2", "topic", "info", "-v", "--no-daemon", "--spin-time", "3", "/hprm/chatter"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
    assert "/hprm/wire_node" in nodes.split()
    assert "Type: std_msgs/msg/String" in info
    assert "Node name: wire_node" in info and "Node namespace: /hprm" in info
    assert "Endpoint type: PUBLISHER" in info and "RELIABLE" in info
    assert textwrap.dedent(info).count("Publisher count: 1") == 1
