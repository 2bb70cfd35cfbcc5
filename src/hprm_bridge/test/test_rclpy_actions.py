"""Actions between ported nodes (hprm_bridge.rclpy.action, .logical_sleep,
hprm_bridge.action_ports): the ROS 2 tutorial's Fibonacci server and client
(test/nodes/fibonacci_server.py, fibonacci_client.py: rclpy and
example_interfaces only) under ``hprm-ros run`` in real processes, and under
real rclpy where a Humble is sourced; the surface's rules in process."""

import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from hprm_bridge import action_ports, messages
from hprm_bridge.rclpy.action import ActionClient, ActionServer
from hprm_bridge.rclpy.action.server import InvalidTransitionError, ServerGoalHandle
from hprm_bridge.rclpy.logical_sleep import Sleeper
from hprm_bridge.rclpy.node import Node, UnsupportedError
from hprm_bridge.wire.dds_config import random_domain_id
from hprm_bridge.wire.errors import MsgParseError, UnknownTypeError
from hprm_bridge.wire.typesys import TypeRegistry

NODES = Path(__file__).parent / "nodes"
Fibonacci = messages.action_class("example_interfaces/action/Fibonacci")
RAN = ["ACCEPTED"] + [f"FEEDBACK {[0, 1, 1, 2, 3, 5][: n + 3]}" for n in range(4)]
CANCELED = ["ACCEPTED", "FEEDBACK [0, 1, 1]", "FEEDBACK [0, 1, 1, 2]",
            "CANCEL return code 0, 1 canceling", "RESULT status 5 [0, 1, 1, 2]"]  # fmt: skip


def _run(*args, timeout=120):
    """``hprm-ros run`` of the two Fibonacci nodes; (output, client lines, server lines)."""
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", NODES / "fibonacci_server.py",
         NODES / "fibonacci_client.py", "--param", "fibonacci_server:period:=0.1", *args],
        capture_output=True, text=True, timeout=timeout, env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )  # fmt: skip
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    client = re.findall(r"^\[fibonacci_client\] ([A-Z]+ .*|[A-Z]+)$", r.stdout, re.M)
    server = re.findall(r"^\[fibonacci_server\] ([A-Z]+ .*)$", r.stdout, re.M)
    return out, client, server


def _logical_span_ns(out: str) -> int:
    """From the federation's start to the stop the client asked for (logical time)."""
    start = int(re.search(r"start time (\d+)", out).group(1))
    stop = int(re.search(r"stop requested by fibonacci_client at Tag\(time=(\d+)", out).group(1))
    return stop - start


def test_the_tutorial_action_runs_in_logical_time(coordination_args):
    """Each feedback one period (0.1 s, slept with time.sleep in the execute callback)
    after the last, in logical time: the run ends 0.4 s after the start, exactly, and
    prints the same lines every run."""
    runs = []
    for _ in range(2):
        out, client, server = _run(*coordination_args, timeout=120)
        runs.append((client, server))
        assert _logical_span_ns(out) == 400_000_000, out
    assert runs[0] == runs[1], runs
    assert runs[0][0] == [*RAN, "RESULT status 4 [0, 1, 1, 2, 3, 5]"]
    assert runs[0][1] == ["GOAL order 5: accepted", "EXECUTE order 5"]


def test_a_cancel_reaches_the_goal_between_its_sleeps():
    """The client cancels at the second feedback; the server's cancel callback runs
    while the execute callback sleeps, which then sees is_cancel_requested (what the
    tutorial needs a MultiThreadedExecutor for under rclpy)."""
    out, client, server = _run("--param", "fibonacci_client:order:=8",
                               "--param", "fibonacci_client:cancel_at:=2")  # fmt: skip
    assert client == CANCELED
    assert server == ["GOAL order 8: accepted", "EXECUTE order 8", "CANCEL requested",
                      "CANCELED after 4"]  # fmt: skip
    assert _logical_span_ns(out) == 200_000_000  # canceled at its third step


