"""A node's ``cpu`` parameter pins the thread that runs its callbacks, and only it
(carla_demo.spin): threads the node started before spin (a model's workers) keep every CPU.

Run as the harness runs the nodes: a node file in a process of its own, under HPRM's rclpy
surface and under the real rclpy.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from carla_demo import affinity
from hprm_bridge.bench import rclpy_missing

_NODE = textwrap.dedent(
    """
    import json, os, sys, threading
    if sys.argv[1] == "hprm":
        from hprm_bridge import porting
        porting.install_imports()
    from rclpy.node import Node
    from carla_demo.spin import spin_node

    class Probe(Node):
        def __init__(self):
            super().__init__("probe")
            self.stop = threading.Event()
            # as onnxruntime's workers: started while the node is built
            self.worker = threading.Thread(target=self.stop.wait, daemon=True)
            self.worker.start()
            self.create_timer(0.01, self.tick)

        def tick(self):
            self.stop.set()
            print(json.dumps({"callback": sorted(os.sched_getaffinity(0)),
                              "worker": sorted(os.sched_getaffinity(self.worker.native_id))}))
            raise SystemExit(0)

    spin_node(Probe, sys.argv[2:] or None)
    """
)
CPUS = sorted(os.sched_getaffinity(0))
BACKENDS = ["hprm", pytest.param("ros2", marks=pytest.mark.ros2)]


def _run(backend: str, *args: str) -> subprocess.CompletedProcess[str]:
    if backend == "ros2" and rclpy_missing():
        pytest.skip("needs a sourced ROS 2 Humble (rclpy importable)")
    return subprocess.run(
        [sys.executable, "-W", "ignore", "-c", _NODE, backend, *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
def test_cpu_pins_the_callbacks_thread_and_not_the_nodes_other_threads(backend):
    if len(CPUS) < 2:
        pytest.skip("needs 2 CPUs to tell a pinned thread from a free one")
    r = _run(backend, "--ros-args", "-p", f"cpu:={CPUS[-1]}")
    assert r.returncode == 0, r.stderr[-3000:]
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert seen == {"callback": [CPUS[-1]], "worker": CPUS}


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_cpu_the_callbacks_run_anywhere(backend):
    r = _run(backend)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"callback": CPUS, "worker": CPUS}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cpu_the_process_cannot_use_is_a_clear_error(backend):
    r = _run(backend, "--ros-args", "-p", f"cpu:={max(CPUS) + 1}")
    assert r.returncode != 0
    assert f"cpu {max(CPUS) + 1}: this process may run on CPUs {CPUS} only" in r.stderr


def test_pin_thread_moves_the_calling_thread_only():
    if len(CPUS) < 2:
        pytest.skip("needs 2 CPUs to tell a pinned thread from a free one")
    import threading

    seen = {}

    def pinned():
        affinity.pin_thread(CPUS[0])
        seen["pinned"] = sorted(os.sched_getaffinity(0))

    t = threading.Thread(target=pinned)
    t.start()
    t.join()
    assert seen["pinned"] == [CPUS[0]]
    assert sorted(os.sched_getaffinity(0)) == CPUS  # this thread: untouched
    with pytest.raises(ValueError, match=re.escape(f"cpu -2: this process may run on CPUs {CPUS}")):
        affinity.pin_thread(-2)
