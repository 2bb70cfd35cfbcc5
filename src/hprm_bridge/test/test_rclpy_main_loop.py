"""A node file's main loop (hprm_bridge.rclpy.main_loop), driving its node with spin_once
or beside a spin thread: the loop's passes run at the tags of the node's callbacks, of
its timeouts or of its sleeps, in logical time, the same every run; the loop ends with
its federation, and its failure fails the node."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

NODES = Path(__file__).parent / "nodes"


def _hprm_ros_run(*args, timeout=120):
    """``hprm-ros run`` with ``args``, to its end: (exit code, stdout and stderr)."""
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )  # fmt: skip
    return r.returncode, r.stdout + r.stderr


def _run(*args, talker=True, timeout=120):
    """``hprm-ros run`` of the looper (and the talker: two messages every 10 ms);
    (exit code, output, the looper's PASS lines as (ms from the start, got))."""
    files = [NODES / "spin_looper.py", *([NODES / "talker.py"] if talker else [])]
    code, out = _hprm_ros_run(*files, *args, timeout=timeout)
    return code, out, _passes(out)


def _passes(out: str) -> list[tuple[float, str]]:
    start = int(re.search(r"start time (\d+)", out).group(1))
    return [
        ((int(t) - start) / 1e6, got)
        for t, got in re.findall(r"^\[spin_looper\] PASS \d+ at (\d+) got (.*)$", out, re.M)
    ]


def _param(name, value):
    return ["--param", f"spin_looper:{name}:={value}"]


def test_a_loop_runs_after_each_tag_of_its_callbacks_the_same_every_run(coordination_args):
    runs = []
    for _ in range(2):
        code, out, passes = _run(*_param("passes", 5), *coordination_args)
        assert code == 0, out
        runs.append(passes)
    assert runs[0] == runs[1]
    # each talker tick (every 10 ms: two messages) wakes the loop once, before its timeout
    assert runs[0] == [(10.0 * i, f"['{i}a', '{i}b']") for i in range(1, 6)]
    assert "[spin_looper] END after 5 passes, ok True" in out


def test_timeouts_and_sleeps_in_the_loop_are_logical_time():
    code, out, passes = _run(*_param("passes", 3), *_param("timeout", 0.1), talker=False)
    assert code == 0, out
    assert passes == [(100.0, "[]"), (200.0, "[]"), (300.0, "[]")]
    # a zero timeout polls (nothing new: the tag's callbacks ran), then the loop sleeps
    code, out, passes = _run(*_param("passes", 3), *_param("timeout", 0.0), *_param("nap", 0.05))
    assert code == 0, out
    ticks = [f"'{i}a', '{i}b'" for i in range(1, 11)]
    assert passes == [(0.0, "[]"), (50.0, f"[{', '.join(ticks[:5])}]"),
                      (100.0, f"[{', '.join(ticks[5:])}]")]  # fmt: skip


def test_a_loop_that_polls_without_sleeping_lets_logical_time_advance():
    """Polled twice at one logical time, spin_once waits for the next callback."""
    code, out, passes = _run(*_param("passes", 4), *_param("timeout", 0.0))
    assert code == 0, out
    assert passes == [(0.0, "[]"), (10.0, "['1a', '1b']"), (10.0, "[]"), (20.0, "['2a', '2b']")]


def test_the_loop_ends_with_its_federation_and_spin_after_it_goes_on_to_the_stop():
    code, out, passes = _run("--timeout", "0.1 s")
    assert code == 0, out
    assert [t for t, _ in passes] == [10.0 * i for i in range(1, 11)], out
    assert "[spin_looper] END after 10 passes, ok False, 0 unprinted" in out
    code, out, passes = _run(
        *_param("passes", 2), *_param("then_spin", "true"), "--timeout", "0.2 s"
    )
    assert code == 0, out
    assert len(passes) == 2, out  # then rclpy.spin: ticks 3 to 20 delivered, none printed
    assert "[spin_looper] END after 2 passes, ok False, 36 unprinted" in out


def test_an_exception_in_the_loop_fails_the_node_as_a_callbacks_would():
    code, out, passes = _run(*_param("fail_at", 2))
    assert code != 0, out
    assert len(passes) == 2 and "RuntimeError: pass 2 failed" in out
    assert "federate spin_looper stopped after a reaction failed" in out
    assert "talker left" in out  # the rest of the federation stopped with it


def test_ctrl_c_stops_a_loop_cleanly(interrupted_run):
    out = interrupted_run(NODES / "spin_looper.py", NODES / "talker.py",
                          *_param("timeout", 1.0), after="PASS 5 ")  # fmt: skip
    assert re.search(r"\[spin_looper\] END after \d+ passes, ok False", out), out
    assert "spin_looper left" in out and "talker left" in out


def test_the_graph_of_a_spin_once_node_is_its_ports():
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "graph", NODES / "spin_looper.py",
         NODES / "talker.py"], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "talker -> spin_looper  /chatter [std_msgs/msg/String]" in r.stdout
    assert "PASS" not in r.stdout  # describing runs nothing past the first spin_once


