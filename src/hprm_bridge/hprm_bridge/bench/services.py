"""``hprm bench services``: a service call's round trip, ported nodes vs rclpy.

Two rclpy node files (:mod:`.adder_node`, a server of ``/bench/add``, and
:mod:`.caller_node`, a client calling it from a timer) run unchanged three ways
in one benchmark run:

* ``hprm centralized`` and ``hprm decentralized``: ``hprm-ros run``, a federate
  process each; a call is a tagged message answered at the caller's logical
  time (:mod:`hprm_bridge.service_ports`), so its round trip is the two hops
  plus whatever the coordination waits for;
* ``ros2 rclpy``: the same files as two plain processes on the real rclpy and
  rmw_cyclonedds (where ``import rclpy`` works, i.e. a Humble is sourced; else
  the row says why it is missing).

The figure is the caller's: the system's monotonic clock from ``call_async`` to
the future's done-callback, per call; the first ``WARMUP`` calls are dropped.
Ratios are rclpy / HPRM medians. ``--plot PATH`` draws each variant's round trips
sorted (the distribution: median at 50, tail at the right).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hprm_bridge.bench import rclpy_missing, stop_processes
from hprm_bridge.wire.dds_config import random_domain_id
from hprm_core import bench

RATE = 50.0  # calls per second: far apart enough that no call waits for the last
CALLS, QUICK_CALLS = 300, 60
WARMUP = 10
STP_OFFSET = "20 ms"
VARIANTS = ("hprm centralized", "hprm decentralized", "ros2 rclpy")
_RTT = re.compile(r"^(?:\[caller_node\] )?RTT (\d+) (\d+)$", re.M)
_HERE = Path(__file__).parent
_NODES = [_HERE / "adder_node.py", _HERE / "caller_node.py"]


def _round_trips(text: str) -> list[int]:
    return [int(ns) for _, ns in _RTT.findall(text)][WARMUP:]


def _run_hprm(coordination: str, calls: int) -> list[int]:
    timeout_ms = int((calls + 50) * 1000 / RATE)  # the last answer ends it before that
    cmd = [sys.executable, "-m", "hprm_bridge.ros_cli", "run", *map(str, _NODES),
           "--coordination", coordination, "--timeout", f"{timeout_ms} ms",
           "--param", f"caller_node:calls:={calls}",
           "--param", f"caller_node:rate:={RATE}"]  # fmt: skip
    if coordination == "decentralized":
        cmd += ["--stp-offset", STP_OFFSET]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONUNBUFFERED="1"))  # fmt: skip
    if r.returncode != 0:
        raise RuntimeError(f"hprm-ros run failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return _round_trips(r.stdout)


def _run_rclpy(calls: int) -> list[int]:
    """The two files as plain processes, the server first; until the caller exits
    (after its last answer)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", ROS_DOMAIN_ID=str(random_domain_id()))
    adder, caller = ([sys.executable, str(path), "--ros-args"] for path in _NODES)
    caller += ["-p", f"calls:={calls}", "-p", f"rate:={RATE}"]
    with tempfile.TemporaryFile("w+") as out:
        server = subprocess.Popen(adder, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            client = subprocess.Popen(caller, env=env, stdout=out, stderr=out, text=True)
            try:
                client.wait(timeout=60 + calls / RATE)
            except subprocess.TimeoutExpired:
                stop_processes([client])
        finally:
            stop_processes([server])
        out.seek(0)
        return _round_trips(out.read())


def _row(variant: str, took: list[int], calls: int) -> dict[str, Any]:
    us = sorted(v / 1e3 for v in took)
    if not us:
        return {"variant": variant, "calls": 0}
    return {
        "sorted_us": us,
        "variant": variant,
        "calls": len(us),
        "answered": f"{len(us)}/{calls - WARMUP}",
        **bench.spread(us, "us"),
    }


def main(argv: list[str] | None = None) -> int:
    p = bench.parser("services", __doc__.split("\n\n")[0])
    p.add_argument("--plot", metavar="PATH", help="write a PNG (round trips, sorted)")
    args = p.parse_args(argv)
    calls = (QUICK_CALLS if args.quick else CALLS) + WARMUP
    missing = rclpy_missing()
    if missing:
        print(f"services: ros2 rclpy row skipped: {missing}", file=sys.stderr)
    rows = []
    for variant in VARIANTS:
        if variant == "ros2 rclpy" and missing:
            continue
        print(f"services: {variant}, {calls} calls at {RATE:g} Hz...", file=sys.stderr,
              flush=True)  # fmt: skip
        started = time.monotonic()
        if variant == "ros2 rclpy":
            took = _run_rclpy(calls)
        else:
            took = _run_hprm(variant.split()[1], calls)
        rows.append(_row(variant, took, calls))
        print(f"services: {variant} done in {time.monotonic() - started:.0f} s", file=sys.stderr)
    by = {r["variant"]: r for r in rows if r.get("median_us")}
    ratios = {
        f"rclpy/{v.split()[1]} median": by["ros2 rclpy"]["median_us"] / by[v]["median_us"]
        for v in VARIANTS[:2]
        if "ros2 rclpy" in by and v in by
    }
    params = {"quick": args.quick, "rate_hz": RATE, "calls": calls - WARMUP,
              "stp_offset": STP_OFFSET, "rclpy": missing or "measured"}  # fmt: skip
    series = {r["variant"]: ([100 * i / len(r["sorted_us"]) for i in range(len(r["sorted_us"]))],
                             r.pop("sorted_us")) for r in rows if r.get("calls")}  # fmt: skip
    bench.report(bench.result("services", params, rows, ratios), args)
    if args.plot:
        bench.save_plot(args.plot, series, title="Service round trip (call_async to its answer)",
                        xlabel="percentile of calls", ylabel="round trip (us)")  # fmt: skip
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
