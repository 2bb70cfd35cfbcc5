"""The gateway (hprm_bridge.gateway, ``hprm-ros run --bridge``): topics the
ported nodes leave open reach plain ROS 2 and back. Real processes and DDS
traffic: plain nodes on the ROS-free wire client everywhere, on real rclpy
where a Humble is sourced."""

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hprm_bridge.gateway import BridgedTopic, bridged_topics, nodes_behind
from hprm_core.assembly import open_ports
from hprm_core.structure import ConnectionSpec, FederationGraph

NODES = Path(__file__).parent / "nodes"
HPRM_ROS = [sys.executable, "-m", "hprm_bridge.ros_cli", "run"]


def _port(topic, direction, msg_type="std_msgs/msg/String"):
    return {"port": "p", "direction": direction, "topic": topic, "msg_type": msg_type}


def test_open_topics_become_the_gateways_ports():
    ports = {
        "cam": [_port("/image", "out", "sensor_msgs/msg/Image"), _port("/cfg", "in")],
        "det": [_port("/image", "in", None), _port("/boxes", "out"), _port("/x", "in", None)],
    }
    given = open_ports(ports)  # what the RTI gives the boundary federate
    assert [(p["port"], p["direction"], p["topic"]) for p in given] == [
        ("into0", "out", "/cfg"), ("outof0", "in", "/boxes")]  # fmt: skip
    # /image is connected inside; /x has no type anyone names: neither is bridged
    assert bridged_topics(given) == [
        BridgedTopic("/cfg", "std_msgs/msg/String", "in", "into0"),
        BridgedTopic("/boxes", "std_msgs/msg/String", "out", "outof0"),
    ]


def test_the_nodes_behind_the_gateway_go_by_their_ros_node_names():
    """A ported node's federate labels itself with its node's full name; the
    gateway announces that (ros2 node list), else the federate's name."""
    ports = {"cam": [_port("/image", "out")], "gw": []}
    graph = FederationGraph.from_descriptions(["cam", "view", "gw"], {**ports, "view": []},
                                              boundaries=["gw"])  # fmt: skip
    graph.connections.append(ConnectionSpec("cam.p", "gw.outof0", topic="/image"))
    graph.labels = {"cam": {"ros_node": "/robot/camera"}}
    assert nodes_behind(graph, "gw") == {
        "cam": {"node": "/robot/camera", "writes": ["/image"], "reads": []},
        "view": {"node": "/view", "writes": [], "reads": []},
    }


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"direction": "both"}, "direction must be 'in' or 'out'"),
        ({"topic": "chatter"}, "give the absolute name"),
        ({"msg_type": "String"}, "msg_type must be pkg/msg/Name"),
    ],
)
def test_a_bad_bridged_topic_is_refused_by_name(kw, message):
    args = {"topic": "/chatter", "msg_type": "std_msgs/msg/String", "direction": "in", **kw}
    with pytest.raises(ValueError, match=re.escape(message)):
        BridgedTopic(**args)


PLAIN = {
    "listen": """
        import sys, time
        from hprm_bridge.wire import Node
        with Node("plain_listener") as node:
            node.create_subscription("std_msgs/msg/String", "/chatter",
                                     lambda m: print("PLAIN", m.data, flush=True))
            end = time.monotonic() + float(sys.argv[1])
            while time.monotonic() < end:
                node.spin_once(0.05)
    """,
    "talk": """
        import sys, time
        from hprm_bridge.wire import Node
        with Node("plain_talker") as node:
            pub = node.create_publisher("std_msgs/msg/String", "/chatter")
            end, n = time.monotonic() + float(sys.argv[1]), 0
            while time.monotonic() < end:
                n += 1
                pub.publish(node.types.new("std_msgs/msg/String", data=f"plain{n}"))
                time.sleep(0.02)
    """,
}


def _plain(role, seconds, env, rclpy=False):
    if rclpy:
        argv = [sys.executable, str(NODES / ("listener.py" if role == "listen" else "greeter.py"))]
    else:
        argv = [sys.executable, "-c", textwrap.dedent(PLAIN[role]), str(seconds)]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)  # fmt: skip


def _federation(node, env, *extra, timeout="3 s"):
    return subprocess.run([*HPRM_ROS, str(NODES / node), "--bridge", "--timeout", timeout, *extra],
                          capture_output=True, text=True, timeout=180, env=env)  # fmt: skip


COORDINATIONS = {
    "centralized": [],
    "decentralized": ["--coordination", "decentralized", "--stp-offset", "50 ms"],
}


