"""What each node times is its compute alone (carla_demo.timing).

The A/B report's ``transport_ms`` is a frame's latency minus the compute on its critical
path; it stands for "variant minus floor" only if a node's span holds exactly what the floor
runs (the model, the rules) and the middleware's work (taking inputs out of messages,
building and publishing the output) falls outside it. Checked on the real node classes under
HPRM's rclpy surface, one frame each, with the real models: the order of the span's ends
against the moments the nodes unpack, compute and build messages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from carla_demo import timing

_RUN = textwrap.dedent(
    """
    import json, sys, time
    from hprm_bridge import porting
    porting.install_imports()
    import numpy as np
    from carla_demo import agent_node, detector_node, fusion_node, messages, timing
    from carla_demo.world import MEASUREMENT_NAMES

    STAMP = 1_000_000_000
    camera = messages.image_msg(np.zeros((600, 960, 3), np.uint8), (600, 960, 3), "rgb8",
                                STAMP, "camera")
    birdview = messages.image_msg(np.zeros((15 * 192, 192), np.uint8), (15 * 192, 192),
                                  "mono8", STAMP, "birdview")
    measurements = messages.values_msg(MEASUREMENT_NAMES, [0.0] * 6, STAMP)
    action = messages.values_msg(messages.CONTROL_NAMES, (0.5, 0.0, 0.0), STAMP)
    detections = messages.detections_msg(np.zeros((0, 6), np.float32), STAMP)

    events = []

    def noted(label, f):
        def call(*args, **kwargs):
            events.append((label + ">", time.monotonic_ns()))
            try:
                return f(*args, **kwargs)
            finally:
                events.append((label + "<", time.monotonic_ns()))
        return call

    # middleware work: the message helpers the nodes call through `messages.`
    for name in ("image_array", "values", "detections", "values_msg", "detections_msg"):
        setattr(messages, name, noted(name, getattr(messages, name)))
    # compute: the models and the rules, what the floor runs
    fusion_node.fuse = noted("compute", fusion_node.fuse)
    detector_node.mark_red_lights = noted("compute", detector_node.mark_red_lights)
    agent, detector, fusion = agent_node.Agent(), detector_node.DetectorNode(), fusion_node.Fusion()
    agent.policy = noted("compute", agent.policy)
    detector.detector = noted("compute", detector.detector)

    out = {}
    for name, node, run in (("agent", agent, lambda: agent.act(birdview, measurements)),
                            ("detector", detector, lambda: detector.detect(camera)),
                            ("fusion", fusion, lambda: fusion.combine(action, detections))):
        events.clear()
        run()
        out[name] = list(events)
    print(json.dumps({"events": out, "spans": {n: s[STAMP] for n, s in
                      timing.read(sys.argv[1]).items()}}))
    """
)


def test_a_nodes_span_holds_its_compute_and_no_message_work(tmp_path):
    env = {**os.environ, "CARLA_DEMO_TIMING": str(tmp_path)}
    r = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", _RUN, str(tmp_path)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    found = json.loads(r.stdout.strip().splitlines()[-1])
    for node in ("agent", "detector", "fusion"):
        start, end = found["spans"][node]
        events = found["events"][node]
        compute = [t for label, t in events if label.startswith("compute")]
        unpack = [t for label, t in events if label[:-1] in ("image_array", "values", "detections")]
        build = [t for label, t in events if label[:-1] in ("values_msg", "detections_msg")]
        assert compute and unpack and build, (node, events)
        assert start <= min(compute) and max(compute) <= end, (node, found)
        assert max(unpack) <= start, f"{node} unpacked a message inside its timed span"
        assert end <= min(build), f"{node} built its output inside its timed span"


_KILLED = textwrap.dedent(
    """
    import os, signal, sys
    from carla_demo.timing import Timing
    t = Timing("detector")
    for stamp in range(int(sys.argv[1])):
        with t.measure(stamp * 40_000_000):
            pass
    os.kill(os.getpid(), signal.SIGKILL)  # no atexit, no flush: a node killed at shutdown
    """
)


def test_spans_outlive_a_node_killed_before_it_could_exit(tmp_path):
    rows = 2500  # past the first file size twice: the file grows while mapped
    env = {**os.environ, "CARLA_DEMO_TIMING": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", _KILLED, str(rows)], env=env, timeout=60)
    assert r.returncode == -9
    spans = timing.read(str(tmp_path))["detector"]
    assert sorted(spans) == [i * 40_000_000 for i in range(rows)]
    assert all(0 < start <= end for start, end in spans.values())


def test_without_the_harness_a_node_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("CARLA_DEMO_TIMING", raising=False)
    monkeypatch.chdir(tmp_path)
    with timing.Timing("fusion").measure(1):
        pass
    assert os.listdir(tmp_path) == []
