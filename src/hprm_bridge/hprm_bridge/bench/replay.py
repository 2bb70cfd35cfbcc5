"""``hprm bench replay``: a bag through the example pipeline, HPRM vs plain ROS 2 replay.

A seeded bag (``write_bag``: 64x48 rgb8 camera frames at 10 Hz received up to 30 ms after
their stamp, IMU at 50 Hz, equal timestamps where they meet) is replayed through the example
package's detector, planner and controller (:mod:`hprm_bridge.examples.ros_pipeline`,
unchanged) ``--runs`` times each way:

* ``rosbags read``: reading and deserializing the bag alone, no middleware (the ceiling);
* ``hprm fast``: ``hprm-ros bag play --fast`` (centralized): logical time as fast as the
  nodes compute; the figure is the player's own replay time (start tag to last message),
  and "wall" includes starting the five processes;
* ``rclpy rate R``: the node files as plain rclpy processes, the bag published at
  R x its recorded pace by a plain rclpy player (:mod:`.rclpy_bag_player`: what
  ``ros2 bag play --rate R`` does; the Humble used here has no rosbag2), where rclpy
  imports.

Each run's output is the controller's command sequence (stamp, linear, angular); the table
says how many runs' sequences differ from the first run's, and how many commands a run
produced at least/most: the determinism contrast that rosbag2 issues 1254 and 2173 describe.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hprm_bridge.bench import rclpy_missing, stop_processes
from hprm_bridge.wire.dds_config import random_domain_id
from hprm_core import bench

SECONDS, QUICK_SECONDS = 10.0, 2.0
RUNS, QUICK_RUNS = 10, 3
RCLPY_RATES = (1.0, 10.0, 100.0)
T0 = 1_700_000_000_000_000_000
_CMD = re.compile(r"^(?:\[controller\] )?CMD (\d+) (\S+) (\S+) -?\d+$", re.M)
_PLAYED = re.compile(r"bag: played (\d+) messages in ([\d.]+) s")


def write_bag(
    path: str | Path,
    *,
    seconds: float = 2.0,
    seed: int = 5,
    jitter: bool = True,
    storage: str = "mcap",
) -> int:
    """The seeded test bag (MCAP, or ``storage="sqlite3"``); returns its message count."""
    import numpy as np
    from rosbags.rosbag2 import StoragePlugin, Writer

    from hprm_bridge.wire.typesys import default_registry

    reg = default_registry()
    rng = np.random.default_rng(seed)
    plugin = StoragePlugin.SQLITE3 if storage == "sqlite3" else StoragePlugin.MCAP
    with Writer(path, version=8, storage_plugin=plugin) as w:
        cam = w.add_connection("/camera/image_raw", "sensor_msgs/msg/Image", typestore=reg.store)
        imu = w.add_connection("/imu", "sensor_msgs/msg/Imu", typestore=reg.store)
        events = []
        for k in range(int(seconds * 10)):
            stamp = T0 + k * 100_000_000
            frame = rng.integers(0, 200, (48, 64, 3), dtype=np.uint8)
            y, x = rng.integers(0, 40), rng.integers(0, 56)
            frame[y : y + 8, x : x + 8] = 255
            msg = reg.new("sensor_msgs/msg/Image", height=48, width=64, step=192,
                          encoding="rgb8", data=frame.reshape(-1))  # fmt: skip
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 10**9)
            late = int(rng.integers(0, 30_000_000)) if jitter else 0
            events.append((stamp + late, cam, reg.encode(msg, "sensor_msgs/msg/Image")))
        for k in range(int(seconds * 50)):
            stamp = T0 + k * 20_000_000
            msg = reg.new("sensor_msgs/msg/Imu")
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 10**9)
            msg.angular_velocity.z = float(rng.standard_normal())
            events.append((stamp, imu, reg.encode(msg, "sensor_msgs/msg/Imu")))
        for t, conn, raw in sorted(events, key=lambda e: e[0]):
            w.write(conn, t, bytes(raw))
    return len(events)


def _nodes() -> list[str]:
    from hprm_bridge.examples import ros_pipeline

    root = Path(ros_pipeline.__file__).parent
    return [str(root / f"{n}.py") for n in ("detector", "planner", "controller")]


def _commands(text: str) -> list[tuple[str, str, str]]:
    return _CMD.findall(text)


def _read(bag: Path) -> float:
    """Seconds to read and deserialize every message with rosbags alone."""
    from rosbags.rosbag2 import Reader

    from hprm_bridge.wire.typesys import default_registry

    reg = default_registry()
    start = time.perf_counter()
    with Reader(bag) as reader:
        for connection, _, raw in reader.messages():
            reg.decode(raw, connection.msgtype)
    return time.perf_counter() - start


def _hprm(bag: Path) -> tuple[float, float, list[tuple[str, str, str]]]:
    """(replay s, wall s, commands) of one ``hprm-ros bag play --fast``."""
    cmd = [sys.executable, "-m", "hprm_bridge.ros_cli", "bag", "play", str(bag), *_nodes(),
           "--param", "planner:image_width:=64", "--fast"]  # fmt: skip
    start = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONUNBUFFERED="1"))  # fmt: skip
    wall = time.perf_counter() - start
    if r.returncode:
        raise RuntimeError(f"hprm-ros bag play failed ({r.returncode}):\n{r.stdout[-2000:]}")
    played = _PLAYED.search(r.stdout + r.stderr)
    return float(played.group(2)) if played else wall, wall, _commands(r.stdout)


def _rclpy(bag: Path, rate: float) -> tuple[float, list[tuple[str, str, str]]]:
    """(play s, commands) of the node files under plain rclpy, the bag played at `rate`."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", ROS_DOMAIN_ID=str(random_domain_id()))
    player = Path(__file__).with_name("rclpy_bag_player.py")
    procs = []
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as played:
        try:
            for path in reversed(_nodes()):
                args = ["--ros-args", "-p", "image_width:=64"] if "planner" in path else []
                sink = out if path.endswith("controller.py") else subprocess.DEVNULL
                procs.append(subprocess.Popen([sys.executable, path, *args], env=env,
                                              stdout=sink, stderr=subprocess.STDOUT))  # fmt: skip
            r = subprocess.run([sys.executable, str(player), str(bag), "--rate", str(rate),
                                "--wait-for", "/camera/image_raw"], env=env, stdout=played,
                               stderr=subprocess.STDOUT, timeout=600)  # fmt: skip
            played.seek(0)
            log = played.read()
            if r.returncode:
                raise RuntimeError(f"rclpy player failed ({r.returncode}):\n{log[-2000:]}")
            time.sleep(1.0)  # the last frames' way through the pipeline
        finally:
            stop_processes(procs)
        out.seek(0)
        seconds = float(log.split("PLAYED", 1)[1].split()[1])
        return seconds, _commands(out.read())


