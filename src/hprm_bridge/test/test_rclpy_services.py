"""Services between ported nodes (hprm_bridge.rclpy.service, .client, .task):
unmodified rclpy node files (test/nodes/adder.py, summing_client.py,
one_call.py: rclpy and example_interfaces only) serve and call under
``hprm-ros run`` in real processes, and under real rclpy where a Humble is
sourced; the surface's own rules in process."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hprm_bridge import messages
from hprm_bridge import rclpy as hrclpy
from hprm_bridge.rclpy.node import Node, UnsupportedError
from hprm_bridge.rclpy.task import Future
from hprm_bridge.wire.dds_config import random_domain_id

NODES = Path(__file__).parent / "nodes"
AddTwoInts = messages.service_class("example_interfaces/srv/AddTwoInts")
SetBool = messages.service_class("std_srvs/srv/SetBool")


def _hprm_ros(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", *map(str, args)],
        capture_output=True, text=True, timeout=timeout,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )  # fmt: skip


def test_every_call_is_answered_at_the_callers_logical_time(coordination_args):
    """The client calls from a timer (0.2..0.8 s; the call at the 1 s timeout
    would be answered after the stop); each reply comes at the call's own time
    (0 ns later by the node's clock), so the same run prints the same lines.
    Decentralized, the reply must reach the client before it takes its next timer
    tag (that tag's time plus the STP offset, the same offset its call waited for):
    the period is that margin, whatever the offset (10 ms was exceeded in CI)."""
    runs = []
    for _ in range(2):
        r = _hprm_ros("run", NODES / "adder.py", NODES / "summing_client.py",
                      "--param", "summing_client:period:=0.2",
                      "--timeout", "1 s", *coordination_args)  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        # each node's lines (the launcher interleaves two processes' lines as they come)
        runs.append([re.findall(r"^\[adder\] (ADD .*)$", r.stdout, re.M),
                     re.findall(r"^\[summing_client\] (SUM .*)$", r.stdout, re.M)])  # fmt: skip
    expected = [[f"ADD {n} + {10 * n}" for n in range(1, 5)],
                [f"SUM {n} {11 * n} after 0 ns" for n in range(1, 5)]]  # fmt: skip
    assert runs[0] == runs[1] == expected, r.stdout
    assert "(topic /_hprm/services/add_two_ints/request, 1 microstep later)" in r.stdout


# what the executor client prints beside the sum (rclpy's add_node: False the second time)
EXECUTOR_SAYS = (
    "added [True, False] nodes ['executor_call'] then [] linked True True "
    "enclaves [('executor_call', '/', '/')] group MutuallyExclusiveCallbackGroup"
)


@pytest.mark.parametrize("client", ["one_call", "executor_call"])
def test_the_tutorial_client_calls_once_and_its_answer_ends_the_run(client):
    """one_call.py waits for the service, calls, spins until the future completes
    and exits: the federation stops there (as rclpy.shutdown() in a callback does),
    without a --timeout. executor_call.py does it through an executor."""
    r = _hprm_ros("run", NODES / "adder.py", NODES / f"{client}.py", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"[{client}] RESULT 2 + 3 = 5" in r.stdout
    assert r.stdout.count("[adder] ADD 2 + 3") == 1
    if client == "executor_call":
        assert EXECUTOR_SAYS in r.stdout


def test_two_federates_of_one_node_name_each_get_their_own_answers(tmp_path):
    """ROS 2 lets two nodes share a name; their clients' calls carry the federate's name
    too, so neither takes the other's replies (both call with sequence numbers 1, 2...)."""
    plus = tmp_path / "plus.py"
    plus.write_text(
        textwrap.dedent("""
        import rclpy
        from example_interfaces.srv import AddTwoInts
        from rclpy.node import Node

        rclpy.init()
        node = Node("plus")
        b = node.declare_parameter("b", 0).value
        client = node.create_client(AddTwoInts, "add_two_ints")
        calls = []

        def tick():
            calls.append(client.call_async(AddTwoInts.Request(a=len(calls) + 1, b=b)))
            calls[-1].add_done_callback(lambda f: print(f"GOT {f.result().sum}", flush=True))

        node.create_timer(0.01, tick)
        rclpy.spin(node)
    """)
    )
    r = _hprm_ros("run", NODES / "adder.py", f"one={plus}", f"two={plus}",
                  "--param", "two:b:=100", "--timeout", "35 ms")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.findall(r"^\[one\] GOT (\d+)$", r.stdout, re.M) == ["1", "2", "3"], r.stdout
    assert re.findall(r"^\[two\] GOT (\d+)$", r.stdout, re.M) == ["101", "102", "103"]


def test_a_client_no_node_serves_is_told_before_the_start():
    """Under rclpy it would wait in wait_for_service, or its futures would never
    complete; here the federation is known before the first tag, so it says so."""
    r = _hprm_ros("run", NODES / "summing_client.py", "--timeout", "30 ms", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("[summing_client]: no node of the federation serves /add_two_ints: its calls "
            "will not be answered (hprm-ros run --bridge carries them") in r.stdout  # fmt: skip
    assert "SUM" not in r.stdout
    served = _hprm_ros("run", NODES / "adder.py", NODES / "summing_client.py",
                       "--timeout", "10 ms", timeout=60)  # fmt: skip
    assert "no node of the federation serves" not in served.stdout


def test_graph_shows_a_service_as_its_two_topics():
    r = _hprm_ros("graph", NODES / "adder.py", NODES / "one_call.py", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "one_call -> adder  /_hprm/services/add_two_ints/request" in r.stdout
    assert "[example_interfaces/srv/AddTwoInts] (+1 microstep)" in r.stdout


def test_a_client_and_a_server_that_disagree_on_the_type_are_refused(tmp_path):
    server = tmp_path / "toggle.py"
    server.write_text(
        textwrap.dedent("""
        import rclpy
        from rclpy.node import Node
        from std_srvs.srv import SetBool

        rclpy.init()
        node = Node("toggle")
        node.create_service(SetBool, "add_two_ints", lambda req, res: res)
        rclpy.spin(node)
    """)
    )
    r = _hprm_ros("run", server, NODES / "one_call.py", "--timeout", "1 s", timeout=60)
    assert r.returncode != 0
    assert ("cannot assemble the federation: topic '/_hprm/services/add_two_ints/reply': "
            "toggle.srv0_reply publishes std_srvs/srv/SetBool but one_call.client0_reply "
            "subscribes with example_interfaces/srv/AddTwoInts") in r.stdout  # fmt: skip


def test_a_service_callback_that_returns_nothing_fails_its_node_by_name(tmp_path):
    server = tmp_path / "forgetful.py"
    server.write_text(
        textwrap.dedent("""
        import rclpy
        from example_interfaces.srv import AddTwoInts
        from rclpy.node import Node

        def add(request, response):
            response.sum = request.a + request.b  # and no return

        rclpy.init()
        node = Node("forgetful")
        node.create_service(AddTwoInts, "add_two_ints", add)
        rclpy.spin(node)
    """)
    )
    r = _hprm_ros("run", server, NODES / "one_call.py", "--timeout", "1 s", timeout=60)
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "service /add_two_ints: the callback returned NoneType, not a AddTwoInts.Response" in out


def test_a_call_is_a_request_message_and_a_future_in_the_node():
    node = Node("caller")
    client = node.create_client(AddTwoInts, "add_two_ints")
    assert (client.srv_name, client.wait_for_service(timeout_sec=1.0)) == ("/add_two_ints", True)
    with pytest.raises(TypeError, match="Request must be instance of"):
        client.call_async(AddTwoInts.Response())
    with pytest.raises(TypeError, match="is not a service type"):
        node.create_client(messages.message_class("std_msgs/msg/String"), "x")
    with pytest.raises(TypeError, match="<class 'object'> is not a service type"):
        node.create_service(object, "x", lambda req, res: res)
    with pytest.raises(UnsupportedError, match=r"Client\.call \(/add_two_ints\).*MultiThreaded"):
        client.call(AddTwoInts.Request())
    first = client.call_async(AddTwoInts.Request(a=1, b=2))
    second = client.call_async(AddTwoInts.Request(a=3, b=4))
    # both wait in the request publisher's queue for the node's publish reaction
    sent = client._requests._queue
    assert [(key, seq, req.a) for key, seq, req in sent] == [
        ("/caller#0", 1, 1),
        ("/caller#0", 2, 3),
    ]
    assert not first.done() and first.result() is None
    second.cancel()
    assert second.cancelled() and second.done()


def test_a_future_runs_its_done_callbacks_once_in_order():
    future, seen = Future(), []
    future.add_done_callback(lambda f: seen.append(("a", f.result())))
    future.add_done_callback(lambda f: seen.append(("b", f.result())))
    future.set_result(7)
    future.add_done_callback(lambda f: seen.append(("late", f.result())))  # done: at once
    assert seen == [("a", 7), ("b", 7), ("late", 7)]
    failed = Future()
    failed.set_exception(ValueError("no"))
    with pytest.raises(ValueError, match="no"):
        failed.result()


def test_a_node_that_calls_its_own_service_is_told_why_not():
    node = Node("selfish")
    node.create_service(AddTwoInts, "add", lambda req, res: res)
    node.create_client(AddTwoInts, "add")
    with pytest.raises(UnsupportedError, match="node selfish calls its own service /add"):
        node._as_reactor()


def test_services_and_clients_resolve_names_and_do_not_shift_publisher_ports():
    node = Node("cam", namespace="robot1")
    client = node.create_client(SetBool, "~/enable")
    pub = node.create_publisher(messages.message_class("std_msgs/msg/String"), "status", 10)
    service = node.create_service(SetBool, "enable", lambda req, res: res)
    assert client.srv_name == "/robot1/cam/enable" and service.srv_name == "/robot1/enable"
    assert pub._port.name == "pub0"  # as a node without services has it
    assert [s.srv_name for s in node.services] == ["/robot1/enable"]
    assert node.clients == [client]


def test_a_second_spin_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("HPRM_TIMEOUT", "5 ms")
    node = Node("twice")
    hrclpy.init()
    hrclpy.spin(node)
    with pytest.raises(UnsupportedError, match="node twice spins a second time"):
        hrclpy.spin(node)


@pytest.mark.ros2
@pytest.mark.parametrize("client", ["one_call", "executor_call"])
def test_the_same_service_nodes_run_under_real_rclpy(require_ros2_cli, client):
    require_ros2_cli()
    env = dict(os.environ, PYTHONUNBUFFERED="1", ROS_DOMAIN_ID=str(random_domain_id()))
    adder = subprocess.Popen([sys.executable, str(NODES / "adder.py")], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        call = subprocess.run([sys.executable, str(NODES / f"{client}.py"), "4", "5"],
                              env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    finally:
        adder.terminate()
        try:
            out, _ = adder.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            adder.kill()
            out, _ = adder.communicate()
    assert call.returncode == 0, call.stdout + call.stderr
    assert "RESULT 4 + 5 = 9" in call.stdout
    assert "ADD 4 + 5" in out
    if client == "executor_call":
        assert EXECUTOR_SAYS in call.stdout


def _sync_lines(out, who):
    return re.findall(rf"^(?:\[{who}\] )?((?:SYNC|THREAD|ASYNC|HEARD|STOP).*)$", out, re.M)


SYNC_SAYS = {
    "sync_caller": ["SYNC 1 + 10 = 11", "SYNC 2 + 10 = 12", "SYNC 3 + 10 = 13", "STOP"],
    "thread_caller": ["THREAD 1 + 100 = 101", "THREAD 2 + 100 = 102", "STOP"],
    "async_caller": [
        line
        for n in (1, 2, 3)
        for line in (f"ASYNC {n} + 20 = {20 + n}", f"HEARD {20 + n} -> {1020 + n}")
    ]
    + ["STOP"],
}


@pytest.mark.parametrize("caller", sorted(SYNC_SAYS))
def test_a_blocking_call_waits_for_its_answer_in_a_task(caller, ported_run):
    """client.call() in a timer callback of a node a MultiThreadedExecutor spins (the
    callback groups tutorial), in a main beside a spin thread (rclpy's docs), and
    ``await client.call_async()`` in async timer and subscription callbacks: each waits,
    as a task, for the answer at its later microstep."""
    out = ported_run(NODES / "adder.py", NODES / f"{caller}.py")
    assert _sync_lines(out, caller) == SYNC_SAYS[caller]


@pytest.mark.ros2
@pytest.mark.parametrize("caller", sorted(SYNC_SAYS))
def test_the_blocking_callers_say_the_same_under_real_rclpy(rclpy_until_stop, caller):
    out = rclpy_until_stop([NODES / f"{caller}.py"], [NODES / "adder.py"])
    assert _sync_lines("\n".join(out), caller) == SYNC_SAYS[caller]


GROUP_SAYS = {
    "exclusive": ["START 1", "DONE 1 101", "START 2", "DONE 2 102", "START 3", "DONE 3 103"],
    "reentrant": ["START 1", "START 2", "START 3", "DONE 1 101", "DONE 2 102", "DONE 3 103"],
}


@pytest.mark.parametrize("group", sorted(GROUP_SAYS))
def test_a_callback_group_decides_whether_a_tick_waits_for_the_last_ones_answer(group, ported_run):
    """A timer whose callback blocks in client.call for a second of logical time (the
    service's callback sleeps): alone in a MutuallyExclusiveCallbackGroup, its next tick
    waits for the answer (the ticks meanwhile are one); in a ReentrantCallbackGroup,
    ticks start while earlier ones wait."""
    out = ported_run(NODES / "slow_adder.py", NODES / "group_caller.py",
                     "--param", f"group_caller:group:={group}")  # fmt: skip
    said = re.findall(r"^\[group_caller\] ((?:START|DONE|STOP).*)$", out, re.M)
    assert said == [*GROUP_SAYS[group], "STOP"], out


def test_a_main_that_sleeps_before_spinning_a_multithreaded_executor(ported_run):
    """The main's sleep starts the node (a node file might never spin), yet the
    MultiThreadedExecutor it spins next still lets its callbacks block in client.call."""
    out = ported_run(NODES / "slow_adder.py", NODES / "group_caller.py",
                     "--param", "group_caller:nap:=0.05")  # fmt: skip
    said = re.findall(r"^\[group_caller\] ((?:START|DONE|STOP).*)$", out, re.M)
    assert said == [*GROUP_SAYS["exclusive"], "STOP"], out


@pytest.mark.ros2
@pytest.mark.parametrize("group", sorted(GROUP_SAYS))
def test_the_callback_groups_do_the_same_under_real_rclpy(rclpy_until_stop, group):
    out = rclpy_until_stop([NODES / "group_caller.py", "--ros-args", "-p", f"group:={group}"],
                           [NODES / "slow_adder.py"])  # fmt: skip
    assert [x for x in out if re.fullmatch(r"(?:START|DONE|STOP).*", x)] == [
        *GROUP_SAYS[group],
        "STOP",
    ], out


IMPATIENT = """
import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node


class Impatient(Node):
    def __init__(self):
        super().__init__("impatient")
        group = MutuallyExclusiveCallbackGroup()
        self.client = self.create_client(AddTwoInts, "slow_add", callback_group=group)
        self.timer = self.create_timer(0.1, self.tick)

    def tick(self):
        self.timer.cancel()
        for a, timeout in ((1, 0.5), (3, 5.0)):
            t0 = self.get_clock().now()
            answer = self.client.call(AddTwoInts.Request(a=a, b=10), timeout_sec=timeout)
            took = (self.get_clock().now() - t0).nanoseconds
            print(f"CALL {a} {None if answer is None else answer.sum} {took}", flush=True)
        print(f"PENDING {len(self.client._pending)}", flush=True)
        rclpy.shutdown()


rclpy.init()
executor = MultiThreadedExecutor()
executor.add_node(Impatient())
executor.spin()
"""


def test_a_blocking_call_that_times_out_gives_none_and_its_late_answer_is_dropped(
    tmp_path, ported_run
):
    """``client.call(request, timeout_sec=)`` (rclpy's from Iron on) in logical time: the
    server answers a second after each call, one call at a time. The first call gives up
    after exactly 0.5 s; the second waits for the server to finish the first, then its
    own; the first's answer, arriving meanwhile, is dropped."""
    node = tmp_path / "impatient.py"
    node.write_text(IMPATIENT)
    out = ported_run(NODES / "slow_adder.py", node)
    said = re.findall(r"^\[impatient\] ((?:CALL|PENDING).*)$", out, re.M)
    assert said == ["CALL 1 None 500000000", "CALL 3 13 1500000000", "PENDING 0"], out


PEER_SAYS = [
    "LIST fixed gain label pid.kp use_sim_time",
    "GET",  # one name undeclared: nothing (Humble)
    "SET False Parameter gain out of range. Min: 0, Max: 10, value: 42 | False label refused "
    "by the node | False Trying to set a read-only parameter: fixed. | True",
    "GET 7 front", "DESCRIBE gain:False:[10] fixed:True:[]", "TYPES []", "ATOMIC True",
    "GET rear 1.5", "STOP",
]  # fmt: skip
PEER_LINE = r"(?:LIST|GET|SET|DESCRIBE|TYPES|ATOMIC|STOP).*"


def test_a_node_calls_another_ported_nodes_parameter_services():
    """get/set/list/describe between two federates, as tagged calls answered from the
    called node's parameters at that tag, through its descriptors and callbacks."""
    r = _hprm_ros("run", NODES / "param_peer.py", NODES / "tuner.py", "--timeout", "10 s")
    assert r.returncode == 0, r.stdout + r.stderr
    said = re.findall(rf"^\[param_peer\] ({PEER_LINE})$", r.stdout, re.M)
    assert [x.rstrip() for x in said] == PEER_SAYS, r.stdout
    assert "no node of the federation serves" not in r.stdout


@pytest.mark.ros2
def test_the_parameter_peer_sees_the_same_under_real_rclpy(rclpy_until_stop):
    out = rclpy_until_stop([NODES / "param_peer.py"], [NODES / "tuner.py"])
    assert [x.rstrip() for x in out if re.fullmatch(PEER_LINE, x)] == PEER_SAYS, out