@pytest.mark.ros2
def test_the_same_node_file_runs_under_real_rclpy():
    pytest.importorskip(
        "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
    )
    r = subprocess.run(
        [sys.executable, NODES / "spin_looper.py", "--ros-args", "-p", "passes:=3",
         "-p", "timeout:=0.05"], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(re.findall(r"^PASS \d+ at \d+ got \[\]$", r.stdout, re.M)) == 3, r.stdout
    assert "END after 3 passes, ok True, 0 unprinted" in r.stdout


def test_a_task_in_spin_once_resumes_after_a_later_tags_callbacks_or_its_timeout():
    """The Sleeper alone, with a clock the test moves: what the node's reactions do."""
    from hprm_bridge.rclpy.logical_sleep import Sleeper

    now = [0]
    sleeper = Sleeper(lambda: now[0], lambda: (now[0], 0))
    seen = []

    def loop():
        for timeout in (None, 100_000_000, 100_000_000):
            seen.append(now[0])
            sleeper.wait_for_callbacks(task, timeout)
        seen.append(("done", now[0]))

    sleeper.start(loop)
    task = sleeper._tasks[0]
    assert sleeper.take_wakeups() == [0]
    sleeper.wake()
    assert seen == [0]
    sleeper.note_callback()
    sleeper.resume_spinners()  # a callback at the tag it began waiting: not yet
    assert seen == [0]
    now[0] = 10
    sleeper.resume_spinners()  # a later tag, but no callback ran
    assert seen == [0]
    sleeper.note_callback()
    sleeper.resume_spinners()
    assert seen == [0, 10] and sleeper.take_wakeups() == [100_000_000]
    now[0] = 20
    sleeper.note_callback()
    sleeper.resume_spinners()  # a callback before the timeout: its wake-up is void
    assert seen == [0, 10, 20]
    now[0] = 100_000_010
    sleeper.wake()  # the void wake-up: nothing resumes
    assert seen == [0, 10, 20]
    now[0] = 100_000_020
    sleeper.wake()  # the timeout of the third wait
    assert seen == [0, 10, 20, ("done", 100_000_020)]


def test_the_tutorials_polling_service_client_runs_unchanged():
    """Foxy's tutorial client: call_async, then spin_once until the future is done."""
    code, out = _hprm_ros_run(NODES / "polling_client.py", NODES / "adder.py")
    assert code == 0, out
    start = re.search(r"start time (\d+)", out).group(1)
    # the reply comes two microsteps after the call, at the start time: one spin_once
    assert f"[polling_client] RESULT 2 + 3 = 5 after 1 spin_once at {start}" in out


@pytest.mark.ros2
def test_the_polling_client_runs_under_real_rclpy_too(bridge_env, stop_node):
    pytest.importorskip(
        "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
    )
    env = bridge_env("rclpy")  # its own DDS domain
    adder = subprocess.Popen([sys.executable, NODES / "adder.py"], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        r = subprocess.run([sys.executable, NODES / "polling_client.py"], env=env,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    finally:
        stop_node(adder)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^RESULT 2 \+ 3 = 5 after \d+ spin_once", r.stdout, re.M), r.stdout


def _rate_run(*args, timeout=120):
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", NODES / "rate_looper.py",
         NODES / "talker.py", *args],
        capture_output=True, text=True, timeout=timeout, env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )  # fmt: skip
    out = r.stdout + r.stderr
    start = int(re.search(r"start time (\d+)", out).group(1))
    beats = [
        ((int(t) - start) / 1e6, got)
        for t, got in re.findall(r"^\[rate_looper\] BEAT \d+ at (\d+) got (.*)$", out, re.M)
    ]
    return r.returncode, out, beats


def _ticks(first, last):
    return "[" + ", ".join(f"'{i}a', '{i}b'" for i in range(first, last + 1)) + "]"


def test_a_main_loop_beside_a_spin_thread_steps_at_its_rate(coordination_args):
    """The rclpy docs' Rate pattern: spin on a thread, loop in the main with rate.sleep."""
    runs = []
    for _ in range(2):
        code, out, beats = _rate_run(*coordination_args)
        assert code == 0, out
        runs.append(beats)
    assert runs[0] == runs[1]
    assert runs[0] == [(50.0 * i, _ticks(5 * i - 4, 5 * i)) for i in range(1, 5)]
    assert "[rate_looper] END after 5 passes" in out
    code, out, beats = _rate_run("--param", "rate_looper:nap:=0.03", "--param",
                                 "rate_looper:passes:=3")  # fmt: skip
    assert code == 0, out
    assert beats == [(30.0, _ticks(1, 3)), (60.0, _ticks(4, 6))]  # time.sleep: logical too


def test_a_main_that_only_joins_its_spin_thread_is_left_alone():
    code, out, _ = _rate_run("--param", "rate_looper:join_only:=true", "--timeout", "0.1 s")
    assert code == 0, out
    assert "[rate_looper] JOINED, ok False, 20 received" in out


def test_a_main_that_sets_up_for_a_while_still_steps_in_logical_time():
    """The spin thread joins once the main has slept (MAIN_SLEEP_GRACE_S at most): a
    main busy 0.4 s before its loop (longer than a join and the start delay take here)
    is still the node's task, at exactly its rate from the start."""
    code, out, beats = _rate_run("--param", "rate_looper:late:=0.4", "--param",
                                 "rate_looper:passes:=3")  # fmt: skip
    assert code == 0, out
    assert "first sleep came after the federation started" not in out, out
    assert beats == [(50.0, _ticks(1, 5)), (100.0, _ticks(6, 10))], out


def test_a_main_whose_first_sleep_comes_after_the_start_is_told_so():
    code, out, beats = _rate_run("--param", "rate_looper:late:=3.0", "--param",
                                 "rate_looper:passes:=3")  # fmt: skip
    assert code == 0, out
    assert "first sleep came after the federation started" in out
    assert len(beats) == 2 and "[rate_looper] END after 3 passes" in out


def test_ctrl_c_stops_a_rate_loop_cleanly(interrupted_run):
    out = interrupted_run(NODES / "rate_looper.py", NODES / "talker.py", "--param",
                          "rate_looper:passes:=100000", after="BEAT 5 ")  # fmt: skip
    assert re.search(r"\[rate_looper\] END after \d+ passes", out), out
    assert "rate_looper left" in out and "talker left" in out


@pytest.mark.ros2
def test_the_rate_loop_runs_under_real_rclpy_too():
    pytest.importorskip(
        "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
    )
    r = subprocess.run(
        [sys.executable, NODES / "rate_looper.py", "--ros-args", "-p", "passes:=3"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(re.findall(r"^BEAT \d+ at \d+ got \[\]$", r.stdout, re.M)) == 2, r.stdout
    assert "END after 3 passes" in r.stdout


WAITER = NODES / "waiter.py"
REFUSED = ("REFUSED wait_for_message(/chatter) after the node's federate started (its first "
           "wait_for_message or spin_once started it)")  # fmt: skip


def _waiter_lines(out):
    return re.findall(r"^(?:\[waiter\] )?((?:FIRST|AGAIN|SILENCE|REFUSED|STOP).*)$", out, re.M)


def test_wait_for_message_takes_the_next_message_in_logical_time():
    """The main waits as the node's task: the first message of the talker's first pair,
    then, subscribed again in the destroyed subscription's place, the first of the next
    tag's; a wait on a topic not subscribed at the start that nobody publishes times out,
    as under rclpy (test_rclpy_late_subscriptions.py)."""
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", WAITER, NODES / "talker.py",
         "--timeout", "10 s"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert _waiter_lines(r.stdout) == ["FIRST True 1a False", "AGAIN True 2a",
                                       "SILENCE False None", "STOP"]  # fmt: skip


def test_a_wait_on_a_topic_another_federate_publishes_is_refused():
    """Not waited on at the start, /chatter (as Int32) can come only through a port: the
    wait is refused, saying why (under rclpy the types would not match: it would time
    out)."""
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", WAITER, NODES / "talker.py",
         "--timeout", "10 s", "--param", "waiter:last_topic:=chatter"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert _waiter_lines(r.stdout)[2:] == [REFUSED, "STOP"], r.stdout


def test_wait_for_message_times_out_in_logical_time():
    """Nobody publishes: each wait returns (False, None) at exactly its logical time limit
    (0.25 s from the start, then 0.2 s more), and the main's end stops the federation
    there."""
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", WAITER, "--timeout", "10 s",
         "--param", "waiter:first_wait:=0.25"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert _waiter_lines(r.stdout) == ["FIRST False None True", "SILENCE False None", "STOP"]
    start = int(re.search(r"start time (\d+)", r.stdout).group(1))
    stop = int(re.search(r"stop requested by waiter at Tag\(time=(\d+)", r.stdout).group(1))
    assert stop - start == 450_000_000


def test_wait_for_message_outside_a_main_loop_is_refused(monkeypatch):
    from hprm_bridge import messages
    from hprm_bridge import rclpy as hrclpy
    from hprm_bridge.rclpy.node import Node, UnsupportedError
    from hprm_bridge.rclpy.wait_for_message import wait_for_message

    monkeypatch.setenv("HPRM_TIMEOUT", "10 ms")
    node = Node("spun")
    hrclpy.init()
    hrclpy.spin(node)  # on its own, until its timeout
    with pytest.raises(UnsupportedError, match=r"wait_for_message\(/x\) outside the node file"):
        wait_for_message(messages.message_class("std_msgs/msg/String"), node, "x")


@pytest.mark.ros2
def test_wait_for_message_returns_the_same_under_real_rclpy(rclpy_until_stop):
    out = rclpy_until_stop([WAITER], [NODES / "talker.py"])
    lines = _waiter_lines("\n".join(out))
    assert len(lines) == 4 and lines[2:] == ["SILENCE False None", "STOP"], out
    assert re.fullmatch(r"FIRST True \d+[ab] False", lines[0]), out
    assert re.fullmatch(r"AGAIN True \d+[ab]", lines[1]), out


UNSPUN = NODES / "unspun_talker.py"


def test_a_node_file_that_never_spins_joins_at_its_first_sleep(ported_run):
    """The old-school publisher: a main that publishes and sleeps, no spin anywhere."""
    runs = []
    for _ in range(2):
        out = ported_run(UNSPUN, NODES / "listener.py")
        sent = re.findall(r"^\[unspun_talker\] (SENT .*)$", out, re.M)
        heard = re.findall(r"^\[listener\] (HEARD .*)$", out, re.M)
        runs.append(sent)
        assert heard == [f"HEARD unspun {i}" for i in range(5)], out
    # the first pass ran before the start (in wall-clock time), the rest a sleep apart
    # in logical time: the same every run from the second on
    assert runs[0][2:] == runs[1][2:] == [f"SENT {i}, 100 ms after the last" for i in (2, 3, 4)]
    assert "[unspun_talker] END after 5 passes, ok True" in out  # its end stops the rest


def test_a_never_spinning_loop_ends_with_its_federation(ported_run):
    out = ported_run(UNSPUN, NODES / "listener.py", "--param", "unspun_talker:passes:=1000",
                     timeout="0.35 s")  # fmt: skip
    # woken at the stop, rclpy.ok() is already False: no pass after it
    assert "[unspun_talker] END after 4 passes, ok False" in out
    assert "[listener] HEARD unspun 3" in out and "HEARD unspun 4" not in out


def test_a_never_spinning_main_with_two_nodes_is_refused_at_its_first_sleep(tmp_path):
    """Its federation would wait for a node that never joins: the first sleep says so."""
    two = tmp_path / "two_unspun.py"
    two.write_text(
        textwrap.dedent("""
        import time
        import rclpy
        rclpy.init()
        a, b = rclpy.create_node("left"), rclpy.create_node("right")
        while rclpy.ok():
            time.sleep(0.1)
    """)
    )
    code, out = _hprm_ros_run(two, "--timeout", "5 s")
    assert code != 0
    assert "sleeps with 2 nodes made (left, right) and none spun" in out


def test_a_stop_signal_while_joining_interrupts_a_never_spinning_main(tmp_path):
    """Another node fails before the federation starts; the launcher then stops the
    rest. A main still waiting to join gets KeyboardInterrupt, as under rclpy, and its
    ``except KeyboardInterrupt:`` (ros2/demos' data_publisher publishes a last message
    and sleeps) runs to its end in wall-clock time: no turns are left to wait for."""
    failing = tmp_path / "failing.py"
    failing.write_text("import time\ntime.sleep(2)\nraise SystemExit(3)\n")  # once it waits
    code, out = _hprm_ros_run(UNSPUN, failing, "--param", "unspun_talker:nap:=0.5",
                              "--timeout", "5 s")  # fmt: skip
    assert code == 3, out
    assert "[unspun_talker] INTERRUPTED, ok False" in out
    assert "[unspun_talker] SLEPT AFTER THE INTERRUPT" in out  # not killed in that sleep
    assert "AssemblyError" not in out and "not part of a running program" not in out


def test_the_graph_of_a_never_spinning_node_is_its_ports():
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "graph", UNSPUN, NODES / "listener.py"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "unspun_talker -> listener  /chatter [std_msgs/msg/String]" in r.stdout


@pytest.mark.ros2
def test_the_never_spinning_node_file_runs_under_real_rclpy_too(rclpy_until_stop):
    lines = rclpy_until_stop([UNSPUN, "--ros-args", "-p", "passes:=3"])
    sent = [line for line in lines if line.startswith("SENT")]
    assert [s.split(",")[0] for s in sent] == ["SENT 0", "SENT 1", "SENT 2"], lines
    assert "END after 3 passes, ok True" in lines


ENDLESS = {
    "publish_and_sleep": """
        import time
        import rclpy
        from std_msgs.msg import String
        rclpy.init()
        node = rclpy.create_node("endless")
        pub = node.create_publisher(String, "chatter", 10)
        n = 0
        while True:  # never looks at rclpy.ok()
            pub.publish(String(data=f"endless {n}"))
            n += 1
            time.sleep(0.1)
    """,
    "sleep_only": """
        import time
        import rclpy
        rclpy.init()
        node = rclpy.create_node("endless")
        node.create_timer(0.1, lambda: print("TICK", flush=True))
        while True:
            time.sleep(0.1)
    """,
    "spin_once": """
        import rclpy
        rclpy.init()
        node = rclpy.create_node("endless")
        while True:
            rclpy.spin_once(node, timeout_sec=0.1)
    """,
}


@pytest.mark.parametrize("shape", sorted(ENDLESS))
def test_a_main_loop_that_never_looks_at_ok_ends_with_its_federation(tmp_path, shape):
    """Its next publish, spin_once or sleep after the stop raises ExternalShutdownException
    (rclpy's publish and spin_once raise once shut down), which ends the main: the
    federate exits as stopped, not failed, and the run ends instead of waiting for it."""
    node = tmp_path / "endless.py"
    node.write_text(textwrap.dedent(ENDLESS[shape]))
    code, out = _hprm_ros_run(node, NODES / "listener.py", "--timeout", "0.35 s")
    assert code == 0, out
    assert "the federation stopped, which ended the main" in out
    assert "endless left" in out and "listener left" in out
    if shape == "publish_and_sleep":
        assert "[listener] HEARD endless 3" in out and "HEARD endless 4" not in out


def test_a_thread_of_the_node_file_may_step_its_node(ported_run):
    """The thread that made the node steps it with spin_once (its turns); the main that
    waits for it sleeps in wall-clock time, and its end stops the federation."""
    for _ in range(2):
        out = ported_run(NODES / "thread_stepper.py", NODES / "talker.py", timeout="5 s")
        assert "[thread_stepper] HEARD ['1a', '1b', '2a', '2b', '3a', '3b']" in out, out
        assert "[thread_stepper] STOP" in out


@pytest.mark.ros2
def test_the_thread_stepper_runs_under_real_rclpy_too(rclpy_until_stop):
    lines = rclpy_until_stop([NODES / "thread_stepper.py"], [NODES / "talker.py"])
    assert len(lines) == 2 and lines[0].startswith("HEARD [") and lines[1] == "STOP", lines
