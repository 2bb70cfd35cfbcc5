"""The inference-only floor: the demo's models called in one process, no middleware.

What a frame costs when nothing carries the data: the policy and the detector run
concurrently (two threads: numpy's BLAS and onnxruntime release the GIL), as the agent and
detector processes do in every middleware variant, then the fusion rules. A variant's median
minus this floor's is what its middleware adds per frame. Its control sequence is the
reference: the same world, seed and models under HPRM must produce it exactly. ``cpu``: the
detector's thread on that CPU, as the harness pins the detector node's (`carla_demo.ab`).
"""

from __future__ import annotations

import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import affinity
from .fusion_rules import fuse, mark_red_lights
from .policy import RoachPolicy
from .weights import RandomWeightsWarning
from .world import Control, open_world
from .yolo import Detector

__all__ = ["run_floor"]


def run_floor(
    frames: int,
    warmup: int,
    *,
    seed: int = 0,
    policy_weights: str | None = None,
    detector_weights: str | None = None,
    carla_host: str | None = None,
    cpu: int | None = None,
) -> dict[str, Any]:
    """Rows shaped as the sim node's report: one per frame, latency and applied control."""
    if cpu is not None:
        affinity.check(cpu)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RandomWeightsWarning)  # the bench reports it once
        policy = RoachPolicy(policy_weights, seed=seed)
        detector = Detector(detector_weights, seed=seed)
    print(f"floor: {detector.model} on {detector.device}", flush=True)
    rows = []
    # the pool's thread starts after the models started theirs, which keep their CPUs
    pin = None if cpu is None else lambda: affinity.pin_thread(cpu)
    with (
        open_world(carla_host=carla_host, seed=seed) as world,
        ThreadPoolExecutor(1, initializer=pin) as pool,
    ):
        obs = world.reset()
        for _ in range(warmup + frames):
            start = time.monotonic_ns()
            found = pool.submit(detector, obs.camera)
            action = policy(obs.birdview, obs.measurements)
            decision = fuse(action, mark_red_lights(obs.camera, found.result()), obs.camera.shape)
            latency = time.monotonic_ns() - start
            control = [float(decision.throttle), float(decision.steer), float(decision.brake)]
            rows.append({"frame": obs.frame, "latency_ns": latency, "control": control})
            obs = world.step(Control(*control))
    return {"warmup": warmup, "frames": rows}


def main(argv: list[str] | None = None) -> int:
    """``python -m carla_demo.floor REPORT``: the floor in a process of its own, as the
    harness runs it, so that it starts from the same environment as the nodes' processes
    (thread counts of BLAS and onnxruntime are read at import)."""
    import argparse
    import json

    p = argparse.ArgumentParser(prog="python -m carla_demo.floor", description=__doc__)
    p.add_argument("report", help="the JSON file to write (the sim node's report format)")
    p.add_argument("--frames", type=int, default=400)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--policy-weights")
    p.add_argument("--detector-weights")
    p.add_argument("--carla-host")
    p.add_argument("--cpu", type=int, help="the CPU of the detector's thread (default: any)")
    args = p.parse_args(argv)
    try:
        report = run_floor(
            args.frames,
            args.warmup,
            seed=args.seed,
            policy_weights=args.policy_weights,
            detector_weights=args.detector_weights,
            carla_host=args.carla_host,
            cpu=args.cpu,
        )
    except (RuntimeError, ValueError, OSError) as exc:
        print(exc, file=sys.stderr)
        return 1
    with open(args.report, "w") as f:
        json.dump(report, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
