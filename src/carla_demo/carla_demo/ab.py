"""Running the demo's node files as each variant of the A/B comparison.

The same four files (`carla_demo.sim_node`, ``agent_node``, ``detector_node``,
``fusion_node``; plain rclpy, no HPRM import) run as:

* ``ros2``: four plain processes on the real rclpy (needs a sourced ROS 2 Humble);
* ``ros2-shm``: the same with ``transport:=shm``: images in shared memory, names on topics
  (the HPRM paper's second baseline);
* ``ros2-bytes``: the same with ``transport:=bytes``: each image message serialized into a
  ``byte[]`` field, the message layout of the HPRM paper's own ROS 2 baseline (it pickled
  the observations into ``byte[]``: its 275 ms frames), kept to show where that figure came
  from; ``ros2`` is the baseline a ROS 2 team would write;
* ``hprm-centralized`` / ``hprm-decentralized``: ``hprm-ros run``, one federate per node;
  large messages by shared-memory reference, small ones on sockets;

and ``floor`` is `carla_demo.floor` (the models in one process). Every variant returns the
sim's report: per frame, the latency and the control applied.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hprm_bridge.bench import rclpy_missing, ros2_baseline_env
from hprm_bridge.wire.dds_config import random_domain_id

from . import affinity, timing

VARIANTS = ("ros2", "ros2-shm", "ros2-bytes", "hprm-centralized", "hprm-decentralized", "floor")
NODES = ("sim", "agent", "detector", "fusion")
# How each variant's images travel (`carla_demo.messages.TRANSPORTS`), told to the nodes that
# send or read them; the default, topic, is told to none
TRANSPORT = {"ros2-shm": "shm", "ros2-bytes": "bytes"}
IMAGE_NODES = ("sim", "agent", "detector")
# Decentralized: the whole run happens at one logical time (the loop closes with a microstep
# delay, as the paper's `after 0`), so a node waiting for two inputs of a frame must never
# conclude from the clock that the second will not come: its STP offset bounds the run's
# length. The nodes with one input (sim, detector) get none: the sim's first frame would wait
# out the offset before it could start.
STP_PER_FRAME_S = 2.0
TWO_INPUT_NODES = ("agent", "fusion")
TIMED_NODES = ("agent", "detector", "fusion")  # each notes its compute's span per frame
# transport's hops: sim to the later branch, that branch to the fusion, the fusion to the sim
HOPS = ("to_branch_ns", "to_fusion_ns", "to_sim_ns")
# The nodes whose callbacks share one CPU with ``cpu=``: the frame's critical path, sim ->
# detector (the later branch: YOLO takes longer than the policy) -> fusion -> sim, which runs
# one node at a time. Not the agent: its policy runs while YOLO does, and on the detector's
# CPU it would slow the frame (on the 2-core VM, frame median 95.6 ms against 82-85).
PINNED_NODES = ("sim", "detector", "fusion")


def node_files() -> dict[str, Path]:
    root = Path(__file__).parent
    return {name: root / f"{name}_node.py" for name in NODES}


def _params(
    frames: int,
    warmup: int,
    seed: int,
    report: Path,
    transport: str,
    policy_weights: str | None,
    detector_weights: str | None,
    carla_host: str | None,
    cpu: int | None,
) -> dict[str, list[str]]:
    params: dict[str, list[str]] = {
        "sim": [f"frames:={frames}", f"warmup:={warmup}", f"seed:={seed}", f"report:={report}"],
        "agent": [f"seed:={seed}"],
        "detector": [f"seed:={seed}"],
        "fusion": [],
    }
    if carla_host:
        params["sim"].append(f"carla_host:={carla_host}")
    if policy_weights:
        params["agent"].append(f"weights:={policy_weights}")
    if detector_weights:
        params["detector"].append(f"weights:={detector_weights}")
    if transport != "topic":
        for node in IMAGE_NODES:
            params[node].append(f"transport:={transport}")
    if cpu is not None:
        for node in PINNED_NODES:
            params[node].append(f"cpu:={cpu}")
    return params


def check_cpu(cpu: int, busy_poll: str | None) -> None:
    """Refuses, before anything starts, a CPU this process may not use, and pinning the
    critical path beside busy-polling (ValueError)."""
    if busy_poll:
        raise ValueError(
            "busy_poll with cpu: it would spin three nodes on one CPU, each waiting for the "
            "others' time slices; pin them or let them spin, not both"
        )
    affinity.check(cpu)


def run_variant(
    variant: str,
    frames: int,
    warmup: int,
    *,
    seed: int = 0,
    policy_weights: str | None = None,
    detector_weights: str | None = None,
    carla_host: str | None = None,
    busy_poll: str | None = None,
    cpu: int | None = None,
    timeout_s: float | None = None,
    log: Path | None = None,
) -> dict[str, Any]:
    """One run of `variant`; raises RuntimeError with the nodes' output when it fails.
    ``busy_poll``: the hprm variants' nodes spin that long before they sleep
    (``hprm-ros run --busy-poll``). ``cpu``: the critical path's callbacks on that CPU
    (`PINNED_NODES`; the floor's detector thread), in every variant alike; not with
    ``busy_poll``."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}: one of {', '.join(VARIANTS)}")
    if cpu is not None:
        check_cpu(cpu, busy_poll)  # here, not in each node's log
    timeout_s = timeout_s or 120 + 5.0 * (frames + warmup)
    with tempfile.TemporaryDirectory(prefix="carla_ab_") as tmp:
        report = Path(tmp) / "report.json"
        params = _params(
            frames,
            warmup,
            seed,
            report,
            TRANSPORT.get(variant, "topic"),
            policy_weights,
            detector_weights,
            carla_host,
            cpu,
        )
        out = Path(log) if log else Path(tmp) / "nodes.log"
        timing_dir = Path(tmp) / "timing"
        timing_dir.mkdir()
        environ = env({timing.ENV: str(timing_dir)})
        if variant == "floor":
            _run_floor(report, frames, warmup, seed, policy_weights, detector_weights,
                       carla_host, cpu, timeout_s, out, environ)  # fmt: skip
        elif variant.startswith("hprm-"):
            _run_hprm(variant.removeprefix("hprm-"), params, frames + warmup, timeout_s, out,
                      environ, busy_poll)  # fmt: skip
        else:
            _run_ros2(params, timeout_s, out, environ)
        if not report.exists():
            raise RuntimeError(f"{variant}: the sim wrote no report:\n{_tail(out)}")
        result = json.loads(report.read_text())
        if variant != "floor":
            spans = timing.read(str(timing_dir))
            _add_transport(result, spans)
            silent = [n for n in TIMED_NODES if not spans.get(n)]
            if silent:  # a report without them would show no transport, and not say why
                print(f"carla-ab: {variant}: no compute spans from {', '.join(silent)}: no "
                      f"transport figures for this run; the nodes' last lines:\n{_tail(out, 12)}",
                      file=sys.stderr)  # fmt: skip
        return result