@pytest.mark.parametrize("coordination", COORDINATIONS)
def test_a_ported_talker_reaches_a_plain_ros2_listener(coordination, bridge_env, stop_node):
    env = bridge_env()
    listener = _plain("listen", 25, env)
    try:
        r = _federation("talker.py", env, *COORDINATIONS[coordination])
    finally:
        out = stop_node(listener)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"talker\.pub0 -> ros2_gateway\.outof\d+ \(topic /chatter\)", r.stdout)
    heard = re.findall(r"^PLAIN (\d+[ab])$", out, re.M)
    everything = [f"{n}{p}" for n in range(1, 301) for p in "ab"]  # 100 Hz for 3 s
    order = [everything.index(m) for m in heard]
    assert order == sorted(set(order)), heard  # in order, each once
    # While discovery settles the first samples may be dropped (volatile, keep
    # last 10, as between ROS 2 nodes); once flowing, none is: the last 400
    # arrive contiguously.
    assert heard[-400:] == everything[-400:], heard[-400:]
    assert heard[-1] == "300b", heard[-5:]


@pytest.mark.parametrize("coordination", COORDINATIONS)
def test_a_plain_ros2_talker_reaches_a_ported_listener(coordination, bridge_env, stop_node):
    env = bridge_env()
    talker = _plain("talk", 30, env)
    try:
        r = _federation("listener.py", env, *COORDINATIONS[coordination])
    finally:
        stop_node(talker)
    assert r.returncode == 0, r.stdout + r.stderr
    heard = [int(n) for n in re.findall(r"^\[listener\] HEARD plain(\d+)$", r.stdout, re.M)]
    assert len(heard) > 20 and heard == list(range(heard[0], heard[0] + len(heard))), heard
    assert re.search(r"gateway: (\d+) messages in", r.stdout)


