"""The inference-only floor: the demo's models called in one process, no middleware.

What a frame costs when nothing carries the data: the policy and the detector run
concurrently (two threads: numpy's BLAS and onnxruntime release the GIL), as the agent and
detector processes do in every middleware variant, then the fusion rules. A variant's median
minus this floor's is what its middleware adds per frame. Its control sequence is the
reference: the same world, seed and models under HPRM must produce it exactly.
"""

from __future__ import annotations

import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

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
) -> dict[str, Any]:
    """Rows shaped as the sim node's report: one per frame, latency and applied control."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RandomWeightsWarning)  # the bench reports it once
        policy = RoachPolicy(policy_weights, seed=seed)
        detector = Detector(detector_weights, seed=seed)
    rows = []
    with open_world(carla_host=carla_host, seed=seed) as world, ThreadPoolExecutor(1) as pool:
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