def test_two_clients_goals_execute_side_by_side_in_logical_time():
    """Two federates of the same client node (one node name: their goal ids still
    differ) send goals at once; the server's two execute callbacks sleep in turns, each
    client sees only its own goal's feedback, and the shorter goal's result (0.3 s)
    ends the run (its client shuts down) while the other still executes."""
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", NODES / "fibonacci_server.py",
         f"one={NODES / 'fibonacci_client.py'}", f"two={NODES / 'fibonacci_client.py'}",
         "--param", "fibonacci_server:period:=0.1", "--param", "two:order:=4"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    lines = {who: re.findall(rf"^\[{who}\] ([A-Z]+.*)$", r.stdout, re.M) for who in ("one", "two")}
    assert lines["one"] == RAN
    assert lines["two"] == [*RAN[:4], "RESULT status 4 [0, 1, 1, 2, 3]"]
    assert r.stdout.count("[fibonacci_server] EXECUTE order") == 2


def test_a_rejected_goal_is_answered_and_never_executes():
    _, client, server = _run("--param", "fibonacci_client:order:=50")
    assert client == ["REJECTED"]
    assert server == ["GOAL order 50: rejected"]


def test_a_goal_still_sleeping_at_the_stop_ends_with_its_federation():
    """--timeout stops the federation while the execute callback sleeps: its task is
    ended, every process exits cleanly, no result is printed."""
    out, client, _ = _run("--param", "fibonacci_client:order:=30", "--timeout", "250 ms")
    assert client == [*RAN[:3], "FEEDBACK [0, 1, 1, 2, 3]"]
    assert "RESULT" not in out and "Traceback" not in out


def test_a_client_of_an_action_no_node_serves_is_told_once():
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", NODES / "fibonacci_client.py",
         "--timeout", "30 ms"], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    told = re.findall(r"no node of the federation serves (.*?):", r.stdout)
    assert told == ["the action /fibonacci"], r.stdout


def test_graph_shows_an_action_as_its_services_and_topics():
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "graph", NODES / "fibonacci_server.py",
         NODES / "fibonacci_client.py"], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "fibonacci_client -> fibonacci_server  /_hprm/services/fibonacci/_action/send_goal" in (
        r.stdout
    )
    assert "fibonacci_server -> fibonacci_client  /fibonacci/_action/feedback" in r.stdout
    assert "[example_interfaces/action/Fibonacci_FeedbackMessage]" in r.stdout


def test_an_execute_callback_that_fails_aborts_its_goal_and_says_why(tmp_path):
    """As rclpy: the error is logged, the goal aborted, an empty result returned; a
    callback that returns no result is refused by name."""
    server = tmp_path / "fibonacci_server.py"
    server.write_text(
        textwrap.dedent("""
        import rclpy
        from example_interfaces.action import Fibonacci
        from rclpy.action import ActionServer
        from rclpy.node import Node

        def execute(goal_handle):
            raise ValueError("no sequence today")

        rclpy.init()
        node = Node("broken_server")
        ActionServer(node, Fibonacci, "fibonacci", execute)
        rclpy.spin(node)
    """)
    )
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", server, NODES / "fibonacci_client.py"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "Error raised in execute callback: no sequence today" in out
    assert "[fibonacci_client] RESULT status 6 []" in out  # ABORTED, an empty result


