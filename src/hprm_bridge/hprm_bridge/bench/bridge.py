"""``hprm bench bridge``: the latency the gateway adds between plain ROS 2 nodes.

A plain ROS 2 process (the ROS-free wire client) publishes a
``sensor_msgs/Image`` on ``/bench/in`` stamped with the system clock, and
receives it back on ``/bench/out`` from a relay node (``relay_node.py``,
rclpy code) that is either

* ``ros2 relay``: a plain ROS 2 node (real rclpy where importable, else a
  wire-client relay): two DDS hops; or
* ``hprm relay via gateway (BACKEND)``: the same relay file ported into an HPRM
  federation, reached through its gateway (``hprm-ros run --bridge``): the
  same two DDS hops (to and from the gateway) plus the federation inside; on
  the wire client, and on real rclpy where it is importable
  (:mod:`hprm_bridge.backends`).

One message at a time (the next is sent once the previous came back), 1 KB
and 6 MB images, after warm-up messages. Reported: median and p90 round
trip; the gateway's cost is the difference of medians, against the goal of
less than one DDS hop (half the plain round trip). The result follows
``hprm_core.bench`` (``--quick``, ``--json PATH``).
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from hprm_bridge.wire.dds_config import random_domain_id
from hprm_core import bench

SIZES = [("1 KB", 1_000), ("6 MB", 6_000_000)]
COUNT, QUICK_COUNT, WARMUP = 30, 8, 3
RELAY = Path(__file__).with_name("relay_node.py")
_WIRE_RELAY = """
import time
from hprm_bridge.wire import Node
with Node("relay") as node:
    pub = node.create_publisher("sensor_msgs/msg/Image", "/bench/out")
    node.create_subscription("sensor_msgs/msg/Image", "/bench/in", pub.publish)
    while True:
        node.spin_once(0.1)
"""


def _round_trips(count: int, nbytes: int, domain: int, timeout_s: float = 60.0) -> list[float]:
    """Send one image at a time and time its return (ms); lost ones are skipped."""
    from hprm_bridge.wire import Node

    got: list[Any] = []
    out = []
    with Node("bench_client", domain_id=domain, localhost_only=True) as node:
        pub = node.create_publisher("sensor_msgs/msg/Image", "/bench/in")
        node.create_subscription("sensor_msgs/msg/Image", "/bench/out", got.append)
        if not pub.wait_for_subscriptions(1, timeout_s):
            raise RuntimeError("the relay never subscribed to /bench/in")
        time.sleep(1.0)  # let the return path match too
        width = max(nbytes // 3, 1)
        img = node.types.new("sensor_msgs/msg/Image", height=1, width=width, step=width * 3,
                             encoding="rgb8", data=np.full(width * 3, 7, np.uint8))  # fmt: skip
        for i in range(count + WARMUP):
            got.clear()
            t0 = time.time_ns()
            img.header.stamp.sec, img.header.stamp.nanosec = divmod(t0, 1_000_000_000)
            pub.publish(img)
            deadline = time.monotonic() + 5.0
            while not got and time.monotonic() < deadline:
                node.spin_once(0.01)
            if got and i >= WARMUP:
                out.append((time.time_ns() - t0) / 1e6)
            time.sleep(0.05)
    return out


def _with_relay(argv: list[str], count: int, nbytes: int, backend: str) -> list[float]:
    domain = random_domain_id()
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_LOCALHOST_ONLY="1",
               PYTHONUNBUFFERED="1", HPRM_BRIDGE_BACKEND=backend)  # fmt: skip
    relay = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)  # fmt: skip
    try:
        return _round_trips(count, nbytes, domain)
    finally:
        os.killpg(relay.pid, signal.SIGINT)
        try:
            relay.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(relay.pid, signal.SIGKILL)
            relay.wait()


def _rclpy_importable() -> bool:
    r = subprocess.run([sys.executable, "-c", "import rclpy"], capture_output=True)
    return r.returncode == 0


def _row(variant: str, label: str, ms: list[float], count: int) -> dict[str, Any]:
    ms = sorted(ms)
    row: dict[str, Any] = {"variant": variant, "size": label, "received": len(ms), "sent": count}
    if ms:
        row["median_ms"] = statistics.median(ms)
        row["p90_ms"] = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
    return row


def main(argv: list[str] | None = None) -> int:
    args = bench.parser("bridge", __doc__.split("\n\n")[0]).parse_args(argv)
    count = QUICK_COUNT if args.quick else COUNT
    rclpy = _rclpy_importable()
    plain_relay = ([sys.executable, str(RELAY)] if rclpy
                   else [sys.executable, "-c", _WIRE_RELAY])  # fmt: skip
    ported = [sys.executable, "-m", "hprm_bridge.ros_cli", "run", str(RELAY), "--bridge"]
    plain_name = f"ros2 relay ({'rclpy' if rclpy else 'wire client'})"
    variants = {plain_name: (plain_relay, "wire")}
    for backend in ("wire", "rclpy") if rclpy else ("wire",):
        variants[f"hprm relay via gateway ({backend})"] = (ported, backend)
    rows, ratios = [], {}
    for label, nbytes in SIZES:
        measured = {}
        for variant, (cmd, backend) in variants.items():
            print(f"bridge: {variant}, {label} ({count} round trips)...", file=sys.stderr,
                  flush=True)  # fmt: skip
            measured[variant] = _row(variant, label, _with_relay(cmd, count, nbytes, backend),
                                     count)  # fmt: skip
            rows.append(measured[variant])
        plain = measured[plain_name]
        for variant, row in measured.items():
            if variant != plain_name and plain.get("median_ms") and row.get("median_ms"):
                added = row["median_ms"] - plain["median_ms"]
                backend = variants[variant][1]
                ratios[f"gateway ({backend}) added / one DDS hop, {label}"] = added / (
                    plain["median_ms"] / 2)  # fmt: skip
    doc = bench.result("bridge", {"quick": args.quick, "count": count,
                                  "plain_relay": "rclpy" if rclpy else "wire client"},
                       rows, ratios)  # fmt: skip
    bench.report(doc, args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
