"""Federates started as separate executables, each knowing only its own
ports: they describe themselves to the RTI, which matches them by topic
(hprm_core.federate, hprm_core.assembly). Real processes and sockets."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
PROGRAMS = HERE / "programs"
CLI = [sys.executable, "-m", "hprm_core.cli"]


def _start(tmp_path, federates, *rti_args, env=None, names=None):
    """``hprm rti --federates NAME,...`` and one ``hprm federate FILE NAME`` per
    (name, file), each its own program file. Returns (rti, {name: process})."""
    env = dict(os.environ, HPRM_SECRET="solo", PYTHONUNBUFFERED="1", **(env or {}))
    popen = dict(env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    names = ",".join(names or federates)
    rti = subprocess.Popen(
        [*CLI, "rti", "--address", f"unix:{tmp_path}/rti.sock", "--federates", names,
         "--federation", "solo", *rti_args],
        **popen,
    )  # fmt: skip
    address = next(line.split()[1] for line in rti.stdout if line.startswith("RTI_ADDRESS"))
    feds = {}
    for name, program in federates.items():  # a program, or (program, its own env)
        program, own = program if isinstance(program, tuple) else (program, {})
        feds[name] = subprocess.Popen(
            _federate(program, name, address, tmp_path), **(popen | {"env": env | own})
        )
    return rti, feds


def _federate(program, name, address, listen_dir):
    return [
        *CLI,
        "federate",
        str(PROGRAMS / program),
        name,
        "--rti",
        address,
        "--federation",
        "solo",
        "--listen-dir",
        str(listen_dir),
    ]


def _finish(rti, feds):
    try:
        outs = {name: p.communicate(timeout=60)[0] for name, p in feds.items()}
        outs["rti"] = rti.communicate(timeout=60)[0]
    finally:
        for p in (rti, *feds.values()):
            if p.poll() is None:
                p.kill()
                p.wait()
    codes = {name: p.returncode for name, p in feds.items()} | {"rti": rti.returncode}
    return codes, outs


@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
def test_two_executables_are_connected_by_topic(tmp_path, coordination):
    """counter publishes /count from its port `out`, printer subscribes from
    its port `numbers`: neither file names the other, the RTI connects them."""
    rti, feds = _start(
        tmp_path,
        {"counter": "solo_counter.py", "printer": "solo_printer.py"},
        "--coordination",
        coordination,
    )
    codes, outs = _finish(rti, feds)
    assert codes == {"counter": 0, "printer": 0, "rti": 0}, outs
    got = [line for line in outs["printer"].splitlines() if line.startswith("PRINTER")]
    # Timer at 0, 10, ..., 50 ms: values 1..6, each at its sender's tag.
    assert got == [f"PRINTER got {k + 1} at {10 * k} ms" for k in range(6)], outs["printer"]
    assert "counter.out -> printer.numbers (topic /count)" in outs["rti"], outs["rti"]
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
def test_several_publishers_of_one_topic_all_reach_its_subscriber_in_federate_order(
    tmp_path, coordination
):
    """Two counters publish /count at the same tags (as two ROS 2 nodes may
    publish one topic): the printer gets both counters' values at every tag,
    in the order of the federates' ids whatever order they arrive in, in
    every run (hprm_core.fan_in). A port set to a tuple (what a ported ROS 2
    node's publisher sets) is concatenated."""
    for _ in range(3):
        rti, feds = _start(
            tmp_path,
            {"left": ("solo_counter.py", {"SOLO_LABEL": "left"}),
             "right": ("solo_counter.py", {"SOLO_LABEL": "right"}),
             "printer": "solo_printer.py"},
            "--coordination", coordination,
        )  # fmt: skip
        codes, outs = _finish(rti, feds)
        assert codes == {"left": 0, "right": 0, "printer": 0, "rti": 0}, outs
        got = [line for line in outs["printer"].splitlines() if line.startswith("PRINTER")]
        assert got == [
            f"PRINTER got ('left {k + 1}', 'right {k + 1}') at {10 * k} ms" for k in range(6)
        ], outs["printer"]
    assert os.listdir(tmp_path) == []


def test_a_type_mismatch_on_a_topic_is_refused_naming_both_ends(tmp_path):
    rti, feds = _start(
        tmp_path,
        {"counter": "solo_counter.py", "printer": "solo_printer.py"},
        env={"SOLO_TYPE": "std_msgs/msg/String"},
    )
    codes, outs = _finish(rti, feds)
    why = (
        "topic '/count': counter.out publishes std_msgs/msg/String "
        "but printer.numbers subscribes with builtins.int"
    )
    assert codes == {"counter": 3, "printer": 3, "rti": 1}, outs
    for out in outs.values():
        assert why in out, out
    assert "PRINTER" not in outs["printer"]
    assert os.listdir(tmp_path) == []


def test_a_federate_name_the_rti_was_not_given_is_refused_at_once(tmp_path):
    rti, feds = _start(tmp_path, {"stranger": "solo_printer.py"}, names=["counter", "printer"])
    try:
        out = feds["stranger"].communicate(timeout=60)[0]
    finally:
        rti.terminate()
    _finish(rti, {})
    assert feds["stranger"].returncode == 2, out  # refused: as for a wrong secret
    assert "no federate 'stranger' in this federation (federates: counter, printer)" in out, out
    assert os.listdir(tmp_path) == []


def test_rti_options_are_checked_before_it_listens():
    env = dict(os.environ, HPRM_SECRET="solo")
    for args, why in [
        (["--federates", "a,,b"], "empty federate name"),
        (["--federates", "a,a"], "federate 'a' is named twice"),
        (["--federates", "2", "--after", "/x=1 ms"], "go with --federates NAME"),
        (["--federates", "a,b", "--after", "/x"], "expected TOPIC=DURATION"),
        (["--federates", "a,b", "--after", "/x=-1 s"], "a duration must be >= 0"),
    ]:
        r = subprocess.run(
            [*CLI, "rti", "--address", "unix:/nonexistent/rti.sock", "--federation", "f", *args],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert r.returncode == 2 and why in r.stderr, (args, r.stderr)


def test_an_unmatched_topic_leaves_its_port_unconnected(tmp_path):
    """As with ROS 2: a subscription nobody publishes to is not an error; the
    federation runs (to its timeout) with no connection between the two."""
    rti, feds = _start(
        tmp_path,
        {"counter": "solo_counter.py", "printer": "solo_printer.py"},
        env={"SOLO_TOPIC": "/elsewhere"},
    )
    codes, outs = _finish(rti, feds)
    assert codes == {"counter": 0, "printer": 0, "rti": 0}, outs
    assert "PRINTER" not in outs["printer"]


def test_a_boundary_federate_that_would_feed_an_input_through_is_refused():
    """The RTI counts no zero-delay path through a boundary federate (a
    gateway), so one whose reaction reads an input and writes an output is
    refused before it joins, naming the reaction and both ports."""
    from hprm_core import Input, Output, PhysicalAction, Reactor
    from hprm_core.federate import _check_boundary
    from hprm_core.federation import FederationError

    def gateway(feed_through):
        r = Reactor()
        r.attach("outof0", Input(topic="/status"))
        r.attach("into0", Output(topic="/cmd"))
        r.attach("arrived", PhysicalAction())
        r.add_reaction(lambda: None, "arrived", effects="into0", name="enter")
        r.add_reaction(lambda: None, "outof0", effects="into0" if feed_through else (),
                       name="leave")  # fmt: skip
        return r

    _check_boundary(gateway(False), "gw")  # physical action -> output: fine
    with pytest.raises(FederationError, match="reaction leave reads outof0 and writes into0"):
        _check_boundary(gateway(True), "gw")


def test_a_boundary_federate_process_needs_its_rti_and_the_secret(monkeypatch, capsys):
    """The flags every boundary process takes (gateway, bag player, recorder), and the
    secret from the environment only: refused with the reason before anything connects."""
    import argparse

    from hprm_core.federate import add_boundary_arguments, boundary_main

    p = argparse.ArgumentParser(prog="boundary")
    p.add_argument("name")
    add_boundary_arguments(p)
    with pytest.raises(SystemExit):
        p.parse_args(["gw", "--federation", "f"])
    assert "--rti" in capsys.readouterr().err
    args = p.parse_args(["gw", "--rti", "unix:/nowhere", "--federation", "f"])
    monkeypatch.delenv("HPRM_SECRET", raising=False)
    with pytest.raises(SystemExit) as exc:
        boundary_main(p, args, lambda ports, graph: pytest.fail("built without a secret"))
    assert exc.value.code == 2 and "set HPRM_SECRET" in capsys.readouterr().err


def test_a_stop_signal_that_comes_after_the_run_ended_does_not_interrupt_the_exit():
    """The launch's SIGTERM, delayed on a loaded machine, can reach a federate whose
    run already ended on a stop another federate asked for, while it resigns and
    closes: a stop, as during the run, not "interrupted again while stopping" (seen
    in CI). A real scheduler that has run, and a real signal to this process."""
    import signal
    import time

    from hprm_core import Reactor, reaction
    from hprm_core.environment import Environment
    from hprm_core.federate import _stop_on_signals

    class Once(Reactor):
        @reaction("startup")
        def go(self):
            pass

    env = Environment(Once(), timeout=0)
    env.run()
    assert env.scheduler.start_time != 0 and not env.scheduler.running
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    restore = _stop_on_signals(env.scheduler, "late")
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 5
        while signal.getsignal(signal.SIGTERM) is not saved[signal.SIGTERM]:
            assert time.monotonic() < deadline, "the handler never ran"
            time.sleep(0.001)  # the handler runs in this thread, between two of these
    except KeyboardInterrupt:
        pytest.fail("a SIGTERM after the run's end interrupted the federate's exit")
    finally:
        restore()
        for s, handler in saved.items():
            signal.signal(s, handler)