def test_a_rate_in_an_execute_callback_keeps_its_period_in_logical_time(tmp_path):
    """A 20 Hz loop that computes between its sleeps: each step starts on the 50 ms
    grid of logical time (from its first sleep), whatever the computing took."""
    server = tmp_path / "fibonacci_server.py"
    server.write_text(
        textwrap.dedent("""
        from time import sleep  # bound before any ActionServer exists: logical too
        import rclpy
        from example_interfaces.action import Fibonacci
        from rclpy.action import ActionServer
        from rclpy.node import Node

        class Stepper(Node):
            def __init__(self):
                super().__init__("stepper")
                ActionServer(self, Fibonacci, "fibonacci", self.execute)

            def execute(self, goal_handle):
                rate = self.create_rate(20)
                start = None
                for i in range(goal_handle.request.order - 1):
                    now = self.get_clock().now().nanoseconds
                    start = now if start is None else start
                    print(f"STEP {i} at {(now - start) // 1_000_000} ms", flush=True)
                    goal_handle.publish_feedback(Fibonacci.Feedback(sequence=[i]))
                    sleep(0.01 * i)  # computing, in logical time too
                    now = self.get_clock().now().nanoseconds
                    print(f"COMPUTED {i} at {(now - start) // 1_000_000} ms", flush=True)
                    rate.sleep()
                goal_handle.succeed()
                return Fibonacci.Result(sequence=[0])

        rclpy.init()
        rclpy.spin(Stepper())
    """)
    )
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", server, NODES / "fibonacci_client.py"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    steps = re.findall(r"^\[fibonacci_server\] ((?:STEP|COMPUTED) .*)$", r.stdout, re.M)
    assert steps == [line for i in range(4) for line in
                     (f"STEP {i} at {50 * i} ms", f"COMPUTED {i} at {60 * i} ms")]  # fmt: skip
    assert "[fibonacci_client] RESULT status 4 [0]" in r.stdout
    node = Node("elsewhere")
    with pytest.raises(UnsupportedError, match=r"Rate\.sleep outside an action's execute"):
        node.create_rate(10).sleep()


def test_goal_ids_are_the_same_every_run_and_distinct():
    def ids():
        node = Node("asker")
        client = ActionClient(node, Fibonacci, "fibonacci")
        client.send_goal_async(Fibonacci.Goal(order=1))
        client.send_goal_async(Fibonacci.Goal(order=2))
        sent = client._goals._requests._queue
        return [bytes(req.goal_id.uuid) for _, _, req in sent]

    first, second = ids(), ids()
    assert first == second and first[0] != first[1]
    assert all(len(i) == 16 and i[6] >> 4 == 4 for i in first)  # version-4 shaped


def test_the_client_refuses_what_would_block_or_mistype():
    node = Node("asker")
    client = ActionClient(node, "example_interfaces/action/Fibonacci", "fibonacci")
    assert client.wait_for_server(timeout_sec=1.0) and client.server_is_ready()
    with pytest.raises(TypeError, match="goal must be a"):
        client.send_goal_async(Fibonacci.Result())
    with pytest.raises(UnsupportedError, match=r"ActionClient\.send_goal \(/fibonacci\).*task"):
        client.send_goal(Fibonacci.Goal(order=1))  # not in a task: it could never wait
    assert client._goals._requests._queue == []  # refused before anything was sent
    with pytest.raises(TypeError, match="std_msgs/msg/String is not an action type"):
        ActionClient(node, messages.message_class("std_msgs/msg/String"), "x")


def test_goal_states_follow_rcl_actions_state_machine():
    node = Node("server")
    server = ActionServer(node, Fibonacci, "fibonacci", lambda handle: Fibonacci.Result())
    info = messages.message_class("action_msgs/msg/GoalInfo")()
    handle = ServerGoalHandle(server, info, Fibonacci.Goal(order=3))
    server._goals[bytes(info.goal_id.uuid)] = handle  # as a goal request would
    assert handle.status == 1 and handle.is_active  # ACCEPTED
    with pytest.raises(InvalidTransitionError, match="from state 1 with event SUCCEED"):
        handle.succeed()  # never executed
    handle._update_state(0)  # EXECUTE
    handle._update_state(1)  # CANCEL_GOAL
    assert handle.is_cancel_requested
    handle.canceled()
    assert handle.status == 5 and not handle.is_active
    statuses = [m.message().status_list[0].status for m in server._status._queue]
    assert statuses == [2, 3, 5]  # every change published, as rcl_action does


