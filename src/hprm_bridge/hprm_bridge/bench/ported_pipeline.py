"""``hprm bench ported-pipeline``: the example pipeline's frame latency, HPRM vs rclpy.

The four node files of :mod:`hprm_bridge.examples.ros_pipeline` (camera ->
detector -> planner -> controller, rclpy only) run unchanged five ways in
one benchmark run:

* ``hprm centralized`` and ``hprm decentralized``: ``hprm-ros run``, one
  federate process per node; the image crosses by shared-memory reference;
* ``ros2 rclpy``: the same files as four plain processes on the real rclpy
  (where ``import rclpy`` works, i.e. a Humble is sourced; else the rows say
  why they are missing);
* ``hprm composed`` and ``ros2 rclpy composed``: the four nodes in one process,
  spun by one executor (``composed.py``, ROS 2's composition): under HPRM one
  federate whose nodes hand the image on inside it, under rclpy one process whose
  nodes still talk through DDS.

The figure is the controller's: system clock at its callback minus the
camera's ``header.stamp`` (under HPRM the stamp is the frame's logical time,
so the figure includes how late the camera itself ran). The camera runs at
10 Hz so that no variant queues frames at the largest size; the first
``WARMUP`` frames are dropped, and a frame that never reaches the controller is
counted in the ``lost`` column (HPRM loses none; plain ROS 2 may). Sizes from
0.3 MB to 25 MB of rgb8. Ratios are rclpy / HPRM medians per size. ``--plot
PATH`` draws median latency vs size.
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

from hprm_bridge.bench import ROS2_DDS_XML, rclpy_missing, ros2_baseline_env, stop_processes
from hprm_bridge.wire.dds_config import random_domain_id
from hprm_core import bench

# (label, width, height): rgb8, so bytes = 3 * width * height
SIZES = [
    ("0.3 MB", 400, 250),
    ("0.9 MB", 640, 480),
    ("6 MB", 1600, 1250),
    ("25 MB", 3200, 2600),
]
QUICK_SIZES = ["0.3 MB", "6 MB"]
FPS = 10.0
FRAMES, QUICK_FRAMES = 40, 10
WARMUP = 3
STP_OFFSET = "20 ms"
VARIANTS = ("hprm centralized", "hprm decentralized", "ros2 rclpy", "hprm composed",
            "ros2 rclpy composed")  # fmt: skip
# rclpy's median over HPRM's, per size: (label, rclpy variant, HPRM variant)
RATIOS = [("rclpy/centralized", "ros2 rclpy", "hprm centralized"),
          ("rclpy/decentralized", "ros2 rclpy", "hprm decentralized"),
          ("rclpy composed/hprm composed", "ros2 rclpy composed", "hprm composed")]  # fmt: skip
_CMD = re.compile(r"^(?:\[(?:controller|composed)\] )?CMD (\d+) \S+ \S+ (-?\d+)$", re.M)


def _pipeline(composed: bool = False) -> list[Path]:
    from hprm_bridge.examples import ros_pipeline

    root = Path(ros_pipeline.__file__).parent
    if composed:
        return [root / "composed.py"]
    return [root / f"{n}.py" for n in ("camera", "detector", "planner", "controller")]


def _params(width: int, height: int, frames: int, composed: bool) -> list[tuple[str, str]]:
    """(node file, NAME:=VALUE) of one size."""
    params = [
        ("camera", f"width:={width}"),
        ("camera", f"height:={height}"),
        ("camera", f"fps:={FPS}"),
        ("camera", f"frames:={frames}"),
        ("planner", f"image_width:={width}"),
    ]
    return [("composed" if composed else node, kv) for node, kv in params]


def _latencies(text: str, frames: int) -> tuple[list[int], int]:
    """The measured frames' latencies (those after the first ``WARMUP`` that came) and
    how many of the ``frames`` sent never reached the controller: plain ROS 2 may drop
    one (a frame published before its subscriber matched, or under load), which is a
    figure of the run, not a failure of it."""
    lat = [int(n) for _, n in _CMD.findall(text)]
    return lat[WARMUP:frames], max(0, frames - len(lat))


def _run_hprm(variant: str, width: int, height: int, frames: int) -> tuple[list[int], int]:
    timeout_ms = int((frames + 1) * 1000 / FPS)
    composed = variant == "hprm composed"
    coordination = "decentralized" if variant == "hprm decentralized" else "centralized"
    cmd = [sys.executable, "-m", "hprm_bridge.ros_cli", "run", *map(str, _pipeline(composed)),
           "--coordination", coordination, "--timeout", f"{timeout_ms} ms"]  # fmt: skip
    if coordination == "decentralized":
        cmd += ["--stp-offset", STP_OFFSET]
    for node, kv in _params(width, height, frames, composed):
        cmd += ["--param", f"{node}:{kv}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONUNBUFFERED="1"))  # fmt: skip
    if r.returncode != 0:
        raise RuntimeError(f"hprm-ros run failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return _latencies(r.stdout, frames)


def _run_rclpy(variant: str, width: int, height: int, frames: int) -> tuple[list[int], int]:
    """The node files as plain processes; subscribers first, the camera last
    (and told to stop after ``frames``), until the controller reported them."""
    env = ros2_baseline_env(
        dict(os.environ, PYTHONUNBUFFERED="1", ROS_DOMAIN_ID=str(random_domain_id()))
    )
    composed = variant == "ros2 rclpy composed"
    params: dict[str, list[str]] = {}
    for node, kv in _params(width, height, frames, composed):
        params.setdefault(node, []).extend(["-p", kv])
    nodes = _pipeline(composed)
    procs = []
    with tempfile.TemporaryFile("w+") as out:
        try:
            for path in reversed(nodes):
                argv = [sys.executable, str(path), "--ros-args", *params.get(path.stem, [])]
                stdout = out if path.stem in ("controller", "composed") else subprocess.DEVNULL
                procs.append(subprocess.Popen(argv, env=env, stdout=stdout, stderr=stdout,
                                              text=True))  # fmt: skip
                if path.stem == "detector":
                    time.sleep(2.0)  # let discovery settle before frames flow
            deadline = time.monotonic() + 60 + frames / FPS
            seen, quiet_since = 0, time.monotonic()
            while time.monotonic() < deadline:
                time.sleep(0.2)
                out.seek(0)
                now = len(_CMD.findall(out.read()))
                if now >= frames or (now and now == seen and time.monotonic() - quiet_since > 5):
                    break  # all of them, or the camera is done and some frames were lost
                if now != seen:
                    seen, quiet_since = now, time.monotonic()
        finally:
            stop_processes(procs)
        out.seek(0)
        return _latencies(out.read(), frames)


def _row(variant: str, label: str, nbytes: int, measured: tuple[list[int], int]) -> dict[str, Any]:
    lat, lost = measured
    row = {"variant": variant, "size": label, "bytes": nbytes, "frames": len(lat), "lost": lost}
    return {**row, **bench.spread(lat, "ms", 1e6)}


def main(argv: list[str] | None = None) -> int:
    p = bench.parser("ported-pipeline", __doc__.split("\n\n")[0])
    p.add_argument("--plot", metavar="PATH", help="write a PNG (median latency vs image size)")
    p.add_argument(
        "--sizes", help="comma-separated subset of: " + ", ".join(s for s, _, _ in SIZES)
    )
    args = p.parse_args(argv)
    wanted = args.sizes.split(",") if args.sizes else QUICK_SIZES if args.quick else None
    sizes = [s for s in SIZES if wanted is None or s[0] in wanted]
    if wanted is not None and len(sizes) != len(wanted):
        p.error(f"--sizes: unknown size in {args.sizes!r}")
    frames = (QUICK_FRAMES if args.quick else FRAMES) + WARMUP
    missing = rclpy_missing()
    if missing:
        print(f"ported-pipeline: ros2 rclpy rows skipped: {missing}", file=sys.stderr)
    rows = []
    for label, width, height in sizes:
        nbytes = 3 * width * height
        for variant in VARIANTS:
            rclpy = variant.startswith("ros2 rclpy")
            if rclpy and missing:
                continue
            print(f"ported-pipeline: {variant}, {label} ({frames} frames at {FPS:g} Hz)...",
                  file=sys.stderr, flush=True)  # fmt: skip
            run = _run_rclpy if rclpy else _run_hprm
            rows.append(_row(variant, label, nbytes, run(variant, width, height, frames)))
    ratios = {}
    for label, _, _ in sizes:
        by = {r["variant"]: r for r in rows if r["size"] == label and r.get("median_ms")}
        for name, slow, fast in RATIOS:
            if slow in by and fast in by:
                ratios[f"{name} median {label}"] = by[slow]["median_ms"] / by[fast]["median_ms"]
    params = {"quick": args.quick, "fps": FPS, "frames": frames - WARMUP,
              "stp_offset": STP_OFFSET, "rclpy": missing or "measured",
              "ros2_dds": ROS2_DDS_XML}  # fmt: skip
    doc = bench.result("ported-pipeline", params, rows, ratios)
    bench.report(doc, args)
    if args.plot:
        series: dict[str, tuple[list[float], list[float]]] = {}
        for r in rows:
            if r.get("median_ms"):
                xs, ys = series.setdefault(r["variant"], ([], []))
                xs.append(r["bytes"] / 1e6)
                ys.append(r["median_ms"])
        bench.save_plot(args.plot, series, title="Ported pipeline: camera stamp to controller",
                        xlabel="image size (MB)", ylabel="median latency (ms)")  # fmt: skip
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
