"""The example package (hprm_bridge/examples/ros_pipeline: four rclpy nodes,
no HPRM import) under hprm-ros run, both coordinations, and under real rclpy
where a Humble is sourced. Real processes, sockets and shared memory."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hprm_bridge.examples import ros_pipeline
from hprm_bridge.wire.dds_config import random_domain_id

PIPELINE = Path(ros_pipeline.__file__).parent
NODES = [PIPELINE / f"{n}.py" for n in ("camera", "detector", "planner", "controller")]
COORDINATIONS = {
    "centralized": ["--coordination", "centralized"],
    "decentralized": ["--coordination", "decentralized", "--stp-offset", "40 ms"],
}
FRAMES = 6  # 30 Hz for 200 ms: frames at 33.3 .. 200 ms


def _run_pipeline(*extra, timeout="200 ms", files=NODES):
    try:
        r = subprocess.run(
            [sys.executable, "-m", "hprm_bridge.ros_cli", "run", *map(str, files),
             "--timeout", timeout, *extra],
            capture_output=True, text=True, timeout=180,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:  # a hang: what each process said until then
        said = exc.output.decode(errors="replace") if isinstance(exc.output, bytes) else exc.output
        pytest.fail(f"hprm-ros run hung for {exc.timeout} s; it printed:\n{said}")
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def _commands(out, federate="controller"):
    """The controller's commands: (stamp relative to the first, linear, angular)."""
    cmds = re.findall(rf"^\[{federate}\] CMD (\d+) (\S+) (\S+) \d+$", out, re.M)
    assert cmds, out
    first = int(cmds[0][0])
    return [(int(s) - first, lin, ang) for s, lin, ang in cmds]


def _counts(out):
    pattern = (
        r"^\[\w+\] (camera: published|detector: received|planner: received|controller: sent) (\d+)"
    )
    return {k.split(":")[0]: int(n) for k, n in re.findall(pattern, out, re.M)}


@pytest.fixture(scope="module")
def reference():
    """The centralized run every other run must reproduce."""
    return _commands(_run_pipeline(*COORDINATIONS["centralized"]))


@pytest.mark.parametrize("coordination", COORDINATIONS)
def test_the_controller_sequence_is_identical_over_ten_runs(coordination, reference):
    """Every frame published reaches the controller, and the commands (values
    and logical stamps, 33.3 ms apart) are the same in every run and in both
    coordinations."""
    assert len(reference) == FRAMES
    assert [s for s, _, _ in reference] == [k * 33_333_333 for k in range(FRAMES)]
    assert len({(lin, ang) for _, lin, ang in reference}) > 2  # it does steer
    for _ in range(10):
        out = _run_pipeline(*COORDINATIONS[coordination])
        assert _commands(out) == reference, out
        assert _counts(out) == dict.fromkeys(
            ("camera", "detector", "planner", "controller"), FRAMES
        )


def test_the_four_nodes_in_one_process_give_the_same_commands(reference):
    """composed.py spins the four nodes with one executor: one federate, the same
    commands at the same logical times as four federates give."""
    out = _run_pipeline(files=[PIPELINE / "composed.py"])
    assert _commands(out, "composed") == reference, out
    assert f"[composed] controller: sent {FRAMES} commands" in out, out


@pytest.fixture
def two_cpu_hogs():
    hogs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(2)]
    yield
    for h in hogs:
        h.kill()
        h.wait()


@pytest.mark.parametrize("coordination", COORDINATIONS)
def test_the_controller_sequence_is_the_same_with_two_cpu_hogs_beside_it(
    coordination, reference, two_cpu_hogs
):
    args = list(COORDINATIONS[coordination])
    if coordination == "decentralized":
        args[-1] = "200 ms"  # a loaded machine needs a longer safe-to-process offset
    for _ in range(2):
        assert _commands(_run_pipeline(*args)) == reference


def test_a_6_mb_image_crosses_by_reference_not_over_the_sockets():
    out = _run_pipeline(
        "--param", "camera:width:=1600", "--param", "camera:height:=1250",
        "--param", "planner:image_width:=1600", timeout="100 ms",
    )  # fmt: skip
    assert _counts(out)["controller"] == 3, out
    sent = int(re.search(r"^\[camera\] .*camera left: (\d+) bytes sent", out, re.M).group(1))
    assert sent < 3 * 6_000_000 / 100, out  # 18 MB published, a few KB on the sockets
    assert all(float(lin) > 0 for _, lin, _ in _commands(out))  # the detector saw the square


@pytest.mark.ros2
def test_the_same_node_files_run_under_real_rclpy(read_until):
    pytest.importorskip(
        "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
    )
    if shutil.which("ros2") is None:
        pytest.skip("needs a sourced ROS 2 Humble (ros2 on PATH)")
    env = dict(os.environ, PYTHONUNBUFFERED="1", ROS_DOMAIN_ID=str(random_domain_id()))
    popen = dict(env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    procs = [  # subscribers first
        subprocess.Popen([sys.executable, str(node)], **popen) for node in reversed(NODES)
    ]
    controller = procs[0]
    try:
        lines = read_until(controller, 60, lambda ls: sum(x.startswith("CMD ") for x in ls) >= 10)
        cmds = [x.split() for x in lines if x.startswith("CMD ")]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
    assert len(cmds) >= 10, cmds
    # Stamps from the system clock (their spacing moves with load), in order.
    stamps = [int(c[1]) for c in cmds]
    assert stamps == sorted(set(stamps))
    assert len({(c[2], c[3]) for c in cmds}) > 2