def test_a_gateway_with_nothing_open_takes_no_ports_and_the_run_goes_on(bridge_env):
    r = subprocess.run(
        [*HPRM_ROS, str(NODES / "pinger.py"), str(NODES / "ponger.py"), "--bridge",
         "--timeout", "20 ms"], capture_output=True, text=True, timeout=120, env=bridge_env(),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "federate ros2_gateway takes the open topics: none" in r.stdout
    assert "gateway: no topic is left open to ROS 2" in r.stdout
    assert r.stdout.count("[pinger] PONG") == 1  # 10 ms tick; the 20 ms answer is past the stop


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


def test_a_ported_nodes_parameter_declarations_reach_parameter_events(bridge_env, stop_node):
    """As under rclpy, every declaration of a ported node is announced on
    ``/parameter_events`` (what ``ros2 param`` caches and rqt_reconfigure
    watch), naming the node."""
    env = bridge_env()
    listener = _listener(PARAMETER_EVENTS_LISTENER, 200, env)
    try:
        time.sleep(1)
        r = _federation("tuner.py", env, "--node-services", timeout="1 s")
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


def test_ported_nodes_report_their_federates_on_federate_status(bridge_env, stop_node):
    """``ros2 topic echo /hprm/federate_status``: each ported node reports RUNNING
    at its first tag and then once per second of logical time, with the latest
    tag it completed, and FINISHED at its shutdown tag."""
    env = bridge_env()
    listener = _listener(STATUS_LISTENER, 200, env)
    try:
        time.sleep(1)
        r = _federation("tuner.py", env, "--node-services", timeout="2500 ms")
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


def test_a_ported_nodes_log_lines_reach_rosout_stamped_with_their_tags(bridge_env, stop_node):
    """What rqt_console and ``ros2 topic echo /rosout`` read: each line the
    ported node prints, with its level, logger name and calling function, the
    lines logged in callbacks stamped with the callback's logical time."""
    env = bridge_env()
    listener = _listener(ROSOUT_LISTENER, 20, env)
    try:
        r = _federation("log_probe.py", env, "--node-services", timeout="10 s")
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


@pytest.mark.ros2
@pytest.mark.parametrize("backend", ["rclpy", "wire"])
def test_real_rclpy_nodes_talk_with_ported_ones_through_the_gateway(backend, bridge_env, stop_node):
    _needs_ros2_cli()
    env = bridge_env(backend)
    listener = _plain("listen", 0, env, rclpy=True)  # real rclpy listener.py
    try:
        r = _federation("talker.py", env)
    finally:
        out = stop_node(listener)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(re.findall(r"^HEARD \d+[ab]$", out, re.M)) > 100, out[-2000:]
    greeter = _plain("talk", 0, env, rclpy=True)  # real rclpy greeter.py, 100 Hz
    try:
        time.sleep(1)
        r = _federation("listener.py", env)
    finally:
        stop_node(greeter)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(re.findall(r"^\[listener\] HEARD hello_\d+$", r.stdout, re.M)) > 100, r.stdout
    assert f"gateway ({backend}):" in r.stdout


STAMPED = """
    import sys, time
    from hprm_bridge.wire import Node
    with Node("plain_stamper") as node:
        pub = node.create_publisher("geometry_msgs/msg/PointStamped", "/points")
        assert pub.wait_for_subscriptions(1, 60), "the gateway never subscribed"
        time.sleep(0.5)
        now = time.time_ns()
        for x, at in [(2.0, now + 1_500_000_000), (1.0, now + 1_000_000_000),
                      (1.5, now + 1_000_000_000), (99.0, now - 1_000_000_000)]:
            msg = node.types.new("geometry_msgs/msg/PointStamped")
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(at, 1_000_000_000)
            msg.point.x = x
            pub.publish(msg)
        time.sleep(3)
"""


@pytest.mark.parametrize("lateness", ["drop", "clamp", "late_points:negate"])
def test_header_stamp_policy_orders_by_stamp_and_applies_the_lateness_rule(
    lateness, bridge_env, stop_node
):
    """Published in the order 2.0, 1.0, 1.5 (same stamp as 1.0), 99.0 (stamp
    already past): the ported node sees them in stamp order, ties in arrival
    order, each exactly at its stamp by its clock; the late one is counted and
    dropped, or delivered at its arrival (before the others: never after what
    was already processed), or handed to a handler (nodes/late_points.py, which
    negates it) and delivered at its arrival."""
    path = os.pathsep.join([str(NODES), os.environ.get("PYTHONPATH", "")])
    env = dict(bridge_env(), PYTHONPATH=path)
    piped = dict(env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stamper = subprocess.Popen([sys.executable, "-c", textwrap.dedent(STAMPED)], **piped)
    proc = subprocess.Popen(
        [*HPRM_ROS, str(NODES / "stamp_listener.py"), "--bridge", "--timeout", "6 s",
         "--tag-policy", "/points=header_stamp", "--lateness", lateness], **piped,
    )  # fmt: skip
    out = proc.communicate(timeout=180)[0]
    stamper_out = stop_node(stamper)
    assert proc.returncode == 0, out + stamper_out
    points = re.findall(r"^\[stamp_listener\] POINT (\S+) past_stamp=(-?\d+)$", out, re.M)
    on_time = [("1.0", "0"), ("1.5", "0"), ("2.0", "0")]
    if lateness == "drop":
        assert points == on_time, out
        assert "gateway: 1 late message(s) on /points" in out
    else:
        assert points[1:] == on_time, out
        assert points[0][0] == ("99.0" if lateness == "clamp" else "-99.0"), out
        assert int(points[0][1]) > 1_000_000_000  # delivered at its arrival, stamp long past
        assert "gateway: 1 late message(s) on /points" in out


# Plain ROS 2 endpoints with QoS other than the default, on either client.
QOS_PEERS = {
    "wire": """
        import sys, time
        from hprm_bridge.wire import Node, QoSProfile, Durability
        with Node("plain_" + sys.argv[1]) as node:
            end, n = time.monotonic() + float(sys.argv[2]), 0
            if sys.argv[1] == "best_effort_talker":
                pub = node.create_publisher("std_msgs/msg/String", "/chatter", "sensor_data")
                while time.monotonic() < end:
                    n += 1
                    pub.publish(node.types.new("std_msgs/msg/String", data=f"plain{n}"))
                    node.spin_once(0.02)
            else:
                node.create_subscription("std_msgs/msg/String", "/chatter",
                    lambda m: print("LATCHED", m.data, flush=True),
                    QoSProfile(depth=1, durability=Durability.TRANSIENT_LOCAL))
                while time.monotonic() < end:
                    node.spin_once(0.05)
    """,
    "rclpy": """
        import sys, time, rclpy
        from rclpy.qos import DurabilityPolicy, QoSProfile, qos_profile_sensor_data
        from std_msgs.msg import String
        rclpy.init()
        node = rclpy.create_node("plain_" + sys.argv[1])
        end, n = time.monotonic() + float(sys.argv[2]), 0
        if sys.argv[1] == "best_effort_talker":
            pub = node.create_publisher(String, "/chatter", qos_profile_sensor_data)
            while time.monotonic() < end:
                n += 1
                pub.publish(String(data=f"plain{n}"))
                rclpy.spin_once(node, timeout_sec=0.02)
        else:
            node.create_subscription(String, "/chatter",
                lambda m: print("LATCHED", m.data, flush=True),
                QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
            while time.monotonic() < end:
                rclpy.spin_once(node, timeout_sec=0.05)
        node.destroy_node()
        rclpy.shutdown()
    """,
}


@pytest.mark.parametrize("client", ["wire", pytest.param("rclpy", marks=pytest.mark.ros2)])
def test_the_gateway_matches_the_qos_of_the_plain_ros2_endpoints_it_finds(
    client, bridge_env, stop_node
):
    """A best-effort talker (a camera driver's QoS) feeds a reliable-by-default
    ported listener, and a transient-local listener hears a ported talker: with
    the gateway's default QoS either pair is incompatible and nothing flows."""
    if client == "rclpy":
        _needs_ros2_cli()
    env = bridge_env(client)  # the gateway on the same client as the plain endpoints

    def plain(role):
        argv = [sys.executable, "-c", textwrap.dedent(QOS_PEERS[client]), role, "60"]
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)  # fmt: skip

    talker = plain("best_effort_talker")
    try:
        time.sleep(1)
        r = _federation("listener.py", env)
    finally:
        stop_node(talker)
    assert r.returncode == 0, r.stdout + r.stderr
    heard = re.findall(r"^\[listener\] HEARD plain(\d+)$", r.stdout, re.M)
    assert len(heard) > 20, r.stdout + r.stderr
    assert "subscription on '/chatter' now best_effort, volatile" in r.stdout + r.stderr
    assert f"gateway ({client}):" in r.stdout

    listener = plain("latched_listener")
    try:
        time.sleep(1)
        r = _federation("talker.py", env)
    finally:
        out = stop_node(listener)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "publisher on '/chatter' now reliable, transient_local" in r.stdout + r.stderr
    assert len(re.findall(r"^LATCHED \d+[ab]$", out, re.M)) > 100, out[-2000:]


def _needs_ros2_cli():
    pytest.importorskip(
        "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
    )
    if shutil.which("ros2") is None:
        pytest.skip("needs a sourced ROS 2 Humble (ros2 on PATH)")


def _in_background(env, *args):
    """``hprm-ros run ARGS`` running on, its own process group (for a Ctrl-C)."""
    out = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
    return subprocess.Popen([*HPRM_ROS, *args], env=env, start_new_session=True, **out)


def _ros2(env, *args, timeout=60):
    return subprocess.run(["ros2", *args], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.ros2
def test_ros2_tools_see_the_ported_nodes_behind_the_gateway(bridge_env):
    """While a ported talker and greeter run behind the gateway, ros2 node list
    shows them by their node names and namespaces (not their federates' names),
    ros2 node info lists what each publishes, ros2 topic echo receives it."""
    _needs_ros2_cli()
    env = bridge_env("rclpy")
    fed = _in_background(env, str(NODES / "talker.py"), str(NODES / "listener.py"),
                         "greeter2=" + str(NODES / "greeter.py"), "--bridge", "--remap",
                         "greeter2:chatter:=greetings", "--remap", "greeter2:__ns:=/robot",
                         "--timeout", "60 s")  # fmt: skip
    want = {"/talker", "/listener", "/robot/greeter", "/hprm_gateway"}
    try:
        deadline = time.monotonic() + 60
        nodes = set()
        while time.monotonic() < deadline and not want <= nodes:
            nodes = set(_ros2(env, "node", "list", "--no-daemon").stdout.split())
            time.sleep(0.5)
        assert want <= nodes and "/greeter2" not in nodes, nodes
        info = _ros2(env, "node", "info", "/robot/greeter", "--no-daemon").stdout
        assert "/robot/greetings: std_msgs/msg/String" in info, info
        echo = _ros2(
            env, "topic", "echo", "--once", "--no-daemon", "/robot/greetings", "std_msgs/msg/String"
        )
        assert re.search(r"data: hello_\d+", echo.stdout), echo.stdout + echo.stderr
    finally:
        os.killpg(fed.pid, signal.SIGINT)
        out = fed.communicate(timeout=60)[0]
    assert "federate ros2_gateway takes the open topics: /robot/greetings (in)" in out, out
    assert "gateway (rclpy):" in out


@pytest.mark.ros2
@pytest.mark.parametrize(("coordination", "backend"), [
    ("centralized", "rclpy"), ("decentralized", "rclpy"), ("centralized", "wire")])  # fmt: skip
def test_ros2_param_lists_gets_and_sets_a_ported_nodes_parameters(
    coordination, backend, tmp_path, bridge_env, stop_node
):
    """Humble's own ``ros2 param`` on a ported node: each call goes through the
    gateway into the node's federate at a tag; a set passes the descriptor's
    range, read-only flag and the node's on-set callback, as under rclpy, and
    the node's callbacks see the new value from then on. On either backend: the
    federate status topic stays off ROS 2 (hprm_msgs is not in the sourced Humble,
    and rclpy can only carry the types it has)."""
    _needs_ros2_cli()
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
        *COORDINATIONS[coordination],
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
        os.killpg(fed.pid, signal.SIGINT)
        out = fed.communicate(timeout=60)[0]
        events = _events(stop_node(listener))
    # /parameter_events: the one set that was made, none of the refused ones
    assert [e[2] for e in events if e[2]] == [["gain=2:7"]], events
    gains = re.findall(r"^\[tuner\] GAIN (\d+) LABEL (\w+)$", out, re.M)
    # from one tick on the new value, and no tick in between saw a half-made change
    assert gains and {g for g, _ in gains} == {"3", "7"}, out[-3000:]
    first7 = [g for g, _ in gains].index("7")
    assert all(g == "7" for g, _ in gains[first7:]) and {lab for _, lab in gains} == {"front"}
    assert f"gateway ({backend}):" in out


def test_a_denied_topic_stays_off_ros2_and_the_run_goes_on(tmp_path, bridge_env, stop_node):
    config = tmp_path / "bridge.yaml"
    config.write_text("deny: ['/chatter']\n")
    env = bridge_env()
    listener = _plain("listen", 20, env)
    try:
        r = subprocess.run([*HPRM_ROS, str(NODES / "talker.py"), "--bridge", "--timeout", "2 s",
                            "--bridge-config", str(config)],
                           capture_output=True, text=True, timeout=180, env=env)  # fmt: skip
    finally:
        out = stop_node(listener)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "gateway: /chatter is open but not bridged (the bridge config)" in r.stdout
    assert "PLAIN" not in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("deny: ['(']\n")
    r = subprocess.run([*HPRM_ROS, str(NODES / "talker.py"), "--bridge-config", str(bad),
                        "--bridge"], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 2 and f"{bad}: deny: '(' is not a regular expression" in r.stderr
    r = subprocess.run([*HPRM_ROS, str(NODES / "talker.py"), "--bridge-config", str(config)],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 2 and "add --bridge" in r.stderr


RAW_WRITER = """
    import sys, time
    from hprm_bridge.wire import Node
    with Node("plain_raw_writer") as node:
        pub = node.create_publisher("std_msgs/msg/String", "/chatter")
        assert pub.wait_for_subscriptions(1, 60), "the gateway never subscribed"
        time.sleep(1.0)
        def cdr(text):
            msg = node.types.new("std_msgs/msg/String", data=text)
            return bytes(node.types.encode(msg, "std_msgs/msg/String"))
        not_utf8 = b"\\x00\\x01\\x00\\x00" + (3).to_bytes(4, "little") + b"\\xff\\xfe\\x00"
        for sample in (cdr("raw1"), not_utf8, cdr("raw2"), cdr("raw3") + bytes(8), cdr("raw4")):
            pub.publish_serialized(sample)
            time.sleep(0.1)
        time.sleep(2)
"""


@pytest.mark.parametrize("backend", [pytest.param("rclpy", marks=pytest.mark.ros2), "wire"])
def test_malformed_samples_from_ros2_are_dropped_by_name_and_the_rest_delivered(
    backend, bridge_env, stop_node
):
    """Small messages cross the gateway undecoded (hprm_bridge.raw_message): a sample
    that is not a valid encoding of its type fails where the ported node decodes it,
    with a warning naming the topic, and the good samples around it still arrive."""
    if backend == "rclpy":
        _needs_ros2_cli()
    env = bridge_env(backend)
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(RAW_WRITER)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)  # fmt: skip
    try:
        r = _federation("listener.py", env, timeout="8 s")
    finally:
        out = stop_node(writer)
    logs = r.stdout + r.stderr
    assert r.returncode == 0, logs
    heard = re.findall(r"^\[listener\] HEARD (raw\d)$", r.stdout, re.M)
    assert heard == ["raw1", "raw2", "raw4"], logs + out
    assert len(re.findall(r"dropped a malformed sample on /chatter", logs)) == 2, logs