def test_a_goal_is_answered_in_process_and_forgotten_after_result_timeout():
    """The server's three services driven by hand (no federation: the node's clock is
    the system's): a goal accepted and answered, executed when its task wakes, its
    result given to a request that came first; with result_timeout=0 the ended goal is
    forgotten at the next status change, and a late result request gets UNKNOWN."""
    node = Node("server")
    ran = []

    def execute(goal_handle):
        ran.append(goal_handle.request.order)
        goal_handle.succeed()
        return Fibonacci.Result(sequence=[goal_handle.request.order])

    server = ActionServer(node, Fibonacci, "fib", execute, result_timeout=0)
    send = Fibonacci.Impl.SendGoalService.Request
    first = send(goal=Fibonacci.Goal(order=7))
    first.goal_id.uuid[:] = 1
    server._on_goal("c#0", 1, first)
    server._on_result_request("c#1", 1, Fibonacci.Impl.GetResultService.Request(
        goal_id=first.goal_id))  # fmt: skip
    replies = {s.srv_name.rsplit("/", 1)[1]: s._replies._queue for s in node.services}
    assert [(k, n, r.accepted) for k, n, r in replies["send_goal"]] == [("c#0", 1, True)]
    assert ran == [] and replies["get_result"] == []  # executes from the next microstep
    assert node._sleeper.take_wakeups() == [0]  # what the node's sleep_until reaction does
    node._sleeper.wake()
    assert ran == [7]
    assert [(k, r.status, list(r.result.sequence)) for k, _, r in replies["get_result"]] == [
        ("c#1", 4, [7])
    ]
    second = send(goal=Fibonacci.Goal(order=8))
    second.goal_id.uuid[:] = 2
    server._on_goal("c#0", 2, second)
    node._sleeper.wake()  # its status changes: the first goal has been over for > 0 s
    server._on_result_request("c#1", 2, Fibonacci.Impl.GetResultService.Request(
        goal_id=first.goal_id))  # fmt: skip
    assert replies["get_result"][-1][2].status == 0  # UNKNOWN: forgotten


def test_tasks_take_turns_and_wake_in_the_order_they_slept():
    """The Sleeper without a federation: a clock the test moves, tasks that record
    what they see; a task runs only while the caller waits for it."""
    now = [0]
    sleeper = Sleeper(lambda: now[0], lambda: (now[0], 0))
    seen = []

    def task(name, naps):
        def run():
            for nap in naps:
                seen.append((name, now[0]))
                sleeper_sleep(nap)
            seen.append((name, "done", now[0]))

        return run

    from hprm_bridge.rclpy.logical_sleep import sleep as sleeper_sleep

    sleeper.start(task("a", [0.2, 0.1]))
    sleeper.start(task("b", [0.1]))
    assert seen == [] and sleeper.take_wakeups() == [0, 0]  # both start next microstep
    sleeper.wake()
    assert seen == [("a", 0), ("b", 0)]
    assert sorted(sleeper.take_wakeups()) == [100_000_000, 200_000_000]
    now[0] = 100_000_000
    sleeper.wake()
    assert seen[-1] == ("b", "done", 100_000_000)
    now[0] = 200_000_000
    sleeper.wake()
    assert seen[-1] == ("a", 200_000_000)  # its second nap: asleep again
    sleeper.stop()  # ends it where it sleeps
    assert ("a", "done", 200_000_000) not in seen and sleeper._tasks == []
    assert not sleeper_sleep(0.0)  # outside a task: nothing slept


def test_a_callbacks_task_runs_on_the_reactors_thread_and_gives_back_to_its_caller():
    """run_now's task is a coroutine of the calling thread (no thread started per
    callback); a task run from inside another's turn gives the turn back to that task,
    not to the reactor; what a task raises, its turn raises."""
    from hprm_bridge.rclpy.logical_sleep import sleep as sleeper_sleep

    now = [0]
    sleeper = Sleeper(lambda: now[0], lambda: (now[0], 0))
    seen = []

    def inner():
        seen.append(("inner", threading.get_ident()))
        sleeper_sleep(0.5)
        seen.append(("inner woke", now[0]))

    def outer():
        seen.append(("outer", threading.get_ident()))
        sleeper.run_now(inner)  # returns when inner sleeps
        seen.append(("outer after inner",))
        sleeper_sleep(1.0)
        raise KeyError("from the task")

    assert sleeper.take_wakeups() == []  # started (the node's startup reaction)
    before = threading.active_count()
    sleeper.run_now(outer)
    me = threading.get_ident()
    assert seen == [("outer", me), ("inner", me), ("outer after inner",)]
    assert threading.active_count() == before  # two tasks asleep, no thread of theirs
    now[0] = 500_000_000
    sleeper.wake()
    assert seen[-1] == ("inner woke", 500_000_000)
    now[0] = 1_000_000_000
    with pytest.raises(KeyError, match="from the task"):
        sleeper.wake()
    assert sleeper._tasks == []


