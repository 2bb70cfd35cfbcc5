"""Unmodified rclpy node files (test/nodes/*.py: they import rclpy and
std_msgs only) run as HPRM federates under ``hprm-ros run``, and, where a real
Humble is sourced, under real rclpy too. Real processes and sockets."""

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hprm_bridge.wire.dds_config import random_domain_id

NODES = Path(__file__).parent / "nodes"
HPRM_ROS = [sys.executable, "-m", "hprm_bridge.ros_cli"]


def _hprm_ros(*args, timeout=120, env=None):
    return subprocess.run(
        [*HPRM_ROS, "run", *map(str, args)],
        capture_output=True, text=True, timeout=timeout,
        env=dict(os.environ, PYTHONUNBUFFERED="1", **(env or {})),
    )  # fmt: skip


def _heard(out):
    return re.findall(r"^\[listener\] HEARD (\S+)$", out, re.M)


@pytest.mark.parametrize(
    "coordination", [["--coordination", "centralized"],
                     ["--coordination", "decentralized", "--stp-offset", "30 ms"]],
    ids=["centralized", "decentralized"],
)  # fmt: skip
def test_talker_and_listener_run_unchanged_as_federates(coordination):
    """Every publish is delivered, both of each callback, in order, at the
    talker's tags (10..50 ms: five ticks within the 50 ms timeout)."""
    r = _hprm_ros(NODES / "talker.py", NODES / "listener.py", "--timeout", "50 ms", *coordination)
    assert r.returncode == 0, r.stdout + r.stderr
    expected = [f"{n}{p}" for n in range(1, 6) for p in "ab"]
    assert _heard(r.stdout) == expected, r.stdout
    assert "talker.pub0 -> listener.sub0 (topic /chatter)" in r.stdout
    assert r.stdout.count("] [talker]: sent ") == 5


@pytest.mark.parametrize(
    "coordination", [["--coordination", "centralized"],
                     ["--coordination", "decentralized", "--stp-offset", "30 ms"]],
    ids=["centralized", "decentralized"],
)  # fmt: skip
def test_nodes_in_a_feedback_loop_answer_each_other_at_the_same_logical_time(coordination):
    """pinger -> /ping -> ponger -> /pong -> pinger: a loop with no delay that
    hprm-ros breaks with one microstep per topic, so every answer arrives at the
    tick's own time (0 ns later by the node's clock); the answer to the last
    tick would come one microstep past the timeout tag, after the stop.
    Decentralized, an answer is on time if it comes back within one period of
    physical time (the next tick waits the STP offset, as this one did): ticks
    every 100 ms keep a loaded machine's scheduling delays from making it tardy."""
    r = _hprm_ros(NODES / "pinger.py", NODES / "ponger.py", "--timeout", "500 ms", *coordination,
                  env={"PINGER_PERIOD_S": "0.1"})  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    pongs = re.findall(r"^\[pinger\] PONG (\d+) after (\d+) ns$", r.stdout, re.M)
    assert pongs == [(str(n), "0") for n in (10, 20, 30, 40)], r.stdout
    assert "topic /ping, 1 microstep later" in r.stdout


def test_the_same_run_twice_gives_the_same_sequence():
    runs = [
        _heard(_hprm_ros(NODES / "talker.py", NODES / "listener.py", "--timeout", "30 ms").stdout)
        for _ in range(2)
    ]
    assert runs[0] == runs[1] == ["1a", "1b", "2a", "2b", "3a", "3b"]


def test_bad_command_lines_are_refused_before_anything_starts(tmp_path):
    for args, why in [
        ([tmp_path / "missing.py"], "node file not found"),
        ([NODES / "talker.py", NODES / "talker.py"], "two nodes are named alike"),
        ([NODES / "talker.py", "--timeout", "soon"], "--timeout"),
        ([NODES / "talker.py", "--busy-poll", "talker=soon"], "--busy-poll"),
    ]:
        r = _hprm_ros(*args, timeout=60)
        assert r.returncode == 2 and why in r.stderr, (args, r.stderr)
    for flag in ("--busy-poll", "--stp-offset"):  # usage errors naming the nodes there are
        r = _hprm_ros(NODES / "talker.py", flag, "lisener=1 ms", timeout=60)
        assert r.returncode == 2, r.stderr
        assert f"{flag} names no node lisener (nodes: talker)" in r.stderr, r.stderr
    r = _hprm_ros(NODES / "talker.py", "--node-services", timeout=60)
    assert r.returncode == 2 and "add --bridge" in r.stderr, r.stderr


