"""``hprm bench carla-ab``: the CARLA PPO+YOLO demo, plain ROS 2 vs HPRM, one report.

Runs the demo's unchanged rclpy node files as every variant of `carla_demo.ab` (``ros2``,
``ros2-shm``, ``ros2-bytes``, ``hprm-centralized``, ``hprm-decentralized``) plus the
inference-only ``floor``, each ``--runs`` times on the same seed, and reports per variant the
frame latency (the paper's ``carla[i+1].start - carla[i].end``: from the sim publishing the
observation to the control reaching the sim) as median, p90 and p99, the reduction against
``ros2`` (and against ``ros2-bytes``, the paper's own baseline's message layout), the
middleware overhead (median minus the floor's), and whether the control sequence was the same
in every run and equal to the floor's. ``--plot`` draws the box plot of the paper's Fig. 6.

The embedded world (highway-env) is the default; ``--carla-host`` uses a CARLA server.
Without ``--policy-weights``/``--detector-weights`` the models have seeded random weights
(real architectures, so the latency is faithful; the driving is not).
"""

from __future__ import annotations

import os
import statistics
import sys
from typing import Any

from hprm_bridge.bench import ROS2_DDS_XML, rclpy_missing
from hprm_core import bench, compiled
from hprm_core.cli import duration_arg

from . import affinity
from .ab import HOPS, TIMED_NODES, VARIANTS, run_variant
from .yolo import inference_device

FRAMES, WARMUP, RUNS = 400, 100, 2
QUICK_FRAMES, QUICK_WARMUP = 20, 5
NOTES = (
    "transport_ms: the middleware's share of a frame, its latency minus the compute on its "
    "critical path (sim -> detector -> fusion -> sim); to_*_ms split it by hop",
    "overhead_ms: median minus the floor's median; on a model-bound frame it moves with the "
    "detector's time more than with the middleware's (negative where the variant's detector "
    "happened to run faster): read transport_ms",
)


def _percentile(sorted_ms: list[float], q: float) -> float:
    return sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))]


def _row(
    variant: str, runs: list[dict[str, Any]], floor: list[list[float]] | None
) -> dict[str, Any]:
    ms = sorted(r["latency_ns"] / 1e6 for run in runs for r in run["frames"][run["warmup"] :])
    controls = [[r["control"] for r in run["frames"]] for run in runs]
    same = all(c == controls[0] for c in controls[1:])
    measured = [r for run in runs for r in run["frames"][run["warmup"] :]]
    transport = [r["transport_ns"] / 1e6 for r in measured if "transport_ns" in r]
    spans = {n: [r[f"{n}_ns"] / 1e6 for r in measured if f"{n}_ns" in r] for n in TIMED_NODES}
    hops = {h[:-3]: [r[h] / 1e6 for r in measured if h in r] for h in HOPS}
    return {
        "variant": variant,
        "runs": len(runs),
        "frames": len(ms),
        "median_ms": statistics.median(ms),
        "p90_ms": _percentile(ms, 0.9),
        "p99_ms": _percentile(ms, 0.99),
        # between the nodes, on the critical path (latency minus its compute: carla_demo.timing)
        **({"transport_ms": statistics.median(transport)} if transport else {}),
        **{f"{h}_ms": statistics.median(v) for h, v in hops.items() if v},
        # the models' own time in each node (the floor's frame is all compute)
        **{f"{n}_ms": statistics.median(v) for n, v in spans.items() if v},
        "same_controls_every_run": "n/a (1 run)" if len(runs) < 2 else "yes" if same else "NO",
        "controls_equal_floor": "n/a" if floor is None else "yes" if controls[0] == floor else "NO",
    }


# The baselines each row's median is compared with: the one a ROS 2 team would write, and the
# HPRM paper's own (its 91 % reduction was against that message layout)
BASELINES = ("ros2", "ros2-bytes")


