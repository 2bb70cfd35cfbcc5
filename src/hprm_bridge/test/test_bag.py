"""Deterministic replay (hprm-ros bag): a bag written with the rosbags
writer (seeded camera images at 10 Hz, IMU at 50 Hz, equal timestamps where
they meet) replayed through the example pipeline's ported nodes, recorded,
and compared with ``hprm-ros bag diff``. Real processes and bags on disk."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from hprm_bridge.bench.replay import T0, write_bag
from hprm_bridge.examples import ros_pipeline
from hprm_bridge.wire.typesys import default_registry

PIPELINE = os.path.dirname(ros_pipeline.__file__)
NODES = [os.path.join(PIPELINE, f"{n}.py") for n in ("detector", "planner", "controller")]
HPRM_ROS = [sys.executable, "-m", "hprm_bridge.ros_cli"]


def make_bag(path, *, seconds=2.0, seed=5, jitter=True, storage="mcap"):
    """Camera frames stamped every 100 ms, received up to 30 ms later (log
    time); IMU every 20 ms (log time = stamp: equal to a frame's stamp time
    at every multiple of 100 ms). The benchmark's bag (hprm bench replay)."""
    write_bag(path, seconds=seconds, seed=seed, jitter=jitter, storage=storage)


@pytest.fixture(scope="module")
def bag(tmp_path_factory):
    path = tmp_path_factory.mktemp("bags") / "drive"
    make_bag(path)
    return path


def play(bag, out, *extra):
    r = subprocess.run(
        [*HPRM_ROS, "bag", "play", str(bag), *NODES, "--param", "planner:image_width:=64",
         "--record", str(out), *extra],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "bag: played 120 messages" in r.stdout, r.stdout[-3000:]
    assert f"bag: recorded 20 messages to {out}" in r.stdout, r.stdout[-3000:]
    return r


def diff(a, b):
    return subprocess.run([*HPRM_ROS, "bag", "diff", str(a), str(b)], capture_output=True,
                          text=True, timeout=120)  # fmt: skip


@pytest.fixture
def two_cpu_hogs():
    hogs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(2)]
    yield
    for h in hogs:
        h.kill()
        h.wait()


def test_ten_replays_fast_and_paced_both_coordinations_record_identical_bags(bag, tmp_path):
    reference = tmp_path / "ref"
    play(bag, reference, "--fast")
    runs = [["--fast"]] * 3 + [[]] * 2 + [["--coordination", "decentralized",
                                           "--stp-offset", "300 ms"]] * 4  # fmt: skip
    for i, extra in enumerate(runs):
        out = tmp_path / f"run{i}"
        play(bag, out, *extra)
        r = diff(reference, out)
        assert (r.returncode, r.stdout.strip()) == (0, "identical"), (extra, r.stdout, r.stderr)


def test_replays_with_two_cpu_hogs_beside_them_record_the_same(bag, tmp_path, two_cpu_hogs):
    play(bag, tmp_path / "ref", "--fast")
    for i, extra in enumerate([["--fast"], ["--coordination", "decentralized",
                                            "--stp-offset", "500 ms"]]):  # fmt: skip
        play(bag, tmp_path / f"loaded{i}", *extra)
        r = diff(tmp_path / "ref", tmp_path / f"loaded{i}")
        assert r.stdout.strip() == "identical", (extra, r.stdout)


def test_header_stamps_give_the_recording_its_timestamps(bag, tmp_path):
    """Receive times (jittered up to 30 ms) vs the camera's own stamps: the
    commands are equal, their tags are not; with --stamp they fall on the
    100 ms grid of the camera."""
    play(bag, tmp_path / "log_time", "--fast")
    play(bag, tmp_path / "stamped", "--fast", "--stamp", "/camera/image_raw")
    r = diff(tmp_path / "log_time", tmp_path / "stamped")
    assert r.returncode == 1 and "timestamp" in r.stdout, r.stdout
    from rosbags.highlevel import AnyReader

    with AnyReader([tmp_path / "stamped"]) as reader:
        times = [t for c, t, _ in reader.messages() if c.topic == "/cmd_vel"]
    assert times == [T0 + k * 100_000_000 for k in range(20)]


