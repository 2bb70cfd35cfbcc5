"""Executor tasks (hprm_bridge.rclpy.executors.Executor.create_task): a task runs from the
next microstep after the callback that made it (from the start if made before the
spin), may wait for futures, and its error fails the node, as it ends rclpy's spin.
The same node file prints the same under real rclpy."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

NODES = Path(__file__).parent / "nodes"
MAKER_SAYS = ["TASK first", "TICK 1", "MADE done False", "TASK work 1", "TICK 2",
              "RESULT work 10", "TASK first got 21", "TICK 3", "RESULT first 42",
              "STOP"]  # fmt: skip


def _timed(lines):
    found = [re.match(r"^(?:\[task_maker\] )?(.*?)(?: at (\d+))?$", line) for line in lines]
    return [(m.group(1), m.group(2) and int(m.group(2))) for m in found]


def test_a_task_runs_after_the_callback_that_made_it_and_may_wait(ported_run):
    out = ported_run(NODES / "task_maker.py")
    start = int(re.search(r"start time (\d+)", out).group(1))
    lines = [line for line in out.splitlines() if re.match(r"\[task_maker\] [A-Z]", line)]
    timed = [(what, t and (t - start) // 1_000_000) for what, t in _timed(lines)]
    assert [what for what, _ in timed] == MAKER_SAYS
    times = {what: t for what, t in timed if t is not None}
    assert times == {"TASK first": 0, "TICK 1": 100, "TASK work 1": 100, "TICK 2": 200,
                     "TASK first got 21": 200, "TICK 3": 300}  # fmt: skip


@pytest.mark.ros2
def test_the_task_maker_says_the_same_under_real_rclpy(rclpy_until_stop):
    assert [what for what, _ in _timed(rclpy_until_stop([NODES / "task_maker.py"]))] == MAKER_SAYS


def test_a_tasks_error_fails_the_node():
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", NODES / "task_maker.py",
         "--param", "task_maker:fail:=true", "--timeout", "3 s"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode != 0
    assert "ValueError: work 1 failed" in r.stdout + r.stderr
    assert "TICK 2" not in r.stdout


def test_a_node_without_tasks_refuses_a_task_made_after_the_start():
    from hprm_bridge import porting

    porting.install_imports()
    from hprm_bridge.rclpy import UnsupportedError
    from hprm_bridge.rclpy.executors import SingleThreadedExecutor
    from hprm_bridge.rclpy.node import Node

    node = Node("no_tasks")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    node._as_reactor()
    with pytest.raises(UnsupportedError, match="runs no tasks"):
        executor.create_task(lambda: None)
