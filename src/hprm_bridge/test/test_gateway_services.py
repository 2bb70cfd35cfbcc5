"""Services across the gateway (``hprm-ros run --bridge``): a ported node's service
answers plain ROS 2 callers, and a ported node's calls reach a plain ROS 2 service.
Real processes and DDS traffic: the plain side on the ROS-free wire client
everywhere, on real rclpy (test/nodes/adder.py, one_call.py) where a Humble is
sourced; the gateway on each backend."""

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

NODES = Path(__file__).parent / "nodes"
SIDES = pytest.mark.parametrize(
    ("plain", "backend"),
    [("wire", "wire"), pytest.param("rclpy", "rclpy", marks=pytest.mark.ros2),
     pytest.param("rclpy", "wire", marks=pytest.mark.ros2)],
)  # fmt: skip

# The plain ROS 2 side on the wire client: a caller of /add_two_ints (20 + 22), and
# a server of it, as one_call.py and adder.py are on rclpy.
WIRE_CALLER = """
    import time
    from hprm_bridge.wire import Node, default_registry

    types = default_registry()
    halves = [types.msg_definition(h)
              for h in types.service_halves("example_interfaces/srv/AddTwoInts")]
    node = Node("one_call")
    client = node.create_client("example_interfaces/srv/AddTwoInts", *halves, "/add_two_ints")
    answers = []
    client.call(lambda reply: answers.append(reply.sum), a=20, b=22)
    deadline = time.monotonic() + 60
    while not answers and time.monotonic() < deadline:
        node.spin_once(0.1)
    print(f"RESULT 20 + 22 = {answers[0] if answers else None}", flush=True)
    node.close()
"""
WIRE_SERVER = """
    import sys, time
    from hprm_bridge.wire import Node, default_registry

    types = default_registry()
    halves = [types.msg_definition(h)
              for h in types.service_halves("example_interfaces/srv/AddTwoInts")]
    node = Node("adder")

    def add(srv, request):
        print(f"ADD {request.a} + {request.b}", flush=True)
        srv.reply(request, sum=request.a + request.b)

    node.create_service("example_interfaces/srv/AddTwoInts", *halves, "/add_two_ints", add)
    deadline = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < deadline:
        node.spin_once(0.1)
    node.close()
"""


def _plain(script, plain, env, *args):
    if plain == "rclpy":
        pytest.importorskip("rclpy", reason="needs a real ROS 2 Humble (source a Humble install)")
        argv = [sys.executable, str(NODES / script), *args]
    else:
        code = WIRE_CALLER if script == "one_call.py" else WIRE_SERVER
        argv = [sys.executable, "-c", textwrap.dedent(code), *args]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)  # fmt: skip


def _federation(env, node, timeout, *more):
    """``hprm-ros run NODE [MORE...] --bridge`` in its own process group (stopped by a
    Ctrl-C)."""
    return subprocess.Popen(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", str(NODES / node), *map(str, more),
         "--bridge", "--timeout", timeout],
        env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip


@SIDES
@pytest.mark.parametrize("ported_caller", [False, True], ids=["alone", "beside_a_ported_caller"])
def test_a_ported_service_answers_a_plain_ros2_caller(
    ctrl_c, ended, plain, backend, ported_caller, bridge_env
):
    """The call enters the federation at its arrival, adder.py answers it at that tag,
    and the gateway sends the answer back to the caller; with summing_client.py calling
    the same service every 10 ms inside the federation, each gets its own answers."""
    env = bridge_env(backend)
    beside = [NODES / "summing_client.py"] if ported_caller else []
    fed = _federation(env, "adder.py", "120 s", *beside)
    try:
        caller = _plain("one_call.py", plain, env, "20", "22")
        out = ended(caller, 90)
    finally:
        fed_out = ctrl_c(fed)
    assert "RESULT 20 + 22 = 42" in out, out + fed_out
    assert fed_out.count("[adder] ADD 20 + 22") == 1, fed_out
    assert f"gateway ({backend}): /_hprm/services/add_two_ints/request (in)" in fed_out
    if ported_caller:
        sums = re.findall(r"^\[summing_client\] SUM (\d+) (\d+) after 0 ns$", fed_out, re.M)
        assert len(sums) >= 10 and all(int(s) == 11 * int(n) for n, s in sums), fed_out


@SIDES
def test_a_ported_client_calls_a_plain_ros2_service(plain, backend, bridge_env, stop_node, ended):
    """summing_client.py calls every 10 ms from the start, before the gateway has
    matched the server: those calls wait for it (rclpy would drop them), so every
    call is answered with its own sum, in order, but later (at each answer's arrival)."""
    env = bridge_env(backend)
    server = _plain("adder.py", plain, env, "60")
    try:
        fed = _federation(env, "summing_client.py", "2 s")
        fed_out = ended(fed, 120)
    finally:
        served = stop_node(server)
    assert fed.returncode == 0, fed_out
    sums = re.findall(r"^\[summing_client\] SUM (\d+) (\d+) after (\d+) ns$", fed_out, re.M)
    assert len(sums) >= 10, fed_out + served
    answered = [(int(n), int(s)) for n, s, _ in sums]
    assert answered == [(n, 11 * n) for n in range(1, len(sums) + 1)], fed_out + served
    assert all(int(took) > 0 for _, _, took in sums)  # ROS 2 answers come at their arrival
    assert "ADD 1 + 10" in served


def test_a_bridge_config_chooses_services_by_their_names():
    """Both topics of a service cross or stay together, by the service's name."""
    from hprm_bridge.bridge_config import BridgeConfig
    from hprm_bridge.gateway import bridged_topics
    from hprm_bridge.service_ports import reply_topic, request_topic

    srv = "example_interfaces/srv/AddTwoInts"
    ends = [(name, topic, direction) for name in ("/add_two_ints", "/secret/add")
            for topic, direction in ((request_topic, "out"), (reply_topic, "in"))]  # fmt: skip
    ports = [{"port": f"p{i}", "direction": direction, "topic": topic(name), "msg_type": srv}
             for i, (name, topic, direction) in enumerate(ends)]  # fmt: skip
    config = BridgeConfig.from_dict({"deny": ["/secret/.*"]})
    assert {t.topic: t.bridged for t in bridged_topics(ports, config)} == {
        "/_hprm/services/add_two_ints/request": True, "/_hprm/services/add_two_ints/reply": True,
        "/_hprm/services/secret/add/request": False, "/_hprm/services/secret/add/reply": False,
    }  # fmt: skip