def test_diff_names_the_first_difference_and_bad_bags_are_refused(bag, tmp_path):
    other = tmp_path / "other"
    make_bag(other, seed=6)  # other frames: other commands
    stamped = ["--fast", "--stamp", "/camera/image_raw"]  # the same tags, other content
    play(bag, tmp_path / "a", *stamped)
    play(other, tmp_path / "b", *stamped)
    r = diff(tmp_path / "a", tmp_path / "b")
    assert r.returncode == 1
    assert re.match(r"message \d+ on /cmd_vel at \d+: field (linear|angular)\.[xyz] \(", r.stdout)
    r = diff(tmp_path / "a", tmp_path / "missing")
    assert r.returncode == 2 and "no such bag" in r.stderr
    broken = tmp_path / "broken"
    shutil.copytree(bag, broken)
    mcap = next(broken.glob("*.mcap"))
    mcap.write_bytes(mcap.read_bytes()[:200])  # truncated
    r = subprocess.run([*HPRM_ROS, "bag", "play", str(broken), *NODES], capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert r.returncode == 2 and str(broken) in r.stderr, r.stderr
    r = subprocess.run([*HPRM_ROS, "bag", "play", str(bag), *NODES, "--stamp", "/nope"],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 2 and "no topic /nope in the bag" in r.stderr, r.stderr
    r = subprocess.run([*HPRM_ROS, "bag", "play", str(bag), *NODES, "--fast",
                        "--coordination", "decentralized"], capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert r.returncode == 2 and "--fast needs centralized" in r.stderr
    # the player federate itself, as a launcher starts it: refused before it joins
    r = subprocess.run([sys.executable, "-m", "hprm_bridge.bag.player", str(broken), "rosbag",
                        "--rti", "unix:/nowhere", "--federation", "f"],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 2 and str(broken) in r.stderr, r.stderr


# -- recording a live federation, the Python API, the launch action, custom types -------

CAMERA = os.path.join(PIPELINE, "camera.py")


def _record_live(out):
    r = subprocess.run(
        [*HPRM_ROS, "bag", "record", str(out), CAMERA, "--param", "camera:fps:=10.0",
         "--param", "camera:width:=64", "--param", "camera:height:=48", "--timeout", "1 s"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


def _timestamps(path):
    from rosbags.rosbag2 import Reader

    with Reader(path) as reader:
        return [(c.topic, t) for c, t, _ in reader.messages()]


def test_record_writes_a_live_federation_on_its_logical_time_grid(tmp_path):
    _record_live(tmp_path / "a")
    _record_live(tmp_path / "b")
    stamps = [t for topic, t in _timestamps(tmp_path / "a") if topic == "/camera/image_raw"]
    # the camera's 10 Hz timer from 100 ms to the 1 s timeout: logical times, exactly
    assert stamps == [k * 100_000_000 for k in range(1, 11)]
    # a second live run: the same timestamps (its header stamps differ: the start time does)
    assert _timestamps(tmp_path / "b") == _timestamps(tmp_path / "a")
    r = subprocess.run([*HPRM_ROS, "bag", "record", str(tmp_path / "a"), CAMERA],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 2 and "already exists" in r.stderr


def test_the_python_api_is_the_command_line(bag, tmp_path):
    from hprm_bridge import bag as hbag

    play(bag, tmp_path / "cli", "--fast")
    code = hbag.play(bag, NODES, record=tmp_path / "api", fast=True,
                     params=["planner:image_width:=64"])  # fmt: skip
    assert code == 0
    assert hbag.diff(tmp_path / "cli", tmp_path / "api") is None
    assert hbag.record(tmp_path / "live", [CAMERA], timeout="300 ms",
                       params=["camera:width:=64", "camera:height:=48"]) == 0  # fmt: skip
    assert len(_timestamps(tmp_path / "live")) >= 2
    with pytest.raises(ValueError, match="hprm-ros bag play"):
        hbag.play(tmp_path / "missing", NODES)


@pytest.mark.ros2
def test_the_launch_action_replays_as_the_command_line(bag, tmp_path):
    if shutil.which("ros2") is None:
        pytest.skip("needs a sourced ROS 2 Humble (ros2 on PATH)")
    launch_file = tmp_path / "replay.launch.py"
    nodes = ", ".join(
        f"PortedNode(executable={n!r}, name={os.path.basename(n)[:-3]!r}"
        + (", parameters=[{'image_width': 64}])" if n.endswith("planner.py") else ")")
        for n in NODES
    )
    launch_file.write_text(
        "from launch import LaunchDescription\n"
        "from hprm_bridge.launch import Federation, PortedNode\n\n\n"
        "def generate_launch_description():\n"
        f"    return LaunchDescription([Federation([{nodes}], bag_play={str(bag)!r}, "
        f"bag_record={str(tmp_path / 'launched')!r})])\n"
    )
    play(bag, tmp_path / "cli")
    r = subprocess.run([sys.executable, shutil.which("ros2"), "launch", str(launch_file)],
                       capture_output=True, text=True, timeout=180)  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert diff(tmp_path / "cli", tmp_path / "launched").stdout.strip() == "identical"


def test_a_bag_of_a_custom_message_type_plays_with_its_msg_on_the_path(tmp_path):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import get_types_from_msg

    msg_root = tmp_path / "msgs"
    (msg_root / "demo_msgs" / "msg").mkdir(parents=True)
    definition = "std_msgs/Header header\nfloat64 value\nstring label\n"
    (msg_root / "demo_msgs" / "msg" / "Reading.msg").write_text(definition)
    reg = default_registry()
    reg.store.register(get_types_from_msg(definition, "demo_msgs/msg/Reading"))
    with Writer(tmp_path / "custom", version=8, storage_plugin=StoragePlugin.MCAP) as w:
        conn = w.add_connection("/reading", "demo_msgs/msg/Reading", typestore=reg.store)
        for k in range(5):
            msg = reg.new("demo_msgs/msg/Reading", value=float(k), label=f"r{k}")
            w.write(conn, T0 + k * 100_000_000, bytes(reg.encode(msg, "demo_msgs/msg/Reading")))
    node = tmp_path / "doubler.py"
    node.write_text(
        "import rclpy\nfrom rclpy.node import Node\nfrom std_msgs.msg import Float64\n"
        "from demo_msgs.msg import Reading\n\n\n"
        "class Doubler(Node):\n"
        "    def __init__(self):\n"
        "        super().__init__('doubler')\n"
        "        self.pub = self.create_publisher(Float64, 'doubled', 10)\n"
        "        self.create_subscription(Reading, 'reading', self.on_reading, 10)\n\n"
        "    def on_reading(self, msg):\n"
        "        self.pub.publish(Float64(data=2 * msg.value))\n\n\n"
        "rclpy.init()\nrclpy.spin(Doubler())\n"
    )
    env = dict(os.environ, HPRM_MSG_PATH=str(msg_root))
    r = subprocess.run([*HPRM_ROS, "bag", "play", str(tmp_path / "custom"), str(node),
                        "--record", str(tmp_path / "out"), "--fast"],
                       capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    from rosbags.rosbag2 import Reader

    with Reader(tmp_path / "out") as reader:
        values = [reg.decode(raw, c.msgtype).data for c, _, raw in reader.messages()
                  if c.topic == "/doubled"]  # fmt: skip
    assert values == [0.0, 2.0, 4.0, 6.0, 8.0]


def test_bench_replay_contrasts_hprm_with_plain_ros2_replay(tmp_path):
    """hprm bench replay --quick: HPRM's fast replays give the same commands every run; the
    plain ROS 2 rows (where rclpy imports) are reported, not asserted: rates at which they
    lose or reorder commands are the contrast the benchmark shows."""
    import json

    out = tmp_path / "replay.json"
    cmd = [sys.executable, "-m", "hprm_core.cli", "bench", "replay", "--quick", "--json", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rows = {row["variant"]: row for row in json.loads(out.read_text())["results"]}
    assert rows["hprm fast"]["commands_min_max"] == "20-20"  # every frame of the 2 s bag
    assert rows["hprm fast"]["runs_differing_from_first"] == 0
    assert rows["rosbags read"]["messages"] == 120
    for rate in ("1", "10", "100"):
        row = rows[f"rclpy rate {rate}"]
        assert "skipped" in row or row["runs"] == 3, row


def test_sqlite3_bags_play_and_record_as_mcap_ones(bag, tmp_path):
    sqlite_bag = tmp_path / "drive_sqlite"
    make_bag(sqlite_bag, storage="sqlite3")  # the same messages as `bag`, in sqlite3
    assert list(sqlite_bag.glob("*.db3"))
    play(bag, tmp_path / "from_mcap", "--fast")
    play(sqlite_bag, tmp_path / "from_sqlite", "--fast", "--storage", "sqlite3")
    assert list((tmp_path / "from_sqlite").glob("*.db3"))
    assert diff(tmp_path / "from_mcap", tmp_path / "from_sqlite").stdout.strip() == "identical"