def _compare(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Adds to each row its reduction against each baseline of the run and its overhead
    over the floor; returns the rows by variant."""
    by = {r["variant"]: r for r in rows}
    for r in rows:
        for base in BASELINES:
            if base in by and r["variant"] != base:
                key = f"reduction_vs_{base.replace('-', '_')}_pct"
                r[key] = 100.0 * (1 - r["median_ms"] / by[base]["median_ms"])
        if "floor" in by and r["variant"] != "floor":
            r["overhead_ms"] = r["median_ms"] - by["floor"]["median_ms"]
    return by


def main(argv: list[str] | None = None) -> int:
    p = bench.parser("carla-ab", __doc__.split("\n\n")[0])
    p.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"comma-separated subset of {', '.join(VARIANTS)} (default: all)",
    )
    p.add_argument(
        "--frames",
        type=bench.at_least(1),
        help=f"measured frames per run (default {FRAMES}; --quick {QUICK_FRAMES})",
    )
    p.add_argument(
        "--warmup",
        type=bench.at_least(0),
        help=f"frames before measuring (default {WARMUP}; --quick {QUICK_WARMUP})",
    )
    p.add_argument(
        "--runs", type=bench.at_least(1), default=RUNS, help=f"runs per variant (default {RUNS})"
    )
    p.add_argument(
        "--seed", type=int, default=0, help="the world's and the random weights' seed (default 0)"
    )
    p.add_argument("--policy-weights", metavar="PATH", help="a carla-roach checkpoint")
    p.add_argument(
        "--detector-weights",
        metavar="PATH",
        help="a YOLOv5 checkpoint (yolov5n.pt) or a yolov8n.onnx",
    )
    p.add_argument("--carla-host", help="a CARLA server (default: the embedded world)")
    p.add_argument("--plot", metavar="PATH", help="write the box plot (PNG)")
    p.add_argument("--busy-poll", type=duration_arg, metavar="DURATION",
                   help="hprm variants: each node spins this long (or 'forever') before it "
                   "sleeps, sparing the kernel wake-up per message; costs a core per node, "
                   "for machines that have them")  # fmt: skip
    # The first CPU by default: onnxruntime pins its workers to the others and leaves that
    # one to the thread that calls it (the detector's callbacks'); on a worker's CPU YOLO
    # ran 25-40 % slower (2-core VM). Not with --busy-poll: three nodes spinning on one CPU
    # wait for each other's time slices (H200: transport 1.0 -> 14 ms).
    first_cpu = min(os.sched_getaffinity(0))
    p.add_argument("--cpu", type=int,
                   help="every variant: the callbacks of the frame's critical path (sim, "
                   "detector, fusion; the floor's detector thread) on this CPU, so that a "
                   f"message wakes its receiver where the sender runs (default: the first "
                   f"CPU, {first_cpu} here, or any CPU with --busy-poll; -1: any CPU)")  # fmt: skip
    args = p.parse_args(argv)
    if args.busy_poll and args.cpu not in (None, -1):
        p.error("--cpu with --busy-poll: the pinned nodes would spin on one CPU, each waiting "
                "for the others' time slices (leave --cpu out, or -1)")  # fmt: skip
    if args.cpu is None:
        args.cpu = -1 if args.busy_poll else first_cpu
    if args.cpu != -1:
        try:
            affinity.check(args.cpu)  # before any run, not after the first variant
        except ValueError as exc:
            p.error(f"--cpu: {exc}")
    args.cpu = None if args.cpu == -1 else args.cpu  # run_variant checks it before any run
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        p.error(f"--variants: unknown {', '.join(unknown)} (known: {', '.join(VARIANTS)})")
    frames = args.frames if args.frames is not None else QUICK_FRAMES if args.quick else FRAMES
    warmup = args.warmup if args.warmup is not None else QUICK_WARMUP if args.quick else WARMUP
    unweighted = [m for m, w in (("policy", args.policy_weights),
                                 ("detector", args.detector_weights)) if w is None]  # fmt: skip
    if unweighted:
        print(
            f"carla-ab: WARNING: no weights for the {' and the '.join(unweighted)}: seeded "
            "random weights (latency faithful, driving meaningless)",
            file=sys.stderr,
        )
    missing = rclpy_missing()
    skipped = {}
    try:
        results = _run_all(args, variants, frames, warmup, missing, skipped)
    except (RuntimeError, ValueError, OSError) as exc:
        print(f"carla-ab: {exc}", file=sys.stderr)
        return 1
    floor = None
    if "floor" in results:
        floor = [r["control"] for r in results["floor"][0]["frames"]]
    rows = [_row(v, runs, None if v == "floor" else floor) for v, runs in results.items()]
    by = _compare(rows)
    rows += [{"variant": v, "skipped": why} for v, why in skipped.items()]
    params = {
        "frames": frames,
        "warmup": warmup,
        "runs": args.runs,
        "seed": args.seed,
        "world": args.carla_host or "embedded (highway-env)",
        "policy": args.policy_weights or "random weights",
        "detector": args.detector_weights or "random weights",
        "detector_device": inference_device(),
        "busy_poll": args.busy_poll or "off",
        "critical_path_cpu": "any" if args.cpu is None else args.cpu,
        "compiled": compiled.is_compiled(),  # the HPRM variants' runtime (same environment)
        "ros2_dds": ROS2_DDS_XML,  # what the ros2 variants' Cyclone DDS is given
    }
    ratios = {}
    for v in ("hprm-centralized", "hprm-decentralized"):
        for base in ("ros2", "ros2-shm", "ros2-bytes"):
            if v in by and base in by:
                ratios[f"{base}/{v} median"] = by[base]["median_ms"] / by[v]["median_ms"]
    doc = bench.result("carla-ab", params, rows, ratios, notes=NOTES)
    doc["latencies_ms"] = {
        v: [r["latency_ns"] / 1e6 for run in runs for r in run["frames"][run["warmup"] :]]
        for v, runs in results.items()
    }
    bench.report(doc, args)
    if args.plot:
        _box_plot(args.plot, doc["latencies_ms"])
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


def _run_all(args, variants, frames, warmup, missing, skipped) -> dict[str, list[dict[str, Any]]]:
    """Run k of every variant, then run k+1 of every variant: a machine whose speed drifts
    (other tenants, clocks) shifts every variant alike instead of the last ones."""
    results: dict[str, list[dict[str, Any]]] = {}
    runnable = []
    # The floor first: its controls are the reference the HPRM variants must reproduce.
    for variant in sorted(variants, key=lambda v: v != "floor"):
        if variant.startswith("ros2") and missing:
            skipped[variant] = missing
            print(f"carla-ab: {variant} skipped: {missing}", file=sys.stderr)
        else:
            runnable.append(variant)
    for run in range(args.runs):
        for variant in runnable:
            print(f"carla-ab: {variant}, run {run + 1}/{args.runs} ({warmup} warm-up + {frames} "
                  "frames)...", file=sys.stderr, flush=True)  # fmt: skip
            results.setdefault(variant, []).append(
                run_variant(variant, frames, warmup, seed=args.seed,
                            policy_weights=args.policy_weights,
                            detector_weights=args.detector_weights, carla_host=args.carla_host,
                            busy_poll=args.busy_poll, cpu=args.cpu)
            )  # fmt: skip
    return results


def _box_plot(path: str, latencies: dict[str, list[float]]) -> None:
    """Per-frame latency per variant, log scale, as the paper's Fig. 6."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(latencies)
    # room for every variant's name under its box (six overlapped at 8 inches)
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(names)), 4.5), dpi=110)
    try:
        ax.boxplot([latencies[n] for n in names], showfliers=True, whis=(1, 99))
        ax.set_xticks(range(1, len(names) + 1), names)
        ax.set_yscale("log")
        ax.set_ylabel("frame latency (ms): observation ready -> control back")
        ax.set_title("CARLA PPO+YOLO demo: plain ROS 2 vs HPRM (whiskers p1-p99)")
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
