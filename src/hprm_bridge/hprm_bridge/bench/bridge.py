"""``hprm bench bridge``: the latency the gateway adds between plain ROS 2 nodes,
and the message rate at which it stops keeping up.

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

Every relay runs at once, each in a ROS domain of its own, and the client
takes turns between them, one round trip each: a shared machine's load
drifts over a run, and taking turns spreads the drift over every variant
instead of charging it to whichever ran when the machine was busy.

Latency: one message at a time (the next is sent once the previous came
back), 1 KB and 6 MB images, after warm-up messages; median and p90 round
trip. The gateway's cost is the difference of medians, against the goal of
less than one DDS hop (half the plain round trip).

Throughput: each relay in turn gets a burst at rising rates (one second per
rate); it keeps up at a rate when every message comes back and their median
round trip stays within twice its one-at-a-time median. Reported: the highest
rate kept up, and the first rate that was not (``-`` when none of the rates
tried was too much). The client itself publishes from Python, so its own
limit caps every variant alike. The result follows ``hprm_core.bench``
(``--quick``, ``--json PATH``, ``--plot PATH``: round trip against offered
rate).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from hprm_bridge.bench import ROS2_DDS_XML, rclpy_missing, ros2_baseline_env
from hprm_bridge.wire.dds_config import random_domain_id
from hprm_core import bench

SIZES = [("1 KB", 1_000), ("6 MB", 6_000_000)]
RATES_HZ = {"1 KB": (100, 200, 500, 1000, 2000, 4000), "6 MB": (5, 10, 20, 40, 80)}
QUICK_RATES_HZ = {"1 KB": (100, 200), "6 MB": (5, 10)}
COUNT, QUICK_COUNT, WARMUP = 100, 8, 3
BURST_S, QUICK_BURST_S = 1.0, 0.3
DELAYED = 2.0  # a burst's median round trip past this many times the one-at-a-time one
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


class _Client:
    """The plain ROS 2 side of one relay: publishes stamped images on its
    domain and notes when each comes back (by stamp)."""

    def __init__(self, stack: contextlib.ExitStack, argv: list[str], backend: str) -> None:
        from hprm_bridge.wire import Node

        domain = random_domain_id()
        # every relay's DDS tuned alike: the plain rclpy relay, and the gateway on either
        # backend (the wire client reads CYCLONEDDS_URI after its own settings: its larger
        # buffer gives way to the baselines' too)
        env = ros2_baseline_env(dict(os.environ, ROS_DOMAIN_ID=str(domain),
                                     ROS_LOCALHOST_ONLY="1", PYTHONUNBUFFERED="1",
                                     HPRM_BRIDGE_BACKEND=backend))  # fmt: skip
        self.output = ""  # what the relay printed, once it stopped
        log = stack.enter_context(tempfile.TemporaryFile("w+"))  # noqa: SIM115 (the stack closes it)
        stack.callback(self._keep_output, log)  # (after _stop: callbacks run last first)
        relay = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)  # fmt: skip
        stack.callback(_stop, relay)
        self.node = stack.enter_context(Node("bench_client", domain_id=domain,
                                             localhost_only=True))  # fmt: skip
        self.pub = self.node.create_publisher("sensor_msgs/msg/Image", "/bench/in")
        self.back: dict[int, int] = {}  # stamp (ns) -> arrival (ns)
        self.node.create_subscription("sensor_msgs/msg/Image", "/bench/out", self._returned)

    def _keep_output(self, log: Any) -> None:
        log.seek(0)
        self.output = log.read()

    def self_granted(self) -> int:
        """Tags the gateway granted itself (``grants.self_paced``), from its last words:
        none means an RTI round trip per message (the regression cd1c807 brought)."""
        m = re.search(r"ros2_gateway granted itself (\d+) tags", self.output)
        return int(m.group(1)) if m else 0

    def _returned(self, msg: Any) -> None:
        stamp = msg.header.stamp
        self.back[stamp.sec * 1_000_000_000 + stamp.nanosec] = time.time_ns()

    def ready(self, timeout_s: float = 60.0) -> None:
        if not self.pub.wait_for_subscriptions(1, timeout_s):
            raise RuntimeError("the relay never subscribed to /bench/in")

    def send(self, img: Any) -> int:
        t0 = time.time_ns()
        img.header.stamp.sec, img.header.stamp.nanosec = divmod(t0, 1_000_000_000)
        self.pub.publish(img)
        return t0

    def wait_for(self, stamps: list[int], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while any(s not in self.back for s in stamps) and time.monotonic() < deadline:
            self.node.spin_once(0.01)

    def round_trip(self, img: Any) -> float | None:
        """One message there and back, in ms (None: lost)."""
        t0 = self.send(img)
        self.wait_for([t0], 5.0)
        back = self.back.pop(t0, None)
        return None if back is None else (back - t0) / 1e6

    def burst(self, img: Any, rate_hz: float, seconds: float) -> tuple[int, list[float]]:
        """Send at ``rate_hz`` for ``seconds``; how many were sent, and the
        round trips (ms) of those that came back within a second after."""
        self.back.clear()
        n = max(1, round(rate_hz * seconds))
        start = time.monotonic()
        stamps = []
        for i in range(n):
            while (ahead := start + i / rate_hz - time.monotonic()) > 0:
                self.node.spin_once(min(ahead, 0.002))
            stamps.append(self.send(img))
        self.wait_for(stamps, 1.0)
        return n, [(self.back[s] - s) / 1e6 for s in stamps if s in self.back]


def _stop(relay: subprocess.Popen) -> None:
    os.killpg(relay.pid, signal.SIGINT)
    try:
        relay.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(relay.pid, signal.SIGKILL)
        relay.wait()


def _image(client: _Client, nbytes: int) -> Any:
    width = max(nbytes // 3, 1)
    return client.node.types.new("sensor_msgs/msg/Image", height=1, width=width,
                                 step=width * 3, encoding="rgb8",
                                 data=np.full(width * 3, 7, np.uint8))  # fmt: skip


def _latency(clients: dict[str, _Client], nbytes: int, count: int) -> dict[str, list[float]]:
    """Round trips (ms) of every relay, taking turns, after warm-up ones."""
    images = {v: _image(c, nbytes) for v, c in clients.items()}
    got: dict[str, list[float]] = {v: [] for v in clients}
    for i in range(count + WARMUP):
        for variant, client in clients.items():
            ms = client.round_trip(images[variant])
            if ms is not None and i >= WARMUP:
                got[variant].append(ms)
            time.sleep(0.01)
    return got


def _throughput(
    client: _Client, nbytes: int, rates: tuple[int, ...], seconds: float, alone_ms: float
) -> tuple[list[tuple[int, float]], int | None, int | None]:
    """Rising bursts until one is not kept up: the (rate, median ms) curve,
    the highest rate kept up and the first one not."""
    img = _image(client, nbytes)
    curve, kept = [], None
    for rate in rates:
        sent, ms = client.burst(img, rate, seconds)
        median = statistics.median(ms) if ms else float("inf")
        curve.append((rate, median))
        if len(ms) < sent or median > DELAYED * alone_ms:
            return curve, kept, rate
        kept = rate
        time.sleep(0.2)  # let the relay drain before the next rate
    return curve, kept, None


def _row(variant: str, label: str, ms: list[float], count: int) -> dict[str, Any]:
    row: dict[str, Any] = {"variant": variant, "size": label, "received": len(ms), "sent": count}
    return {**row, **bench.spread(ms, "ms")}


def main(argv: list[str] | None = None) -> int:
    p = bench.parser("bridge", __doc__.split("\n\n")[0])
    p.add_argument("--plot", metavar="PNG", help="round trip against offered rate")
    args = p.parse_args(argv)
    count = QUICK_COUNT if args.quick else COUNT
    rates = QUICK_RATES_HZ if args.quick else RATES_HZ
    seconds = QUICK_BURST_S if args.quick else BURST_S
    rclpy = rclpy_missing() is None
    plain_relay = ([sys.executable, str(RELAY)] if rclpy
                   else [sys.executable, "-c", _WIRE_RELAY])  # fmt: skip
    ported = [sys.executable, "-m", "hprm_bridge.ros_cli", "run", str(RELAY), "--bridge"]
    plain_name = f"ros2 relay ({'rclpy' if rclpy else 'wire client'})"
    variants = {plain_name: (plain_relay, "wire")}
    for backend in ("wire", "rclpy") if rclpy else ("wire",):
        variants[f"hprm relay via gateway ({backend})"] = (ported, backend)
    rows, ratios, series = [], {}, {}
    with contextlib.ExitStack() as stack:
        print(f"bridge: starting {len(variants)} relays...", file=sys.stderr, flush=True)
        clients = {v: _Client(stack, cmd, backend) for v, (cmd, backend) in variants.items()}
        for client in clients.values():
            client.ready()
        time.sleep(1.0)  # let the return paths match too
        for label, nbytes in SIZES:
            print(f"bridge: {label}, {count} round trips per relay, taking turns...",
                  file=sys.stderr, flush=True)  # fmt: skip
            measured = {v: _row(v, label, ms, count)
                        for v, ms in _latency(clients, nbytes, count).items()}  # fmt: skip
            for variant, row in measured.items():
                print(f"bridge: {variant}, {label}, bursts at {rates[label]} Hz...",
                      file=sys.stderr, flush=True)  # fmt: skip
                if "median_ms" in row:
                    curve, kept, failed = _throughput(clients[variant], nbytes, rates[label],
                                                      seconds, row["median_ms"])  # fmt: skip
                    row["keeps_up_hz"] = kept if kept is not None else "-"
                    row["falls_behind_hz"] = failed if failed is not None else "-"
                    series[f"{variant}, {label}"] = ([r for r, _ in curve],
                                                     [m for _, m in curve])  # fmt: skip
                rows.append(row)
            plain = measured[plain_name]
            for variant, row in measured.items():
                if variant != plain_name and plain.get("median_ms") and row.get("median_ms"):
                    added = row["median_ms"] - plain["median_ms"]
                    backend = variants[variant][1]
                    ratios[f"gateway ({backend}) added / one DDS hop, {label}"] = added / (
                        plain["median_ms"] / 2)  # fmt: skip
    # A relay that only answers leaves the gateway self-paced: say so, and loudly when not.
    granted = {v: clients[v].self_granted() for v in variants if v != plain_name}
    for variant, tags in granted.items():
        print(f"bridge: {variant}: the gateway granted itself {tags} tags"
              + ("" if tags else " (none: it asked the RTI for every message)"),
              file=sys.stderr)  # fmt: skip
    doc = bench.result("bridge", {"quick": args.quick, "count": count, "burst_s": seconds,
                                  "rates_hz": rates,
                                  "plain_relay": "rclpy" if rclpy else "wire client",
                                  "ros2_dds": ROS2_DDS_XML},
                       rows, ratios)  # fmt: skip
    doc["gateway_self_granted_tags"] = granted
    # the bursts' median round trip (ms) by offered rate (Hz), per variant and size
    doc["bursts"] = {name: dict(zip(map(str, xs), ms, strict=True))
                     for name, (xs, ms) in series.items()}  # fmt: skip
    bench.report(doc, args)
    if args.plot:
        bench.save_plot(args.plot, series, title="hprm bench bridge: round trip under load",
                        xlabel="offered rate (messages/s)",
                        ylabel="median round trip (ms)", logx=True)  # fmt: skip
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
