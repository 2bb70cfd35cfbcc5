"""Guard conditions (hprm_bridge.rclpy.guard_condition): triggered in the node's turn they
call back one microstep later, at the same logical time, once however often triggered;
before the start, at the start; from a thread of the node file's own, at a tag of the
wall clock. The same node files print the same under real rclpy."""

import re
from pathlib import Path

import pytest

NODES = Path(__file__).parent / "nodes"
WAKER_SAYS = ["GUARD call 1", "TICK 1", "GUARD call 2", "TICK 2", "THREAD GUARD", "TICK 3",
              "DESTROYED True", "TRIGGER AFTER DESTROY InvalidHandle", "GUARDS 1",
              "STOP"]  # fmt: skip


def _timed(lines):
    """(what, time) of each line; time None where the line has none."""
    found = [re.match(r"^(?:\[guard_waker\] )?(.*?)(?: at (\d+))?$", line) for line in lines]
    return [(m.group(1), m.group(2) and int(m.group(2))) for m in found]


@pytest.mark.parametrize("threaded", [False, True], ids=["callbacks", "tasks"])
def test_a_guard_calls_back_a_microstep_after_its_trigger(ported_run, threaded):
    runs = []
    for _ in range(2):
        out = ported_run(NODES / "guard_waker.py", "--param", f"guard_waker:threaded:={threaded}")
        start = int(re.search(r"start time (\d+)", out).group(1))
        lines = [line for line in out.splitlines() if re.match(r"\[guard_waker\] [A-Z]", line)]
        runs.append([(what, t and t - start) for what, t in _timed(lines)])
    assert [what for what, _ in runs[0]] == WAKER_SAYS
    times = dict(runs[0])
    assert times["GUARD call 1"] == 0  # triggered before the spin: at the start
    assert times["TICK 1"] == times["GUARD call 2"] == 100_000_000  # twice: one call
    # from a worker thread: a physical action, after the tick that started the thread
    assert times["TICK 2"] < times["THREAD GUARD"] < times["TICK 3"]
    without_thread = [[e for e in run if e[0] != "THREAD GUARD"] for run in runs]
    assert without_thread[0] == without_thread[1]  # the rest: the same tags every run


@pytest.mark.ros2
def test_the_guard_waker_says_the_same_under_real_rclpy(rclpy_until_stop):
    assert [what for what, _ in _timed(rclpy_until_stop([NODES / "guard_waker.py"]))] == WAKER_SAYS


STOPPER_SAYS = ["TIMER: triggering the guard", "SPUN 1", "GUARD: shutting down", "SPUN 2",
                "END after 2 spin_once", "STOP"]  # fmt: skip


def test_a_guard_stops_a_spin_once_loop_as_in_ros2_examples(ported_run):
    out = ported_run(NODES / "guard_stopper.py")
    assert re.findall(r"^\[guard_stopper\] ([A-Z].*)$", out, re.M) == STOPPER_SAYS


@pytest.mark.ros2
def test_the_guard_stopper_says_the_same_under_real_rclpy(rclpy_until_stop):
    assert rclpy_until_stop([NODES / "guard_stopper.py"]) == STOPPER_SAYS


def test_a_guard_made_after_the_start_is_refused():
    from hprm_bridge import porting

    porting.install_imports()
    from hprm_bridge.rclpy import UnsupportedError
    from hprm_bridge.rclpy.node import Node

    node = Node("late_guard")
    node.create_guard_condition(lambda: None)
    node._as_reactor()
    with pytest.raises(UnsupportedError, match="create_guard_condition after its node started"):
        node.create_guard_condition(lambda: None)
