"""Publishes from outside logical time (hprm_bridge.rclpy.outside_publishes, and the
device-loop main of hprm_bridge.rclpy.main_loop): a main that blocks on a device and
publishes without spinning its node or sleeping, and a thread of the node file's own,
are heard, every message, in order, in both coordinations; a stop signal stops such a
main blocked in its read; a constructor's publish followed by a spin is not mistaken
for a device loop."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

NODES = Path(__file__).parent / "nodes"
DEVICE = NODES / "device_talker.py"
WORKER = NODES / "worker_talker.py"
CONSTRUCTOR = NODES / "constructor_talker.py"
LISTENER = NODES / "listener.py"
BESIDE = "joins its federation on a thread of its own"


def _heard(out: str) -> list[str]:
    return re.findall(r"^\[listener\] HEARD (.*)$", out, re.M)


@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
def test_a_device_loop_in_a_main_that_never_spins_or_sleeps_is_heard(ported_run, coordination):
    """Its readings take 2.5 s, past the grace: the node starts beside the main, and
    every reading goes out as it is read, then the last word of its ``finally``."""
    out = ported_run(DEVICE, LISTENER, "--param", "device_talker:readings:=25",
                     "--coordination", coordination, timeout="60 s")  # fmt: skip
    assert _heard(out) == [f"reading {i}" for i in range(25)] + ["device closed"], out
    assert BESIDE in out
    assert "stop requested by device_talker" in out  # its main's end stopped the rest


def test_a_main_that_publishes_once_and_ends_is_heard(ported_run):
    """Within the grace: its end starts the node, sends the message, then stops."""
    out = ported_run(DEVICE, LISTENER, "--param", "device_talker:readings:=0", timeout="60 s")
    assert _heard(out) == ["device closed"], out
    assert "ended without spinning" not in out


@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
def test_a_thread_of_the_node_file_publishes_for_a_node_without_callbacks(ported_run, coordination):
    """Before, nothing of the node ran after the start to send what the thread queued:
    only the readings before the start were heard."""
    out = ported_run(WORKER, LISTENER, "--param", "worker_talker:readings:=10",
                     "--param", "worker_talker:wait:=0.1", "--coordination", coordination,
                     timeout="3 s")  # fmt: skip
    assert _heard(out) == [f"polled {i}" for i in range(10)], out


def test_ctrl_c_stops_a_device_loop_blocked_in_its_read(interrupted_run):
    out = interrupted_run(DEVICE, LISTENER, "--param", "device_talker:readings:=100000",
                          "--timeout", "600 s", after="HEARD reading 2")  # fmt: skip
    # its finally's publish raised, as rclpy's on a shut-down context, and ended the main
    assert "the federation stopped, which ended the main" in out, out
    assert "device_talker left" in out and "listener left" in out
    assert "Traceback" not in out and "exited with code" not in out


@pytest.mark.parametrize("load", [0.0, 2.5])
def test_a_constructors_publish_then_a_spin_is_no_device_loop(ported_run, load):
    """Spun at once, the node starts as any; spun after the grace (a long load), it
    started beside the main, and the spin waits for its federation: heard the same."""
    out = ported_run(CONSTRUCTOR, LISTENER, "--param", f"constructor_talker:load:={load}",
                     timeout="0.35 s")  # fmt: skip
    assert _heard(out) == ["from the constructor", "tick 1", "tick 2", "tick 3"], out
    assert (BESIDE in out) == (load > 1.0), out
    assert "[constructor_talker] SPIN RETURNED" in out


@pytest.mark.parametrize("load", [0.0, 2.5])
def test_a_constructors_publish_then_a_spin_once_loop_is_no_device_loop(ported_run, load):
    """Stepped at once, the main takes turns in logical time: three spin_once return at
    the start, 50 ms on (the timeout) and at the first tick (100 ms), and the main's end
    stops the federation there. After the grace the node started beside it (it ticked
    through the load), and its spin_once waits in wall-clock time, saying so."""
    out = ported_run(CONSTRUCTOR, LISTENER, "--param", f"constructor_talker:load:={load}",
                     "--param", "constructor_talker:step:=true", timeout="5 s")  # fmt: skip
    heard = _heard(out)
    assert heard[:2] == ["from the constructor", "tick 1"], out
    if load == 0.0:
        assert heard == ["from the constructor", "tick 1"], out
        assert "[constructor_talker] STEPPED to tick 1" in out
    assert re.search(r"^\[constructor_talker\] STEPPED to tick \d+$", out, re.M), out
    assert ("it waits in wall-clock time" in out) == (load > 1.0), out


@pytest.mark.ros2
def test_the_device_loop_runs_under_real_rclpy_too(rclpy_until_stop):
    lines = rclpy_until_stop([DEVICE, "--ros-args", "-p", "readings:=3"], [LISTENER])
    assert lines == ["SENT 0", "SENT 1", "SENT 2", "CLOSED", "STOP"], lines


def test_a_thread_started_after_the_start_is_heard_with_the_next_callback(ported_run):
    """No physical action was made for it (none was expected at the start): its messages
    go out with the node's next tick, and the first publish says so, once."""
    out = ported_run(NODES / "callback_thread_talker.py", LISTENER, timeout="2 s")
    assert _heard(out) == [f"from the late thread {n}" for n in range(3)], out
    assert out.count("outside the node's callbacks: it goes out with the node's next") == 1, out
    assert "'late_worker'" in out


@pytest.mark.parametrize("readings", [5, 15])
def test_the_graph_of_a_device_loop_is_its_ports(readings):
    """Describing runs the node file until its node would start: a device loop's starts
    as its main ends (0.5 s of readings) or after the grace (1.5 s), and the description
    is written either way; the main then ends without a stop to ask for."""
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "graph", DEVICE, LISTENER,
         "--param", f"device_talker:readings:={readings}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "device_talker -> listener  /chatter [std_msgs/msg/String]" in r.stdout