def test_an_action_from_a_package_directory_and_its_errors(tmp_path):
    pkg = tmp_path / "my_actions"
    (pkg / "action").mkdir(parents=True)
    (pkg / "action" / "Dock.action").write_text(
        "# a docking request\nstring station\n---\nbool docked\n---\nfloat32 distance\n"
    )
    (pkg / "action" / "Broken.action").write_text("int32 a\n---\nint32 b\n")
    reg = TypeRegistry([pkg], use_ament_prefix_path=False)
    assert "my_actions/action/Dock" in reg.actions()
    Dock = messages.action_class("my_actions/action/Dock", reg)
    assert Dock.Goal(station="a").station == "a"
    assert Dock.Impl.GetResultService.Response().result == Dock.Result()
    feedback = Dock.Impl.FeedbackMessage(feedback=Dock.Feedback(distance=1.5))
    assert feedback.goal_id.uuid.dtype == np.uint8 and feedback.feedback.distance == 1.5
    with pytest.raises(MsgParseError, match=r"an action has two '---' lines .* found 1"):
        reg.resolve("my_actions/action/Broken_Goal")
    with pytest.raises(UnknownTypeError, match="unknown action type 'my_actions/action/Nope'"):
        reg.resolve("my_actions/action/Nope_Goal")
    with pytest.raises(UnknownTypeError, match="is an action, not a message type"):
        reg.resolve("my_actions/action/Dock")


def test_action_names_resolve_as_rcl_action_resolves_them():
    node = Node("dock", namespace="robot1")
    ActionServer(node, Fibonacci, "~/fib", lambda handle: Fibonacci.Result())
    names = {s.srv_name for s in node.services}
    assert names == {f"/robot1/dock/fib/_action/{p}" for p in
                     ("send_goal", "get_result", "cancel_goal")}  # fmt: skip
    assert action_ports.action_of("/robot1/dock/fib/_action/status") == "/robot1/dock/fib"
    assert action_ports.action_of("/robot1/dock/fib/status") is None


@pytest.mark.ros2
@pytest.mark.parametrize("extra,expected", [([], [*RAN, "RESULT status 4 [0, 1, 1, 2, 3, 5]"]),
                                            (["-p", "order:=8", "-p", "cancel_at:=2"], CANCELED)],
                         ids=["plain", "canceled"])  # fmt: skip