def _add_transport(report: dict[str, Any], nodes: dict[str, dict[int, tuple[int, int]]]) -> None:
    """Each frame's ``transport_ns``: the time its data spent between the nodes on the
    critical path (carla_demo.timing): sim to the branch that finished last (agent or
    detector), that branch to the fusion, the fusion back to the sim. Each hop runs from the
    end of one compute to the start of the next (the first from the moment the sim's
    observation was ready), so building, publishing and unpacking messages are in it; a
    branch that began before the sim's last publish is no error (plain
    ROS 2 delivers the image while the sim still publishes the rest)."""
    agent, detector, fusion = (nodes.get(n, {}) for n in TIMED_NODES)
    for row in report["frames"]:
        stamp = row.get("stamp_ns")
        if stamp not in agent or stamp not in detector or stamp not in fusion:
            continue
        (b_in, b_out), (f_in, f_out) = (
            max(agent[stamp], detector[stamp], key=lambda s: s[1]),
            fusion[stamp],
        )
        arrived = row["sent_ns"] + row["latency_ns"]
        # its three hops, to tell which one a slow variant spends its time in
        hops = (b_in - row["sent_ns"], f_in - b_out, arrived - f_out)
        row.update(zip(HOPS, hops, strict=True))
        row["transport_ns"] = sum(hops)
        # each node's own compute: which model a slow variant spent its time in
        for name, spans in zip(TIMED_NODES, (agent, detector, fusion), strict=True):
            row[f"{name}_ns"] = spans[stamp][1] - spans[stamp][0]


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# numpy's BLAS on one thread in every process of every variant (and the floor's), unless the
# user set these: the policy's layers are small, and more threads only fight the detector for
# the cores (in the first measurements the policy took 20x longer). The thread count also
# changes BLAS's summation order, so the control sequence is reproducible for one setting.
THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every process of a run starts from (onnxruntime keeps its default
    thread count: all cores)."""
    return {**THREAD_ENV, **os.environ, "PYTHONUNBUFFERED": "1", **(extra or {})}


def _run_floor(report: Path, frames: int, warmup: int, seed: int, policy_weights: str | None,
               detector_weights: str | None, carla_host: str | None, cpu: int | None,
               timeout_s: float, out: Path, environ: dict[str, str]) -> None:  # fmt: skip
    cmd = [sys.executable, "-m", "carla_demo.floor", str(report), "--frames", str(frames),
           "--warmup", str(warmup), "--seed", str(seed)]  # fmt: skip
    options = {"--policy-weights": policy_weights, "--detector-weights": detector_weights,
               "--carla-host": carla_host}  # fmt: skip
    cmd += [a for flag, value in options.items() if value for a in (flag, value)]
    if cpu is not None:
        cmd += ["--cpu", str(cpu)]
    with out.open("w") as sink:
        r = subprocess.run(cmd, stdout=sink, stderr=subprocess.STDOUT, timeout=timeout_s,
                           env=environ)  # fmt: skip
    if r.returncode:
        why = _tail(out, 3) if r.returncode == 1 else f"exited {r.returncode}:\n{_tail(out)}"
        raise RuntimeError(f"floor: {why}")


def _run_hprm(
    coordination: str,
    params: dict[str, list[str]],
    total: int,
    timeout_s: float,
    out: Path,
    environ: dict[str, str],
    busy_poll: str | None = None,
) -> None:
    files = node_files()
    cmd = [
        sys.executable,
        "-m",
        "hprm_bridge.ros_cli",
        "run",
        *(f"{name}={path}" for name, path in files.items()),
        "--coordination",
        coordination,
    ]
    if coordination == "decentralized":
        stp = f"{int(STP_PER_FRAME_S * total + 30)} s"
        cmd += [a for n in TWO_INPUT_NODES for a in ("--stp-offset", f"{n}={stp}")]
    if busy_poll:
        cmd += ["--busy-poll", busy_poll]
    for node, kvs in params.items():
        for kv in kvs:
            cmd += ["--param", f"{node}:{kv}"]
    with out.open("w") as sink:
        try:
            r = subprocess.run(
                cmd,
                stdout=sink,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                env=environ,
            )
        except subprocess.TimeoutExpired:
            raise RuntimeError(
                f"hprm-{coordination}: no end after {timeout_s:.0f} s:\n{_tail(out)}"
            ) from None
    if r.returncode:
        raise RuntimeError(
            f"hprm-{coordination}: hprm-ros run exited {r.returncode}:\n{_tail(out)}"
        )


def _run_ros2(
    params: dict[str, list[str]], timeout_s: float, out: Path, environ: dict[str, str]
) -> None:
    """Four plain rclpy processes on a domain of their own; the sim starts last and ends the
    run (it re-sends its first frame until discovery has matched everyone)."""
    missing = rclpy_missing()
    if missing:
        raise RuntimeError(missing)
    ros_env = ros2_baseline_env(dict(environ, ROS_DOMAIN_ID=str(random_domain_id())))
    files = node_files()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    with out.open("w") as sink:
        try:
            for name in ("fusion", "agent", "detector", "sim"):
                argv = [sys.executable, str(files[name]), "--ros-args"]
                for kv in params[name]:
                    argv += ["-p", kv]
                procs[name] = subprocess.Popen(
                    argv, env=ros_env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
                )
            deadline = time.monotonic() + timeout_s
            while procs["sim"].poll() is None:
                for name, p in procs.items():
                    if p.poll() is not None and name != "sim":
                        raise RuntimeError(f"ros2: {name} exited {p.returncode}:\n{_tail(out)}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"ros2: no end after {timeout_s:.0f} s:\n{_tail(out)}")
                time.sleep(0.2)
            if procs["sim"].returncode:
                raise RuntimeError(f"ros2: sim exited {procs['sim'].returncode}:\n{_tail(out)}")
        finally:
            _stop(procs.values())


def _stop(procs: Any) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGINT)
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
