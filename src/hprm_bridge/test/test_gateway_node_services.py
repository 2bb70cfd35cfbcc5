"""What ``--node-services`` gives ported nodes through the gateway
(``hprm-ros run --bridge --node-services``): their log lines on ``/rosout``,
their parameters to ``ros2 param`` and on ``/parameter_events``, their federates
on ``/hprm/federate_status``, and ROS 2's tools seeing them by their node names.
Real processes and DDS traffic: plain nodes on the ROS-free wire client
everywhere, on real rclpy and Humble's ``ros2`` where a Humble is sourced."""

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

NODES = Path(__file__).parent / "nodes"
HPRM_ROS = [sys.executable, "-m", "hprm_bridge.ros_cli", "run"]


def test_node_services_give_the_gateway_logs_and_parameter_calls_and_delay_no_node_link(
    tmp_path, bridge_env
):
    """--node-services: pinger and ponger, which talk only to each other, give
    the gateway their /rosout (denied here: it stays off ROS 2) and their
    parameter calls (never denied: they are ros2 param's way in, not topics).
    A node never waits for its calls (Input(wait=False)), so they close no
    loop: only ping <-> pong, a loop of its own, is delayed a microstep."""
    config = tmp_path / "bridge.yaml"
    config.write_text("deny: ['/rosout', '/parameter_events', '/hprm/.*', '/_hprm/.*']\n")
    r = subprocess.run(
        [*HPRM_ROS, str(NODES / "pinger.py"), str(NODES / "ponger.py"), "--bridge",
         "--node-services", "--bridge-config", str(config), "--timeout", "20 ms"],
        capture_output=True, text=True, timeout=120, env=bridge_env(),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    taken = re.search(r"federate ros2_gateway takes the open topics: (.*)", r.stdout).group(1)
    assert taken.split(", ") == [
        "/_hprm/parameters/pinger/request (out)", "/_hprm/parameters/ponger/request (out)",
        "/_hprm/parameters/pinger/reply (in)", "/_hprm/parameters/ponger/reply (in)",
        "/hprm/federate_status (in)", "/parameter_events (in)", "/rosout (in)"]  # fmt: skip
    assert "gateway: /rosout is open but not bridged (the bridge config)" in r.stdout
    delayed = re.findall(r"INFO:   (\S+) -> (\S+) \(topic (\S+), 1 microstep later\)", r.stdout)
    assert sorted(topic for _, _, topic in delayed) == ["/ping", "/pong"], r.stdout
    assert r.stdout.count("[pinger] PONG") == 1
    r = subprocess.run([*HPRM_ROS, str(NODES / "pinger.py"), "--node-services"],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode != 0 and "--node-services reach ROS 2 through the gateway" in r.stderr


# Plain ROS 2 listeners (wire client) printing one line per message for the
# tests to parse; each makes `node`, then spins it for argv[1] seconds.
_SPIN_FOR_ARGV = """
end = time.monotonic() + float(sys.argv[1])
try:
    while time.monotonic() < end:
        node.spin_once(0.05)
except KeyboardInterrupt:
    pass
finally:
    node.close()
"""

ROSOUT_LISTENER = """
import sys, time
from hprm_bridge.wire import Durability, Node, QoSProfile
node = Node("rosout_listener")
def show(m):
    print("LOG", m.name, m.level, m.stamp.sec * 10**9 + m.stamp.nanosec, m.function,
          m.msg, sep="|", flush=True)
node.create_subscription("rcl_interfaces/msg/Log", "/rosout", show,
                         QoSProfile(depth=1000, durability=Durability.TRANSIENT_LOCAL))
"""

PARAMETER_EVENTS_LISTENER = """
import sys, time
from hprm_bridge.wire import Node
node = Node("parameter_events_listener")
def show(m):
    print("EVENT", m.node, *(",".join(f"{p.name}={p.value.type}:{p.value.integer_value}"
          for p in ps) for ps in (m.new_parameters, m.changed_parameters,
          m.deleted_parameters)), sep="|", flush=True)
node.create_subscription("rcl_interfaces/msg/ParameterEvent", "/parameter_events", show, 1000)
"""


def _listener(script, seconds, env):
    return subprocess.Popen(
        [sys.executable, "-c", script + _SPIN_FOR_ARGV, str(seconds)], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def _events(out):
    """(node, new, changed, deleted) per /parameter_events message, each a list of
    name=type:integer_value."""
    return [tuple(f.split(",") if f else [] for f in line.split("|")[1:]) for line in
            out.splitlines() if line.startswith("EVENT|")]  # fmt: skip


def test_a_ported_nodes_parameter_declarations_reach_parameter_events(
    bridge_env, stop_node, bridged_run
):
    """As under rclpy, every declaration of a ported node is announced on
    ``/parameter_events`` (what ``ros2 param`` caches and rqt_reconfigure
    watch), naming the node."""
    env = bridge_env()
    listener = _listener(PARAMETER_EVENTS_LISTENER, 200, env)
    try:
        time.sleep(1)
        r = bridged_run("tuner.py", env, "--node-services", timeout="1 s")
    finally:
        out = stop_node(listener)
    assert r.returncode == 0, r.stdout + r.stderr
    events = _events(out)
    assert events and {e[0][0] for e in events} == {"/tuner"}, out
    declared = [p for e in events for p in e[1]]
    assert declared == ["use_sim_time=1:0", "gain=2:3", "label=4:0", "pid.kp=3:0",
                        "fixed=2:1"], out  # fmt: skip
    assert not any(e[2] or e[3] for e in events)


STATUS_LISTENER = """
import sys, time
from hprm_bridge.wire import Node
node = Node("status_listener")
node.create_subscription("hprm_msgs/msg/FederateStatus", "/hprm/federate_status",
    lambda m: print("STATUS", m.federation, m.federate, m.state, m.completed.time,
                    sep="|", flush=True), 100)
"""


def test_ported_nodes_report_their_federates_on_federate_status(bridge_env, stop_node, bridged_run):
    """``ros2 topic echo /hprm/federate_status``: each ported node reports RUNNING
    at its first tag and then once per second of logical time, with the latest
    tag it completed, and FINISHED at its shutdown tag."""
    env = bridge_env()
    listener = _listener(STATUS_LISTENER, 200, env)
    try:
        time.sleep(1)
        r = bridged_run("tuner.py", env, "--node-services", timeout="2500 ms")
    finally:
        out = stop_node(listener)
    assert r.returncode == 0, r.stdout + r.stderr
    reports = [line.split("|")[1:] for line in out.splitlines() if line.startswith("STATUS|")]
    assert [(fed, state) for _, fed, state, _ in reports] == [
        ("tuner", "1"), ("tuner", "1"), ("tuner", "1"), ("tuner", "2")], out  # fmt: skip
    assert len({fn for fn, *_ in reports}) == 1 and reports[0][0]  # the federation's id
    completed = [int(t) for *_, t in reports]
    assert completed[0] == -(2**63)  # NEVER: nothing completed at the first tag
    # tuner ticks every 100 ms: at 1 s and 2 s the tag before (0.9 s, 1.9 s) is
    # complete; at the shutdown tag (2.5 s), 2.4 s
    start = completed[1] - 900_000_000
    assert [t - start for t in completed[1:]] == [900_000_000, 1_900_000_000, 2_400_000_000]


def test_a_ported_nodes_log_lines_reach_rosout_stamped_with_their_tags(
    bridge_env, stop_node, bridged_run
):
    """What rqt_console and ``ros2 topic echo /rosout`` read: each line the
    ported node prints, with its level, logger name and calling function, the
    lines logged in callbacks stamped with the callback's logical time."""
    env = bridge_env()
    listener = _listener(ROSOUT_LISTENER, 20, env)
    try:
        r = bridged_run("log_probe.py", env, "--node-services", timeout="10 s")
    finally:
        out = stop_node(listener)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [line.split("|")[1:] for line in out.splitlines() if line.startswith("LOG|")]
    assert [(name, level, msg) for name, level, _, _, msg in lines[:8]] == [
        ("log_probe", "20", "hello"), ("log_probe", "30", "careful"),
        ("log_probe", "20", "once 0"), ("log_probe", "20", "skip 1"),
        ("log_probe", "20", "skip 2"), ("log_probe.sub", "40", "from a child"),
        ("log_probe", "10", "shown at debug"), ("log_probe", "20", "tick 1"),
    ], out  # fmt: skip
    assert {fn for _, _, _, fn, _ in lines[:7]} == {"__init__"}
    ticks = [(int(stamp), msg) for _, _, stamp, fn, msg in lines if fn == "tick"]
    # every 10 ms, throttled to one line per 25 ms of logical time: ticks 1, 4, 7, 10
    assert [msg for _, msg in ticks] == ["tick 1", "tick 4", "tick 7", "tick 10"], out
    assert [t - ticks[0][0] for t, _ in ticks] == [0, 30_000_000, 60_000_000, 90_000_000]


def _in_background(env, *args):
    """``hprm-ros run ARGS`` running on, its own process group (for a Ctrl-C)."""
    out = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
    return subprocess.Popen([*HPRM_ROS, *args], env=env, start_new_session=True, **out)


def _ros2(env, *args, timeout=60):
    return subprocess.run(["ros2", *args], capture_output=True, text=True, timeout=timeout, env=env)


def _listed_nodes(env, want):
    """What ``ros2 node list`` shows once it shows ``want`` (or after a minute)."""
    deadline = time.monotonic() + 60
    nodes = set()
    while time.monotonic() < deadline and not want <= nodes:
        nodes = set(_ros2(env, "node", "list", "--no-daemon").stdout.split())
        time.sleep(0.5)
    return nodes


@pytest.mark.ros2
def test_ros2_tools_see_the_ported_nodes_behind_the_gateway(ctrl_c, bridge_env, require_ros2_cli):
    """While a ported talker and greeter run behind the gateway, ros2 node list
    shows them by their node names and namespaces (not their federates' names),
    ros2 node info lists what each publishes, ros2 topic echo receives it."""
    require_ros2_cli()
    env = bridge_env("rclpy")
    fed = _in_background(env, str(NODES / "talker.py"), str(NODES / "listener.py"),
                         "greeter2=" + str(NODES / "greeter.py"), "--bridge", "--remap",
                         "greeter2:chatter:=greetings", "--remap", "greeter2:__ns:=/robot",
                         "--timeout", "60 s")  # fmt: skip
    want = {"/talker", "/listener", "/robot/greeter", "/hprm_gateway"}
    try:
        nodes = _listed_nodes(env, want)
        assert want <= nodes and "/greeter2" not in nodes, nodes
        info = _ros2(env, "node", "info", "/robot/greeter", "--no-daemon").stdout
        assert "/robot/greetings: std_msgs/msg/String" in info, info
        echo = _ros2(
            env, "topic", "echo", "--once", "--no-daemon", "/robot/greetings", "std_msgs/msg/String"
        )
        assert re.search(r"data: hello_\d+", echo.stdout), echo.stdout + echo.stderr
    finally:
        out = ctrl_c(fed)
    assert "federate ros2_gateway takes the open topics: /robot/greetings (in)" in out, out
    assert "gateway (rclpy):" in out


@pytest.mark.ros2
def test_ros2_tools_see_each_node_of_a_composed_federate(
    ctrl_c, tmp_path, bridge_env, require_ros2_cli
):
    """Three nodes spun by one executor are one federate (rclpy/composition.py): ros2
    node list shows each behind the gateway, and ros2 param reaches a node that is not
    the first. Without an adder in the process the echo's calls go out to ROS 2, where
    no one answers: the federation runs until stopped."""
    require_ros2_cli()
    env = bridge_env("rclpy")
    config = tmp_path / "bridge.yaml"
    config.write_text("deny: ['/hprm/.*']\n")  # hprm_msgs is not in the sourced Humble
    fed = _in_background(env, str(NODES / "composed.py"), "--bridge", "--node-services",
                         "--bridge-config", str(config), "--param", "composed:summer:=false",
                         "--timeout", "60 s")  # fmt: skip
    want = {"/ticker", "/echo", "/hprm_gateway"}
    try:
        nodes = _listed_nodes(env, want)
        assert want <= nodes and "/composed" not in nodes, nodes
        got = _ros2(env, "param", "get", "--no-daemon", "/echo", "use_sim_time")
        assert "Boolean value is: False" in got.stdout, got.stdout + got.stderr
        # each node with its own endpoints: the echo's client calls out to ROS 2 (/chatter
        # stays inside the federation: the process both publishes and subscribes it)
        echo = _ros2(env, "node", "info", "/echo", "--no-daemon").stdout
        ticker = _ros2(env, "node", "info", "/ticker", "--no-daemon").stdout
        assert "/add_two_ints: example_interfaces/srv/AddTwoInts" in echo, echo
        assert "/add_two_ints" not in ticker and "/chatter" not in echo + ticker, ticker
    finally:
        out = ctrl_c(fed)
    assert "[composed] ECHO tick 3" in out, out


@pytest.mark.ros2
@pytest.mark.parametrize(("coordination", "backend"), [
    ("centralized", "rclpy"), ("decentralized", "rclpy"), ("centralized", "wire")])  # fmt: skip
def test_ros2_param_lists_gets_and_sets_a_ported_nodes_parameters(
    ctrl_c, coordination, backend, tmp_path, bridge_env, stop_node, require_ros2_cli
):
    """Humble's own ``ros2 param`` on a ported node: each call goes through the
    gateway into the node's federate at a tag; a set passes the descriptor's
    range, read-only flag and the node's on-set callback, as under rclpy, and
    the node's callbacks see the new value from then on. On either backend: the
    federate status topic stays off ROS 2 (hprm_msgs is not in the sourced Humble,
    and rclpy can only carry the types it has)."""
    require_ros2_cli()
    env = bridge_env(backend)
    config = tmp_path / "bridge.yaml"
    config.write_text("deny: ['/hprm/.*']\n")
    listener = _listener(PARAMETER_EVENTS_LISTENER, 200, env)
    fed = _in_background(
        env,
        str(NODES / "tuner.py"),
        "--bridge",
        "--node-services",
        "--bridge-config",
        str(config),
        "--timeout",
        "120 s",
        *(
            ["--coordination", "decentralized", "--stp-offset", "50 ms"]
            if coordination == "decentralized"
            else []
        ),
    )

    def param(*args):  # what ros2 param prints (failures go to stderr)
        r = _ros2(env, "param", *args, "--no-daemon", timeout=60)
        return r.stdout + r.stderr

    try:
        deadline = time.monotonic() + 60
        while (
            time.monotonic() < deadline
            and "/tuner" not in _ros2(env, "node", "list", "--no-daemon").stdout.split()
        ):
            time.sleep(0.5)
        listed = _ros2(env, "param", "list", "/tuner", "--no-daemon").stdout  # stderr: DDS's
        assert listed.split() == ["fixed", "gain", "label", "pid.kp", "use_sim_time"], listed
        assert "Integer value is: 3" in param("get", "/tuner", "gain")
        assert "Set parameter successful" in param("set", "/tuner", "gain", "7")
        out = param("set", "/tuner", "gain", "70")
        assert "Parameter gain out of range. Min: 0, Max: 10, value: 70" in out, out
        out = param("set", "/tuner", "label", "forbidden")
        assert "label refused by the node" in out, out
        out = param("set", "/tuner", "fixed", "2")
        assert "Trying to set a read-only parameter: fixed." in out, out
        assert "Integer value is: 7" in param("get", "/tuner", "gain")
        out = param("describe", "/tuner", "gain")
        assert "Type: integer" in out and "Max value: 10" in out, out
    finally:
        out = ctrl_c(fed)
        events = _events(stop_node(listener))
    # /parameter_events: the one set that was made, none of the refused ones
    assert [e[2] for e in events if e[2]] == [["gain=2:7"]], events
    gains = re.findall(r"^\[tuner\] GAIN (\d+) LABEL (\w+)$", out, re.M)
    # from one tick on the new value, and no tick in between saw a half-made change
    assert gains and {g for g, _ in gains} == {"3", "7"}, out[-3000:]
    first7 = [g for g, _ in gains].index("7")
    assert all(g == "7" for g, _ in gains[first7:]) and {lab for _, lab in gains} == {"front"}
    assert f"gateway ({backend}):" in out