@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
def test_busy_poll_spins_the_node_it_names_and_only_that_node(coordination):
    """--busy-poll NODE=forever: that node's federate spins while idle (most of
    a CPU), the other sleeps; every message still arrives. Compared within the
    run: a loaded machine shrinks the spinner's share, not the ratio's sense."""
    nodes = [f"{name}={NODES / 'cpu_share.py'}" for name in ("spinner", "sleeper")]
    r = _hprm_ros(NODES / "talker.py", *nodes, "--timeout", "500 ms", "--coordination",
                  coordination, "--stp-offset", "30 ms",
                  "--busy-poll", "spinner=forever")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    found = dict(re.findall(r"^\[(\w+)\] HEARD 100 CPU_SHARE ([\d.]+)$", r.stdout, re.M))
    assert set(found) == {"spinner", "sleeper"}, r.stdout  # both heard all 50 ticks x 2
    spinner, sleeper = float(found["spinner"]), float(found["sleeper"])
    assert spinner > 4 * max(sleeper, 0.02) and sleeper < 0.25, r.stdout


@pytest.mark.ros2
def test_the_same_node_files_run_under_real_rclpy(require_ros2_cli):
    require_ros2_cli()
    env = dict(os.environ, PYTHONUNBUFFERED="1", ROS_DOMAIN_ID=str(random_domain_id()))
    popen = dict(env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    listener = subprocess.Popen([sys.executable, str(NODES / "listener.py")], **popen)
    talker = subprocess.Popen([sys.executable, str(NODES / "talker.py")], **popen)
    heard = []
    try:
        deadline = time.monotonic() + 60
        for line in listener.stdout:
            if line.startswith("HEARD "):
                heard.append(line.split()[1])
            if len(heard) >= 6 or time.monotonic() > deadline:
                break
    finally:
        for p in (talker, listener):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    assert len(heard) >= 6, heard
    # Real rclpy: both messages of each callback arrive, in order (late joiners
    # may miss the first ticks).
    n = int(heard[0][:-1]) if heard[0].endswith("a") else int(heard[1][:-1])
    start = heard.index(f"{n}a")
    assert heard[start : start + 4] == [f"{n}a", f"{n}b", f"{n + 1}a", f"{n + 1}b"], heard


def test_parameters_reach_each_node_from_files_and_the_command_line(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("greeter:\n  ros__parameters:\n    greeting: hi\n    period: 0.02\n")
    r = _hprm_ros(NODES / "greeter.py", NODES / "listener.py", "--timeout", "60 ms",
                  "--params-file", params)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert _heard(r.stdout) == ["hi_1", "hi_2", "hi_3"]  # every 20 ms, from the file
    r = _hprm_ros(NODES / "greeter.py", NODES / "listener.py", "--timeout", "20 ms",
                  "--params-file", params, "--param", "greeter:greeting:=hey")  # fmt: skip
    assert _heard(r.stdout) == ["hey_1"], r.stdout + r.stderr  # -p beats the file
    r = _hprm_ros(NODES / "greeter.py", "--param", "nobody:x:=1", timeout=60)
    assert r.returncode == 2 and "--param names no node nobody" in r.stderr


def test_graph_draws_the_federation_the_nodes_would_form_without_running_it():
    from hprm_bridge.examples import ros_pipeline

    pipeline = Path(ros_pipeline.__file__).parent
    r = subprocess.run(
        [*HPRM_ROS, "graph", *(str(pipeline / f"{n}.py") for n in ("camera", "detector",
         "planner", "controller")), "--param", "camera:width:=64"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "federation of 4 (centralized): camera, detector, planner, controller",
        "  camera -> detector  /camera/image_raw [sensor_msgs/msg/Image]",
        "  detector -> planner  /detections [geometry_msgs/msg/PointStamped]",
        "  planner -> controller  /goal [geometry_msgs/msg/PoseStamped]",
        "  controller -> /cmd_vel [geometry_msgs/msg/Twist] (published, no subscriber inside)",
    ]
    r = subprocess.run(
        [*HPRM_ROS, "graph", str(NODES / "pinger.py"), str(NODES / "ponger.py"),
         "--format", "mermaid"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert '  pinger -->|"/ping<br/>std_msgs/msg/Int64 (+1 microstep)"| ponger' in r.stdout


def test_graph_names_a_node_that_fails_before_spin(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import rclpy\nrclpy.init()\nraise RuntimeError('no camera found')\n")
    r = subprocess.run([*HPRM_ROS, "graph", str(NODES / "talker.py"), str(broken)],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 1
    assert "node broken failed before spin()" in r.stderr and "no camera found" in r.stderr


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("x = 1\n", "ended without spinning a node"),  # ends, exit 0, never joins
        ("import rclpy\n\ndef setup():\n    raise RuntimeError('no camera found')\n\nsetup()\n",
         "failed before rclpy.spin()"),
        ("from hprm_core import Reactor, main\n\n@main\nclass P(Reactor):\n    pass\n",
         "ended without spinning a node"),  # an hprm program, run on its own, then ends
    ],
    ids=["never-spins", "raises", "reactor-program"],
)  # fmt: skip
def test_a_node_that_never_joins_stops_the_run_and_says_why(tmp_path, code, message):
    """Its federation would wait for it forever: the run ends (status 1) with one error
    naming the file, and the traceback shows the node's own lines, not HPRM's."""
    node = tmp_path / "camera.py"
    node.write_text(code)
    r = _hprm_ros(NODES / "listener.py", node, "--timeout", "1 s", timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert f"node file {node} {message}" in out and "camera exited with code 1" in out
    assert ("run it with hprm run" in out) == ("@main" in code), out
    if "raise" in code:
        assert f'File "{node}", line 4, in setup' in out and "no camera found" in out
        assert "porting.py" not in out and "runpy" not in out
    g = subprocess.run([*HPRM_ROS, "graph", str(node)], capture_output=True, text=True,
                       timeout=60)  # fmt: skip
    assert g.returncode == 1 and message in g.stderr


def test_remappings_reach_each_node_and_change_what_connects():
    def graph(*remaps):
        r = subprocess.run(
            [*HPRM_ROS, "graph", str(NODES / "talker.py"), str(NODES / "listener.py"),
             *(a for rule in remaps for a in ("--remap", rule))],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        return r.stdout.splitlines()[1:]

    assert graph() == ["  talker -> listener  /chatter [std_msgs/msg/String]"]
    assert graph("talker:chatter:=words") == [
        "  listener <- /chatter [std_msgs/msg/String] (subscribed, no publisher inside)",
        "  talker -> /words [std_msgs/msg/String] (published, no subscriber inside)",
    ]
    assert graph("talker:__ns:=/robot", "listener:chatter:=/robot/chatter") == [
        "  talker -> listener  /robot/chatter [std_msgs/msg/String]"
    ]
    remaps = ["--remap", "talker:chatter:=words", "--remap", "listener:chatter:=words"]
    r = _hprm_ros(NODES / "talker.py", NODES / "listener.py", "--timeout", "20 ms", *remaps)
    assert r.returncode == 0 and _heard(r.stdout) == ["1a", "1b", "2a", "2b"], r.stdout
    r = _hprm_ros(NODES / "talker.py", "--remap", "nobody:a:=b", timeout=60)
    assert r.returncode == 2 and "--remap names no node nobody" in r.stderr


def test_a_node_gets_its_own_arguments_as_ros2_run_passes_them(tmp_path):
    """``--arguments NODE="..."``: what ``ros2 run pkg exe ARGS`` gives the executable
    (ros2/demos' QoS demos take their settings so), before its --ros-args; the graph
    sees them too, since they may choose the topics."""
    node = tmp_path / "chooser.py"
    node.write_text(
        textwrap.dedent("""
        import argparse
        import sys
        import rclpy
        from rclpy.utilities import remove_ros_args
        from std_msgs.msg import String

        p = argparse.ArgumentParser()
        p.add_argument("topic")
        p.add_argument("--greeting", default="hi")
        args = p.parse_args(remove_ros_args(sys.argv)[1:])
        rclpy.init(args=sys.argv)
        node = rclpy.create_node("chooser")
        print("ARGS", args.topic, repr(args.greeting), node.declare_parameter("n", 0).value)
        node.create_publisher(String, args.topic, 10)
        rclpy.spin(node)
    """)
    )
    given = ["--arguments", "chooser=words --greeting 'good day'", "--param", "chooser:n:=3"]
    r = _hprm_ros(node, *given, "--timeout", "10 ms", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[chooser] ARGS words 'good day' 3" in r.stdout
    g = subprocess.run([*HPRM_ROS, "graph", str(node), *given], capture_output=True,
                       text=True, timeout=60)  # fmt: skip
    assert g.returncode == 0, g.stderr
    assert "chooser -> /words [std_msgs/msg/String]" in g.stdout
    r = _hprm_ros(node, "--arguments", "nobody=x", timeout=60)
    assert r.returncode == 2 and "--arguments names no node nobody" in r.stderr
    r = _hprm_ros(node, "--arguments", "chooser='unclosed", timeout=60)
    assert r.returncode == 2 and "--arguments chooser: No closing quotation" in r.stderr


def test_nodes_use_custom_message_packages_and_hprm_msgs_from_source(tmp_path):
    """A package of .msg files on HPRM_MSG_PATH (no ROS build) and hprm_msgs
    from this checkout: `from my_msgs.msg import Detection` in ported nodes."""
    pkg = tmp_path / "my_msgs" / "msg"
    pkg.mkdir(parents=True)
    (pkg / "Detection.msg").write_text("std_msgs/Header header\nfloat64 score\nstring label\n")
    (tmp_path / "finder.py").write_text(
        textwrap.dedent("""
        import rclpy
        from rclpy.node import Node
        from my_msgs.msg import Detection
        from hprm_msgs.msg import Tag

        class Finder(Node):
            def __init__(self):
                super().__init__("finder")
                self.pub = self.create_publisher(Detection, "detections", 10)
                self.create_timer(0.01, self.tick)
                self.n = 0

            def tick(self):
                self.n += 1
                self.pub.publish(Detection(score=self.n / 4, label=f"cup{self.n}"))

        rclpy.init()
        print("TAG FIELDS", list(Tag.get_fields_and_field_types()), flush=True)
        rclpy.spin(Finder())
    """)
    )
    (tmp_path / "reader.py").write_text(
        textwrap.dedent("""
        import rclpy
        from rclpy.node import Node
        from my_msgs.msg import Detection

        class Reader(Node):
            def __init__(self):
                super().__init__("reader")
                self.create_subscription(Detection, "detections", self.got, 10)

            def got(self, d):
                print("GOT", d.label, d.score, type(d).__module__, flush=True)

        rclpy.init()
        rclpy.spin(Reader())
    """)
    )
    env = dict(os.environ, HPRM_MSG_PATH=str(tmp_path), PYTHONUNBUFFERED="1")
    r = subprocess.run(
        [*HPRM_ROS, "run", str(tmp_path / "finder.py"), str(tmp_path / "reader.py"),
         "--timeout", "30 ms"], capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "finder.pub0 -> reader.sub0 (topic /detections)" in r.stdout
    assert re.findall(r"^\[reader\] GOT (.*)$", r.stdout, re.M) == [
        "cup1 0.25 my_msgs.msg", "cup2 0.5 my_msgs.msg", "cup3 0.75 my_msgs.msg"]  # fmt: skip
    assert "TAG FIELDS ['time', 'microstep']" in r.stdout


def test_a_publisher_lends_shared_memory_that_crosses_without_a_copy(tmp_path):
    """``borrow_loaned_array`` (HPRM's; rclpy has no loans): inside a running federate the
    array lives in the federate's shared-memory arena (a memfd, as /proc/self/maps shows),
    and what the node wrote into it is what the subscriber reads, frame after frame;
    before spin there is no store yet, and it is a plain array."""
    (tmp_path / "camera.py").write_text(
        textwrap.dedent("""
        import rclpy
        from rclpy.node import Node
        from sensor_msgs.msg import Image

        def mapping(a):
            addr = a.__array_interface__["data"][0]
            for line in open("/proc/self/maps"):
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                if lo <= addr < hi:
                    return " ".join(line.split()[5:]) or "anonymous"

        class Camera(Node):
            def __init__(self):
                super().__init__("camera")
                self.pub = self.create_publisher(Image, "image", 1)
                early = self.pub.borrow_loaned_array((4, 4))
                print("BEFORE SPIN", early.dtype, early.shape, mapping(early), flush=True)
                self.create_timer(0.01, self.tick)
                self.n = 0

            def tick(self):
                self.n += 1
                pixels = self.pub.borrow_loaned_array((480, 640, 3))
                pixels[:] = self.n
                print("LOAN", pixels.dtype, pixels.shape, mapping(pixels), flush=True)
                self.pub.publish(Image(height=480, width=640, encoding="rgb8", step=1920,
                                       data=pixels.reshape(-1)))

        rclpy.init()
        rclpy.spin(Camera())
    """)
    )
    (tmp_path / "viewer.py").write_text(
        textwrap.dedent("""
        import numpy as np
        import rclpy
        from rclpy.node import Node
        from sensor_msgs.msg import Image

        class Viewer(Node):
            def __init__(self):
                super().__init__("viewer")
                self.create_subscription(Image, "image", self.got, 1)

            def got(self, msg):
                values = np.unique(np.asarray(msg.data)).tolist()
                print("GOT", msg.height, msg.width, len(msg.data), values, flush=True)

        rclpy.init()
        rclpy.spin(Viewer())
    """)
    )
    r = _hprm_ros(tmp_path / "camera.py", tmp_path / "viewer.py", "--timeout", "30 ms")
    assert r.returncode == 0, r.stdout + r.stderr
    before = re.findall(r"^\[camera\] BEFORE SPIN (.*)$", r.stdout, re.M)
    assert len(before) == 1 and before[0].startswith("uint8 (4, 4) "), r.stdout
    assert "hprm-arena" not in before[0], r.stdout
    loans = re.findall(r"^\[camera\] LOAN uint8 \(480, 640, 3\) (.*)$", r.stdout, re.M)
    assert len(loans) == 3 and all("memfd:hprm-arena" in m for m in loans), r.stdout
    got = re.findall(r"^\[viewer\] GOT (.*)$", r.stdout, re.M)
    assert got == [f"480 640 921600 [{n}]" for n in (1, 2, 3)], r.stdout


def test_a_module_of_rclpy_not_offered_fails_to_import_saying_why():
    """Even with a real Humble on the path (then rclpy's own module would load
    beside HPRM's and fail obscurely): an ImportError that names the module and
    why, so a node's ``try: ... except ImportError`` fallback still works."""
    code = textwrap.dedent("""
        from hprm_bridge import porting
        porting.install_imports()
        import rclpy.utilities, rclpy.serialization, rclpy.constants, rclpy.action
        from rclpy.lifecycle import LifecycleNode
        from rclpy.wait_for_message import wait_for_message
        from rclpy.qos_event import SubscriptionEventCallbacks
        print(rclpy.utilities.__name__, rclpy.constants.S_TO_NS, LifecycleNode.__module__)
        for name in ("rclpy.impl", "rclpy.waitable"):
            try:
                __import__(name)
            except ImportError as e:
                print(type(e).__name__, e.name, "|", e)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    first, *errors = r.stdout.splitlines()
    assert first == "hprm_bridge.rclpy.utilities 1000000000 hprm_bridge.rclpy.lifecycle.node"
    assert [e.split(" |")[0] for e in errors] == [
        "ModuleNotFoundError rclpy.impl", "ModuleNotFoundError rclpy.waitable",
    ]  # fmt: skip
    assert "HPRM offers rclpy's node API" in errors[0]
    assert "HPRM offers rclpy's node API" in errors[1] and "hprm-ros run --bridge" in errors[1]