def _row(variant: str, messages: int, seconds: list[float], runs: list[list[Any]],
         **extra: Any) -> dict[str, Any]:  # fmt: skip
    counts = [len(r) for r in runs]
    median = statistics.median(seconds)
    row = {"variant": variant, "runs": len(seconds), "messages": messages,
           "median_s": median, "msgs_per_s": messages / median}  # fmt: skip
    if runs:
        row["commands_min_max"] = f"{min(counts)}-{max(counts)}"
        row["runs_differing_from_first"] = sum(r != runs[0] for r in runs[1:])
    row.update(extra)
    return row


def main(argv: list[str] | None = None) -> int:
    p = bench.parser("replay", __doc__.split("\n\n")[0])
    p.add_argument("--runs", type=bench.at_least(1), help=f"replays per variant (default {RUNS})")
    p.add_argument("--seconds", type=float, help=f"length of the bag (default {SECONDS:g} s)")
    args = p.parse_args(argv)
    runs = args.runs or (QUICK_RUNS if args.quick else RUNS)
    seconds = args.seconds or (QUICK_SECONDS if args.quick else SECONDS)
    missing = rclpy_missing()
    rows = []
    with tempfile.TemporaryDirectory(prefix="hprm-replay-") as tmp:
        bag = Path(tmp) / "drive"
        messages = write_bag(bag, seconds=seconds)
        rows.append(_row("rosbags read", messages, [_read(bag) for _ in range(runs)], []))
        print(f"replay: hprm fast, {runs} runs of a {messages}-message bag...",
              file=sys.stderr, flush=True)  # fmt: skip
        hprm = [_hprm(bag) for _ in range(runs)]
        rows.append(_row("hprm fast", messages, [h[0] for h in hprm], [h[2] for h in hprm],
                         median_wall_s=statistics.median(h[1] for h in hprm)))  # fmt: skip
        for rate in RCLPY_RATES:
            if missing:
                rows.append({"variant": f"rclpy rate {rate:g}", "skipped": missing})
                continue
            print(f"replay: rclpy at rate {rate:g}, {runs} runs...", file=sys.stderr, flush=True)
            results = [_rclpy(bag, rate) for _ in range(runs)]
            rows.append(_row(f"rclpy rate {rate:g}", messages, [r[0] for r in results],
                             [r[1] for r in results]))  # fmt: skip
    by = {r["variant"]: r for r in rows if "msgs_per_s" in r}
    ratios = {f"hprm fast / {v} msgs/s": by["hprm fast"]["msgs_per_s"] / r["msgs_per_s"]
              for v, r in by.items() if v != "hprm fast"}  # fmt: skip
    params = {"seconds": seconds, "runs": runs, "frames": "64x48 rgb8 10 Hz + IMU 50 Hz"}
    bench.report(bench.result("replay", params, rows, ratios), args)
    return 0
