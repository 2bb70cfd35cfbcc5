"""The demo's variants end to end: real processes, real federations, real DDS where sourced.

Short runs of the embedded world. What is asserted is what must hold whatever the machine's
load: every frame delivered, and the HPRM variants' control sequences identical in every run
and to the in-process floor's (same world, seed and models: the middleware changes nothing).
Latencies are benchmark figures (``hprm bench carla-ab``), never asserted here.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from carla_demo.ab import (
    IMAGE_NODES,
    PINNED_NODES,
    _add_transport,
    _params,
    run_variant,
)
from hprm_bridge.bench import rclpy_missing
from hprm_bridge.wire.dds_config import random_domain_id
from hprm_core import compiled

FRAMES, WARMUP = 4, 2
LAUNCH = Path(__file__).resolve().parent.parent / "launch" / "ab.launch.py"


def _controls(report):
    return [r["control"] for r in report["frames"]]


@pytest.fixture(scope="module")
def floor():
    return run_variant("floor", FRAMES, WARMUP)


def _shm_segments():
    return {p.name for p in Path("/dev/shm").glob("carla_demo_*")}


def _left_behind(before):
    """Segments made since ``before`` whose maker (``carla_demo_PID_...``) has exited: a
    run's leftovers, not those of a run going on beside it (another xdist worker's)."""
    return {s for s in _shm_segments() - before
            if not Path(f"/proc/{s.split('_')[2]}").exists()}  # fmt: skip


def test_transport_is_the_three_hops_on_the_critical_path():
    # Frame 7 sent at 1000, back at 1000 + 500; the detector (10..300) finishes after the
    # agent (20..100), so the hops are sim->detector, detector->fusion, fusion->sim.
    # Frame 8 lacks the fusion's span: no transport for it, no error.
    report = {"frames": [{"stamp_ns": 7, "sent_ns": 1000, "latency_ns": 500},
                         {"stamp_ns": 8, "sent_ns": 2000, "latency_ns": 500}]}  # fmt: skip
    nodes = {"agent": {7: (1020, 1100), 8: (2010, 2020)}, "detector": {7: (1010, 1300)},
             "fusion": {7: (1320, 1350)}}  # fmt: skip
    _add_transport(report, nodes)
    row, missing = report["frames"]
    assert (row["to_branch_ns"], row["to_fusion_ns"], row["to_sim_ns"]) == (10, 20, 150)
    assert row["transport_ns"] == 180
    assert (row["agent_ns"], row["detector_ns"], row["fusion_ns"]) == (80, 290, 30)
    assert "transport_ns" not in missing and "to_sim_ns" not in missing


def test_the_bench_runs_hprm_three_times_per_coordination_and_matches_the_floor(tmp_path, floor):
    out = tmp_path / "ab.json"
    r = subprocess.run(
        [sys.executable, "-m", "hprm_core.cli", "bench", "carla-ab", "--variants",
         "floor,hprm-centralized,hprm-decentralized", "--frames", str(FRAMES), "--warmup",
         str(WARMUP), "--runs", "3", "--json", str(out), "--plot", str(tmp_path / "ab.png")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "random weights" in r.stderr  # said loudly
    doc = json.loads(out.read_text())
    assert doc["params"]["compiled"] == compiled.is_compiled()  # which runtime build ran
    assert doc["params"]["critical_path_cpu"] == min(os.sched_getaffinity(0))  # the default
    rows = {row["variant"]: row for row in doc["results"]}
    for variant in ("hprm-centralized", "hprm-decentralized"):
        assert rows[variant]["frames"] == 3 * FRAMES, rows[variant]
        assert rows[variant]["same_controls_every_run"] == "yes", rows[variant]
        assert rows[variant]["controls_equal_floor"] == "yes", rows[variant]
        assert "overhead_ms" in rows[variant]
        assert rows[variant]["transport_ms"] > 0  # the nodes' timing files were read
        assert all(rows[variant][h] > 0 for h in ("to_branch_ms", "to_fusion_ms", "to_sim_ms"))
        assert 0 < rows[variant]["detector_ms"] < rows[variant]["median_ms"], rows[variant]
    assert (tmp_path / "ab.png").stat().st_size > 10_000
    assert "median_ms" in r.stdout and "hprm-decentralized" in r.stdout  # the table
    # how to read transport and overhead, under the table and in the JSON
    assert [n.split(":")[0] for n in doc["notes"]] == ["transport_ms", "overhead_ms"]
    assert "note: overhead_ms: median minus the floor's median" in r.stdout


def test_hprm_report_has_every_frame_in_order(floor):
    report = run_variant("hprm-centralized", FRAMES, WARMUP)
    assert [r["frame"] for r in report["frames"]] == list(range(WARMUP + FRAMES))
    assert _controls(report) == _controls(floor)
    assert all(r["latency_ns"] > 0 for r in report["frames"])


def test_busy_polling_nodes_drive_the_same_way(floor):
    """--busy-poll changes how the nodes wait for messages, never what they compute."""
    report = run_variant("hprm-decentralized", FRAMES, WARMUP, busy_poll="1 ms")
    assert _controls(report) == _controls(floor)


def test_a_pinned_critical_path_drives_the_same_way(floor):
    """cpu= changes where the sim, detector and fusion run, never what they compute."""
    report = run_variant("hprm-decentralized", FRAMES, WARMUP, cpu=max(os.sched_getaffinity(0)))
    assert _controls(report) == _controls(floor)


def test_a_cpu_the_machine_lacks_stops_the_run_before_it_starts():
    with pytest.raises(ValueError, match="this process may run on CPUs"):
        run_variant("hprm-centralized", 1, 0, cpu=max(os.sched_getaffinity(0)) + 1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--frames", "0"], "argument --frames: must be at least 1, got 0"),  # ran 400
        (["--frames", "-5"], "argument --frames: must be at least 1, got -5"),  # ran forever
        (["--runs", "0"], "argument --runs: must be at least 1, got 0"),  # measured nothing
        (["--warmup", "-1"], "argument --warmup: must be at least 0, got -1"),
        (["--cpu", str(max(os.sched_getaffinity(0)) + 1)], "this process may run on CPUs"),
    ],
)
def test_the_bench_refuses_bad_counts_and_cpus_before_any_run(args, message):
    r = subprocess.run([sys.executable, "-m", "hprm_core.cli", "bench", "carla-ab", *args],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert "carla-ab: floor" not in r.stderr  # nothing ran


def test_pinned_and_busy_polling_nodes_are_refused_before_the_run_starts():
    # three nodes spinning on one CPU wait for each other's time slices (H200: 1 -> 14 ms)
    with pytest.raises(ValueError, match="busy_poll with cpu"):
        run_variant("hprm-centralized", 1, 0, busy_poll="forever", cpu=0)


def test_the_bench_refuses_cpu_with_busy_poll_and_spins_on_any_cpu_by_default(tmp_path):
    bench = [sys.executable, "-m", "hprm_core.cli", "bench", "carla-ab", "--busy-poll", "1 ms"]
    r = subprocess.run([*bench, "--cpu", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--cpu with --busy-poll" in r.stderr, r.stderr
    out = tmp_path / "ab.json"
    r = subprocess.run([*bench, "--variants", "floor", "--frames", "2", "--warmup", "0",
                        "--runs", "1", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(out.read_text())["params"]["critical_path_cpu"] == "any"


def test_cpu_goes_to_the_critical_paths_nodes_only():
    params = _params(1, 0, 0, Path("r.json"), "topic", None, None, None, cpu=3)
    assert {n for n, kvs in params.items() if "cpu:=3" in kvs} == set(PINNED_NODES)
    assert set(PINNED_NODES) == {"sim", "detector", "fusion"}
    assert not any(
        "cpu" in kv
        for kvs in _params(1, 0, 0, Path("r.json"), "topic", None, None, None, cpu=None).values()
        for kv in kvs
    )


@pytest.mark.parametrize("transport", ["shm", "bytes"])
def test_a_transport_goes_to_the_nodes_that_send_or_read_images(transport):
    params = _params(1, 0, 0, Path("r.json"), transport, None, None, None, cpu=None)
    told = {n for n, kvs in params.items() if f"transport:={transport}" in kvs}
    assert told == set(IMAGE_NODES) == {"sim", "agent", "detector"}
    plain = _params(1, 0, 0, Path("r.json"), "topic", None, None, None, cpu=None)
    assert not any("transport" in kv for kvs in plain.values() for kv in kvs)


def test_the_floor_is_reproducible_and_depends_on_the_seed(floor):
    assert _controls(run_variant("floor", FRAMES, WARMUP)) == _controls(floor)
    assert _controls(run_variant("floor", FRAMES, WARMUP, seed=1)) != _controls(floor)


def test_an_unreachable_carla_host_is_a_clear_error():
    r = subprocess.run(
        [sys.executable, "-m", "hprm_core.cli", "bench", "carla-ab", "--variants", "floor",
         "--carla-host", "127.0.0.1", "--frames", "1", "--warmup", "0", "--runs", "1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 1
    assert "CARLA server at 127.0.0.1:2000 is not reachable" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_wrong_checkpoint_stops_the_run_naming_it(tmp_path):
    bad = tmp_path / "roach.pth"
    bad.write_text("not a checkpoint")
    with pytest.raises(RuntimeError, match=r"roach.pth: not a Roach policy checkpoint"):
        run_variant("hprm-centralized", 1, 0, policy_weights=str(bad))


def test_without_ros_the_ros2_variants_say_why():
    missing = rclpy_missing()
    if missing is None:
        pytest.skip("rclpy is importable here: the ros2 variants run (tests below)")
    with pytest.raises(RuntimeError, match="source a ROS 2 Humble"):
        run_variant("ros2", 1, 0)


@pytest.mark.ros2
@pytest.mark.parametrize("variant", ["ros2", "ros2-shm", "ros2-bytes"])
def test_plain_ros2_variants_deliver_every_frame_and_leave_no_shared_memory(variant, floor):
    if rclpy_missing():
        pytest.skip("needs a sourced ROS 2 Humble (rclpy importable)")
    before = _shm_segments()
    report = run_variant(variant, FRAMES, WARMUP)
    assert [r["frame"] for r in report["frames"]] == list(range(WARMUP + FRAMES))
    assert _left_behind(before) == set()


@pytest.mark.ros2
@pytest.mark.parametrize("variant", ["hprm-decentralized", "ros2-shm", "ros2-bytes"])
def test_ros2_launch_runs_each_variant(tmp_path, variant, floor):
    if shutil.which("ros2") is None or rclpy_missing():
        pytest.skip("needs a sourced ROS 2 Humble (ros2 on PATH, rclpy importable)")
    report = tmp_path / "report.json"
    cmd = [sys.executable, shutil.which("ros2"), "launch", str(LAUNCH), f"variant:={variant}",
           f"frames:={FRAMES}", f"warmup:={WARMUP}", f"report:={report}",
           f"cpu:={max(os.sched_getaffinity(0))}"]  # fmt: skip
    own_tmp = tempfile.mkdtemp(prefix="hprm-t-")  # short: socket paths live under it
    env = dict(os.environ, ROS_DOMAIN_ID=str(random_domain_id()), TMPDIR=own_tmp)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        # nothing left behind: no parameter files (launch_ros' dict parameters would)
        left = os.listdir(own_tmp)
    finally:
        shutil.rmtree(own_tmp, ignore_errors=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert left == []
    frames = json.loads(report.read_text())["frames"]
    assert [f["frame"] for f in frames] == list(range(WARMUP + FRAMES))
    if variant.startswith("hprm"):
        assert [f["control"] for f in frames] == _controls(floor)


@pytest.mark.ros2
def test_ros2_launch_refuses_cpu_with_busy_poll():
    if shutil.which("ros2") is None or rclpy_missing():
        pytest.skip("needs a sourced ROS 2 Humble (ros2 on PATH, rclpy importable)")
    cmd = [sys.executable, shutil.which("ros2"), "launch", str(LAUNCH),
           "variant:=hprm-centralized", "cpu:=0", "busy_poll:=forever"]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "would spin three nodes on one CPU" in r.stdout + r.stderr, r.stdout + r.stderr
