"""``hprm bench ros2-wire``: one-way latency of ``sensor_msgs/msg/Image`` between processes.

Two processes per client: a sender stamps ``header.stamp`` with
``CLOCK_MONOTONIC`` (system-wide, so comparable across processes on one host)
right before ``publish()``; the receiver takes the clock again once the message
is decoded with its pixels as a numpy array, and answers with a small ack
(``std_msgs/msg/String``) so the next image is only sent when the previous one
arrived (no queueing in the figures). Sizes 1 KB, 1 MB, 10 MB; reliable,
keep-last 10, volatile (ROS 2 default QoS) on both clients.

Clients measured in the same run:

* ``hprm wire`` - this package's ROS-free client (:mod:`hprm_bridge.wire`);
* ``dora-rs ros2`` - dora-rs's ROS 2 client (Rust, RustDDS), through its Python
  API and pyarrow. RustDDS multicasts discovery on every interface, so both
  clients run inside a private network namespace (``unshare -n``) with only a
  loopback; where that is impossible the dora rows are skipped, with the reason.

The result follows ``hprm_core.bench`` (``--quick``, ``--json PATH``); ratios are
dora / hprm of the median latency per size.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

SIZES = [("1 KB", 1_000), ("1 MB", 1_000_000), ("10 MB", 10_000_000)]
ITERATIONS = {"1 KB": 200, "1 MB": 100, "10 MB": 30}
QUICK_ITERATIONS = {"1 KB": 10, "1 MB": 8, "10 MB": 4}
WARMUP = 3
_IMAGE_TOPIC = "/bench/image"
_ACK_TOPIC = "/bench/ack"


def _now_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def _emit(**kw: Any) -> None:
    print(json.dumps(kw), flush=True)


# --- hprm wire client ---------------------------------------------------------


def _hprm_sender(plan: list[tuple[str, int, int]], domain: int) -> None:
    from hprm_bridge.wire import Node

    with Node("bench_sender", domain_id=domain, localhost_only=True) as node:
        pub = node.create_publisher("sensor_msgs/msg/Image", _IMAGE_TOPIC)
        ack = node.create_subscription("std_msgs/msg/String", _ACK_TOPIC)
        if not (pub.wait_for_subscriptions(1, 30) and ack.wait_for_publishers(1, 30)):
            raise SystemExit("hprm sender: receiver never matched")
        for label, nbytes, count in plan:
            width = nbytes // 3
            img = node.types.new(
                "sensor_msgs/msg/Image",
                height=1,
                width=width,
                step=width * 3,
                encoding="rgb8",
                data=np.full(width * 3, 7, dtype=np.uint8),
            )
            img.header.frame_id = label
            for _ in range(count + WARMUP):
                t = _now_ns()
                img.header.stamp.sec, img.header.stamp.nanosec = divmod(t, 1_000_000_000)
                pub.publish(img)
                if ack.take(timeout_sec=20) is None:
                    _emit(event="lost", size=label)
        _emit(event="done")


def _hprm_receiver(plan: list[tuple[str, int, int]], domain: int) -> None:
    from hprm_bridge.wire import Node

    lat: dict[str, list[float]] = {label: [] for label, _, _ in plan}
    total = sum(count + WARMUP for _, _, count in plan)
    with Node("bench_receiver", domain_id=domain, localhost_only=True) as node:
        sub = node.create_subscription("sensor_msgs/msg/Image", _IMAGE_TOPIC)
        pub = node.create_publisher("std_msgs/msg/String", _ACK_TOPIC)
        ack = node.types.new("std_msgs/msg/String", data="ok")
        for _ in range(total):
            msg = sub.take(timeout_sec=30)
            if msg is None:
                break
            t = _now_ns()
            sent = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            assert msg.data.size == msg.width * 3
            lat[msg.header.frame_id].append((t - sent) / 1e6)
            pub.publish(ack)
        time.sleep(0.2)
    _emit(event="done", latencies_ms={k: v[WARMUP:] for k, v in lat.items()})


# --- dora-rs ROS 2 client -----------------------------------------------------


def _dora_node(name: str, domain: int, msg_root: str) -> tuple[Any, Any, Any]:
    import warnings

    import dora

    warnings.simplefilter("ignore")
    ctx = dora.Ros2Context(ros_paths=[msg_root], domain_id=domain)
    node = ctx.new_node(name, "/", dora.Ros2NodeOptions(rosout=False))
    qos = dora.Ros2QosPolicies(reliable=True, keep_last=10)
    return ctx, node, qos


def _dora_next(sub: Any, deadline: float) -> Any:
    while time.monotonic() < deadline:
        m = sub.next()
        if m is not None:
            return m
    return None


def _dora_sender(plan: list[tuple[str, int, int]], domain: int, msg_root: str) -> None:
    import pyarrow as pa

    _ctx, node, qos = _dora_node("bench_sender", domain, msg_root)
    pub = node.create_publisher(node.create_topic(_IMAGE_TOPIC, "sensor_msgs/Image", qos))
    ack = node.create_subscription(node.create_topic(_ACK_TOPIC, "std_msgs/String", qos))
    # no match API: send a first probe until the receiver acknowledges one
    probe = _dora_image(pa, "probe", 3, 0)
    deadline = time.monotonic() + 30
    while True:
        pub.publish(probe)
        if _dora_next(ack, time.monotonic() + 0.5) is not None:
            break
        if time.monotonic() > deadline:
            raise SystemExit("dora sender: receiver never answered")
    time.sleep(0.3)
    while _dora_next(ack, time.monotonic() + 0.2) is not None:  # drain extra probe acks
        pass
    for label, nbytes, count in plan:
        data = np.full((nbytes // 3) * 3, 7, dtype=np.uint8)
        for _ in range(count + WARMUP):
            t = _now_ns()
            pub.publish(_dora_image(pa, label, data, t))
            if _dora_next(ack, time.monotonic() + 20) is None:
                _emit(event="lost", size=label)
    _emit(event="done")


def _dora_image(pa: Any, label: str, data: Any, t: int) -> Any:
    if isinstance(data, int):
        data = np.zeros(data, dtype=np.uint8)
    sec, nsec = divmod(t, 1_000_000_000)
    return pa.array(
        [
            {
                "header": {
                    "stamp": {"sec": np.int32(sec), "nanosec": np.uint32(nsec)},
                    "frame_id": label,
                },
                "height": np.uint32(1),
                "width": np.uint32(data.size // 3),
                "encoding": "rgb8",
                "is_bigendian": np.uint8(0),
                "step": np.uint32(data.size),
                "data": data,
            }
        ]
    )


def _dora_receiver(plan: list[tuple[str, int, int]], domain: int, msg_root: str) -> None:
    import pyarrow as pa

    _ctx, node, qos = _dora_node("bench_receiver", domain, msg_root)
    sub = node.create_subscription(node.create_topic(_IMAGE_TOPIC, "sensor_msgs/Image", qos))
    pub = node.create_publisher(node.create_topic(_ACK_TOPIC, "std_msgs/String", qos))
    ack = pa.array([{"data": "ok"}])
    lat: dict[str, list[float]] = {label: [] for label, _, _ in plan}
    remaining = sum(count + WARMUP for _, _, count in plan)
    deadline = time.monotonic() + 60 + remaining * 2
    while remaining > 0:
        m = _dora_next(sub, deadline)
        if m is None:
            break
        stamp = m.field("header").field("stamp")
        label = m.field("header").field("frame_id")[0].as_py()
        pixels = m.field("data").flatten().to_numpy(zero_copy_only=False)
        t = _now_ns()
        pub.publish(ack)
        if label == "probe":
            continue
        sent = stamp.field("sec")[0].as_py() * 1_000_000_000 + stamp.field("nanosec")[0].as_py()
        assert pixels.size == m.field("width")[0].as_py() * 3
        lat[label].append((t - sent) / 1e6)
        remaining -= 1
    time.sleep(0.2)
    _emit(event="done", latencies_ms={k: v[WARMUP:] for k, v in lat.items()})


# --- orchestration -------------------------------------------------------------


def _netns_prefix() -> list[str] | None:
    """``unshare -n`` + loopback set-up, if this machine allows it."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return None
    setup = "ip link set lo up && ip link set lo multicast on"
    try:
        r = subprocess.run(
            ["unshare", "-n", "sh", "-c", setup], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    return ["unshare", "-n", "sh", "-c", f'{setup} && exec "$0" "$@"']


def _run_pair(client: str, plan: list[tuple[str, int, int]], prefix: list[str] | None) -> Any:
    """Start receiver + sender (inside one network namespace when ``prefix``)."""
    from hprm_bridge.wire.dds_config import random_domain_id

    domain = random_domain_id()
    args = json.dumps({"client": client, "plan": plan, "domain": domain})
    cmd = [sys.executable, "-m", "hprm_bridge.bench.wire", "--role", "pair", args]
    if prefix:
        cmd = [*prefix, *cmd]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CYCLONEDDS", "ROS_"))}
    env["RUST_LOG"] = "error"
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{client} pair failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _pair(spec: dict[str, Any]) -> None:
    """Inside the namespace: run receiver and sender processes, print the receiver's result."""
    client, plan, domain = spec["client"], spec["plan"], spec["domain"]
    with tempfile.TemporaryDirectory(prefix="hprm-bench-") as tmp:
        if client == "dora":
            from hprm_bridge.wire import TypeRegistry

            TypeRegistry(use_ament_prefix_path=False).write_msg_tree(
                tmp, ["sensor_msgs/msg/Image", "std_msgs/msg/String"]
            )
        payload = json.dumps({"plan": plan, "domain": domain, "msg_root": tmp})
        base = [sys.executable, "-m", "hprm_bridge.bench.wire", "--role"]
        recv = subprocess.Popen([*base, f"{client}_receiver", payload], stdout=subprocess.PIPE)
        send = subprocess.Popen([*base, f"{client}_sender", payload], stdout=subprocess.PIPE)
        try:
            send.communicate(timeout=900)
            out, _ = recv.communicate(timeout=60)
        finally:
            for p in (send, recv):
                if p.poll() is None:
                    p.kill()
                    p.wait()
    print(out.decode().strip().splitlines()[-1], flush=True)


def _row(variant: str, label: str, nbytes: int, values: list[float]) -> dict[str, Any]:
    if not values:
        return {"variant": variant, "size": label, "bytes": nbytes, "skipped": "no sample arrived"}
    qs = statistics.quantiles(values, n=10) if len(values) >= 2 else [values[0]] * 9
    return {
        "variant": variant,
        "size": label,
        "bytes": nbytes,
        "n": len(values),
        "p50_ms": statistics.median(values),
        "p90_ms": qs[8],
        "min_ms": min(values),
        "mean_ms": statistics.fmean(values),
    }


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``hprm bench ros2-wire``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--role"]:
        role, spec = argv[1], json.loads(argv[2])
        if role == "pair":
            _pair(spec)
        elif role.startswith("hprm_"):
            globals()[f"_{role}"]([tuple(p) for p in spec["plan"]], spec["domain"])
        else:
            globals()[f"_{role}"](
                [tuple(p) for p in spec["plan"]], spec["domain"], spec["msg_root"]
            )
        return 0

    from hprm_core import bench

    parser = bench.parser("ros2-wire", "One-way sensor_msgs/Image latency, hprm wire vs dora-rs")
    args = parser.parse_args(argv)
    counts = QUICK_ITERATIONS if args.quick else ITERATIONS
    plan = [(label, nbytes, counts[label]) for label, nbytes in SIZES]
    prefix = _netns_prefix()
    rows: list[dict[str, Any]] = []
    medians: dict[tuple[str, str], float] = {}
    clients = [("hprm", "hprm wire"), ("dora", "dora-rs ros2")]
    for client, variant in clients:
        skip = None
        if client == "dora":
            try:
                import dora  # noqa: F401
            except ImportError:
                skip = "dora-rs is not installed (pip install dora-rs)"
            if prefix is None:
                skip = (
                    "needs a private network namespace (unshare -n): RustDDS multicasts "
                    "discovery on every interface"
                )
        if skip:
            rows += [
                {"variant": variant, "size": label, "bytes": n, "skipped": skip}
                for label, n in SIZES
            ]
            continue
        result = _run_pair(client, plan, prefix)
        for label, nbytes in SIZES:
            row = _row(variant, label, nbytes, result["latencies_ms"].get(label, []))
            rows.append(row)
            if "p50_ms" in row:
                medians[(client, label)] = row["p50_ms"]
    ratios = {
        f"dora/hprm p50 {label}": medians[("dora", label)] / medians[("hprm", label)]
        for label, _ in SIZES
        if ("dora", label) in medians and ("hprm", label) in medians
    }
    params = {
        "quick": args.quick,
        "iterations": counts,
        "qos": "reliable keep-last 10 volatile",
        "netns": prefix is not None,
    }
    doc = bench.result("ros2-wire", params, rows, ratios)
    bench.report(doc, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