def test_the_same_action_nodes_run_under_real_rclpy(require_ros2_cli, stop_node, extra, expected):
    require_ros2_cli()
    env = dict(os.environ, PYTHONUNBUFFERED="1", ROS_DOMAIN_ID=str(random_domain_id()))
    server = subprocess.Popen(
        [sys.executable, str(NODES / "fibonacci_server.py"), "--ros-args", "-p", "period:=0.1"],
        env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        client = [sys.executable, str(NODES / "fibonacci_client.py"), "--ros-args", *extra]
        r = subprocess.run(client, env=env, capture_output=True, text=True, timeout=60)
    finally:
        out = stop_node(server)
    assert r.returncode == 0, r.stdout + r.stderr
    # Under ROS 2 the goal's acceptance (a service reply) and its first feedback
    # (a topic message, published as execution starts) race: either may print
    # first. HPRM orders them by tag (the tests above); the rest is ordered in both.
    lines = r.stdout.splitlines()
    assert lines.count("ACCEPTED") == 1, lines
    assert [x for x in lines if x != "ACCEPTED"] == expected[1:]
    assert "EXECUTE order" in out


SYNC_CLIENT = NODES / "sync_fibonacci_client.py"
SYNC_SAYS = ["RESULT status 4 sequence [0, 1, 1, 2, 3]", "STOP"]


def _sync_lines(out):
    return re.findall(r"^(?:\[sync_fibonacci_client\] )?((?:RESULT|STOP).*)$", out, re.M)


def test_a_main_beside_a_spin_thread_waits_for_an_actions_result(ported_run):
    """ActionClient.send_goal blocks the node file's main (a task) until the result, which
    the server's execute callback gives in logical time."""
    out = ported_run(NODES / "fibonacci_server.py", SYNC_CLIENT,
                     "--param", "fibonacci_server:period:=0.1")  # fmt: skip
    assert _sync_lines(out) == SYNC_SAYS


@pytest.mark.ros2
def test_the_waiting_action_client_says_the_same_under_real_rclpy(rclpy_until_stop):
    server = [NODES / "fibonacci_server.py", "--ros-args", "-p", "period:=0.1"]
    assert _sync_lines("\n".join(rclpy_until_stop([SYNC_CLIENT], server))) == SYNC_SAYS


QUEUE_SAYS = ["ACCEPTED 3 True", "ACCEPTED 2 True", "RESULT 3 4 [0, 1, 1, 2]",
              "RESULT 2 4 [0, 1, 1]", "STOP"]  # fmt: skip


def _client_lines(out):
    return re.findall(r"^(?:\[two_goals\] )?((?:ACCEPTED|RESULT|STOP).*)$", out, re.M)


def test_goals_queue_behind_the_executing_one_as_in_ros2_examples(ported_run):
    """ros2/examples' server_queue_goals: handle_accepted_callback queues a goal while
    another executes; the execute callback starts the next with goal_handle.execute()
    from its ``finally``, under a threading.Lock (tasks share the reactor's thread, and
    neither holds the lock across a sleep)."""
    out = ported_run(NODES / "queue_server.py", NODES / "two_goals.py")
    assert _client_lines(out) == QUEUE_SAYS
    server = re.findall(r"^\[queue_server\] ((?:QUEUED|EXECUTING).*)$", out, re.M)
    assert server == ["QUEUED 2", "EXECUTING 3", "EXECUTING 2"]  # both accepted at one tag


@pytest.mark.ros2
def test_the_goal_queue_gives_the_same_results_under_real_rclpy(rclpy_until_stop):
    out = rclpy_until_stop([NODES / "two_goals.py"], [NODES / "queue_server.py"])
    assert _client_lines("\n".join(out)) == QUEUE_SAYS


SINGLE_SAYS = ["RESULT 5 6 []", "RESULT 2 4 [0, 1, 1]", "STOP"]


def _second_goal_lines(out):
    return re.findall(r"^(?:\[second_goal\] )?((?:RESULT|STOP).*)$", out, re.M)


def test_a_new_goal_aborts_the_executing_one_as_in_ros2_examples(ported_run):
    """ros2/examples' server_single_goal: the second goal's handle_accepted_callback
    aborts the first, whose execute callback, asleep in logical time, finds it inactive
    at its next step and returns an empty result (status ABORTED)."""
    out = ported_run(NODES / "single_goal_server.py", NODES / "second_goal.py")
    assert _second_goal_lines(out) == SINGLE_SAYS
    server = re.findall(r"^\[single_goal_server\] ((?:ABORTING|GONE).*)$", out, re.M)
    assert server == ["ABORTING 5", "GONE 5"]


@pytest.mark.ros2
def test_the_single_goal_server_gives_the_same_results_under_real_rclpy(rclpy_until_stop):
    """The same two results; their order is not fixed under rclpy: the aborted goal's
    execute callback wakes from its 0.3 s sleep a few ms before the second goal's ends
    its own (the second was sent at the first's first feedback), and under load the two
    swap (seen in CI). Ported, the order is a logical time's (the test above)."""
    out = rclpy_until_stop([NODES / "second_goal.py"], [NODES / "single_goal_server.py"])
    lines = _second_goal_lines("\n".join(out))
    assert sorted(lines[:-1]) == sorted(SINGLE_SAYS[:-1]) and lines[-1:] == ["STOP"], lines


ASYNCIO_SAYS = [
    "SIDE BY SIDE order 3: status 4, [0, 1, 1, 2]",
    "SIDE BY SIDE order 4: status 4, [0, 1, 1, 2, 3]",
    "THEN order 2: status 4, [0, 1, 1]",
    "FEEDBACK [2, 3, 3, 4, 4, 4]",
    "STOP",
]
ASYNCIO_SERVER = [NODES / "fibonacci_server.py", "--ros-args", "-p", "period:=0.1"]


def _asyncio_lines(out):
    return re.findall(r"^(?:\[asyncio_client\] )?((?:SIDE|THEN|FEEDBACK|STOP).*)$", out, re.M)


def test_an_asyncio_loop_awaits_rclpy_futures_as_in_ros2_examples(ported_run):
    """ros2/examples' client_asyncio: asyncio tasks await the action client's futures (which
    yield None to asyncio, as rclpy's do) while another task spins the node with spin_once
    (the main is the node's task: each spin_once steps logical time)."""
    files = [NODES / "asyncio_client.py", NODES / "fibonacci_server.py"]
    runs = [ported_run(*files, "--param", "fibonacci_server:period:=0.1") for _ in range(2)]
    assert _asyncio_lines(runs[0]) == ASYNCIO_SAYS
    server = [re.findall(r"^\[fibonacci_server\] ([A-Z]+ .*)$", out, re.M) for out in runs]
    assert server[0] == server[1] == ["GOAL order 3: accepted", "GOAL order 4: accepted",
                                      "EXECUTE order 3", "EXECUTE order 4",
                                      "GOAL order 2: accepted", "EXECUTE order 2"]  # fmt: skip


@pytest.mark.ros2
def test_the_asyncio_client_says_the_same_under_real_rclpy(rclpy_until_stop):
    out = rclpy_until_stop([NODES / "asyncio_client.py"], ASYNCIO_SERVER)
    assert _asyncio_lines("\n".join(out)) == ASYNCIO_SAYS


def test_a_future_yields_itself_only_to_the_task_that_drives_it():
    """What an awaiting coroutine yields: the future to HPRM's drive (which then waits for
    it), None to anyone else (asyncio polls again)."""
    import greenlet

    from hprm_bridge.rclpy import logical_sleep
    from hprm_bridge.rclpy.task import Future

    future = Future()

    async def waits():
        return await future

    outside = waits()
    assert outside.send(None) is None  # as an asyncio task steps it
    future.set_result(7)
    with pytest.raises(StopIteration) as end:
        outside.send(None)
    assert end.value.value == 7
    pending = Future()

    async def waits_pending():
        return await pending

    driven = waits_pending()
    me = greenlet.getcurrent()
    me.hprm_driving = 1  # as while drive() steps it
    try:
        assert driven.send(None) is pending
    finally:
        me.hprm_driving = 0
    driven.close()
    with pytest.raises(RuntimeError, match="awaited something not yet done"):
        logical_sleep.drive(waits_pending())  # outside a task nothing can wait for it
    future = Future()
    future.set_result(3)
    assert logical_sleep.drive(waits()) == 3


STEPWISE_SAYS = ["ACCEPTED True", "RESULT 4 [0, 1, 1, 2]", "TIMED OUT", "STOP"]


def _stepwise_lines(out):
    lines = re.findall(r"^(?:\[stepwise_client\] )?((?:ACCEPTED|RESULT|TIMED|STOP).*)$", out, re.M)
    return [line.split(" after")[0] for line in lines], lines


def test_a_main_waits_for_one_future_after_another_as_in_ros2_examples(ported_run):
    """ros2/examples' client_not_composable: spin_until_future_complete for the goal's
    acceptance, then again for its result; a third with a timeout of logical time."""
    out = ported_run(NODES / "stepwise_client.py", NODES / "fibonacci_server.py",
                     "--param", "fibonacci_server:period:=0.1")  # fmt: skip
    says, lines = _stepwise_lines(out)
    assert says == STEPWISE_SAYS
    assert "TIMED OUT after 250 ms" in lines  # exactly: logical time
    assert out.count("[fibonacci_server] EXECUTE order 3") == 1


@pytest.mark.ros2
def test_the_stepwise_client_says_the_same_under_real_rclpy(rclpy_until_stop):
    out = rclpy_until_stop([NODES / "stepwise_client.py"], ASYNCIO_SERVER)
    assert _stepwise_lines("\n".join(out))[0] == STEPWISE_SAYS
