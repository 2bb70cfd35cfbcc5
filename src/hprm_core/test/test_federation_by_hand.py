"""Federates placed by hand, as a launch system or other hosts would start them: ``hprm rti``
and one ``hprm federate`` per federate, over Unix sockets or TCP. Starting order, clocks,
versions, signals, a dying peer, silent connections, and large arrays streamed between
hosts."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
EXAMPLES = HERE.parent / "examples"

pytestmark = pytest.mark.timeout(600)


def _rti_cmd(address, federates, federation):
    """``hprm rti`` for ``federates`` federates, as a launch system would run it."""
    return [sys.executable, "-m", "hprm_core.cli", "rti", "--address", address,
            "--federates", str(federates), "--federation", federation]  # fmt: skip


def _federate_cmd(program, name, address, federation, *extra):
    """``hprm federate`` as a launch system would run it."""
    cli = [sys.executable, "-m", "hprm_core.cli"]
    return [
        *cli,
        "federate",
        str(program),
        name,
        "--rti",
        address,
        "--federation",
        federation,
        *extra,
    ]


def _run_by_hand_over_tcp(program, names, federation, timeout=60, secret_file=None, **env):
    """``hprm rti`` on TCP and ``hprm federate`` for each of ``names``, placed
    by hand as a launch system (or other hosts) would; every process must
    exit 0. Returns each federate's output, by name. Nothing is left running.
    ``secret_file``: every process reads the secret there (none in the environment)."""
    env = dict(os.environ, HPRM_SECRET="tcp-secret", PYTHONUNBUFFERED="1", **env)
    extra = []
    if secret_file:
        del env["HPRM_SECRET"]
        extra = ["--secret-file", str(secret_file)]
    popen = dict(env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rti = subprocess.Popen(
        [*_rti_cmd("tcp:127.0.0.1:0", len(names), federation), *extra],
        **popen,
    )  # fmt: skip
    feds = []
    try:
        address = next(line.split()[1] for line in rti.stdout if line.startswith("RTI_ADDRESS"))
        assert address.startswith("tcp:127.0.0.1:")
        feds = [
            subprocess.Popen(_federate_cmd(program, n, address, federation, *extra), **popen)
            for n in names
        ]
        outs = dict(zip(names, (f.communicate(timeout=timeout)[0] for f in feds), strict=True))
        assert [f.returncode for f in feds] == [0] * len(names), outs
        assert rti.wait(timeout=30) == 0
    finally:
        for p in [rti, *feds]:
            if p.poll() is None:
                p.kill()
                p.wait()
    return outs


def test_the_rti_and_the_federates_read_the_secret_from_a_file(tmp_path):
    """Out of the environment (which /proc shows to the same user): --secret-file, for
    the RTI as for each federate; a missing file is a usage error naming it."""
    secret = tmp_path / "secret"
    secret.write_text("file-secret\n")
    secret.chmod(0o600)
    outs = _run_by_hand_over_tcp(
        EXAMPLES / "federated_pipeline.py", ("sensor", "processor", "actuator"), "f5",
        secret_file=secret,
    )  # fmt: skip
    assert "actuator: 10 commands applied" in outs["actuator"], outs
    missing = tmp_path / "nope"
    r = subprocess.run([*_rti_cmd("tcp:127.0.0.1:0", 1, "f6"), "--secret-file", str(missing)],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 2 and f"--secret-file: No such file or directory: {missing}" in r.stderr


def test_federates_started_by_hand_over_tcp_share_the_rtis_clock():
    """`hprm rti` and `hprm federate` placed by hand, as a launch system would.
    On the RTI's host they take no clock offset (a measured one would be noise)."""
    outs = _run_by_hand_over_tcp(
        EXAMPLES / "federated_pipeline.py", ("sensor", "processor", "actuator"), "f1"
    )
    for name, out in outs.items():
        assert f"{name}: on the RTI's host (127.0.0.1), no clock offset" in out, out
        assert "clock offset to the RTI" not in out, out
    assert "actuator: 10 commands applied" in outs["actuator"]


def test_federates_started_before_their_rti_wait_for_it(tmp_path):
    """Launch systems start processes in any order: federates that come up
    first wait for the RTI (and say so) instead of failing."""
    env = dict(os.environ, HPRM_SECRET="s3cret", PYTHONUNBUFFERED="1")
    address = f"unix:{tmp_path}/rti.sock"
    popen = dict(env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    names = ("sensor", "processor", "actuator")
    feds = [
        subprocess.Popen(
            _federate_cmd(EXAMPLES / "federated_pipeline.py", n, address, "f2"), **popen
        )
        for n in names
    ]
    rti = None
    heads = ["" for _ in feds]
    try:
        for i, f in enumerate(feds):  # each is up and retrying before the RTI exists
            for line in f.stdout:
                heads[i] += line
                if "waiting for the RTI" in line:
                    break
        assert all(f.poll() is None for f in feds), heads
        rti = subprocess.Popen(
            _rti_cmd(address, 3, "f2"),
            **popen,
        )  # fmt: skip
        outs = [h + f.communicate(timeout=60)[0] for h, f in zip(heads, feds, strict=True)]
        assert [f.returncode for f in feds] == [0, 0, 0], outs
        assert rti.wait(timeout=30) == 0
    finally:
        for p in [*feds, *([rti] if rti else [])]:
            if p.poll() is None:
                p.kill()
                p.wait()
    for name, out in zip(names, outs, strict=True):
        assert f"{name}: waiting for the RTI at {address}" in out, out
    assert "actuator: 10 commands applied" in outs[2]


def test_a_federate_from_another_program_version_is_refused_and_the_rest_run_on(tmp_path):
    """One federate started from an edited copy of the program (another
    `after` delay): the RTI refuses it, naming the mismatch, and the
    federation still runs once the right federate joins."""
    env = dict(os.environ, HPRM_SECRET="s3cret", PYTHONUNBUFFERED="1")
    address = f"unix:{tmp_path}/rti.sock"
    program = EXAMPLES / "federated_pipeline.py"
    edited = tmp_path / "federated_pipeline_v2.py"
    text = program.read_text()
    assert 'after="5 ms"' in text
    edited.write_text(text.replace('after="5 ms"', 'after="7 ms"'))
    popen = dict(env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rti = subprocess.Popen(
        _rti_cmd(address, 3, "f2"),
        **popen,
    )  # fmt: skip
    procs = [rti]
    try:
        procs += [subprocess.Popen(_federate_cmd(program, n, address, "f2"), **popen)
                  for n in ("sensor", "processor")]  # fmt: skip
        for line in rti.stdout:  # they join first: theirs is the structure
            if "joined (2/3)" in line:
                break
        wrong = subprocess.run(
            _federate_cmd(edited, "actuator", address, "f2"), env=env, capture_output=True,
            text=True, timeout=60,
        )  # fmt: skip
        assert wrong.returncode == 2, wrong.stderr
        assert "different federation structure (another program version?)" in wrong.stderr
        right = subprocess.Popen(_federate_cmd(program, "actuator", address, "f2"), **popen)
        procs.append(right)
        outs = [p.communicate(timeout=60)[0] for p in procs[1:]]
        assert [p.returncode for p in procs[1:]] == [0, 0, 0], outs
        assert rti.wait(timeout=30) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert "actuator: 10 commands applied" in outs[2]


def test_a_federate_signalled_while_waiting_for_its_rti_stops_at_once(tmp_path):
    env = dict(os.environ, HPRM_SECRET="s3cret")
    address = f"unix:{tmp_path}/rti.sock"
    cmd = _federate_cmd(EXAMPLES / "federated_pipeline.py", "sensor", address, "f2")
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in p.stdout:
            if "waiting for the RTI" in line:
                break
        p.send_signal(signal.SIGTERM)
        out = p.communicate(timeout=5)[0]  # not the 10 s it would wait for the RTI
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 3, out
    assert "federate sensor stopped: interrupted before the federation started" in out
    assert os.listdir(tmp_path) == []


def test_the_rti_signalled_twice_still_cleans_up(tmp_path):
    """Process managers repeat SIGTERM: the second must not cut the RTI's
    clean-up short (its socket file stayed behind, with a traceback)."""
    env = dict(os.environ, HPRM_SECRET="s3cret")
    address = f"unix:{tmp_path}/rti.sock"
    p = subprocess.Popen(
        _rti_cmd(address, 2, "f3"),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        for line in p.stdout:
            if line.startswith("RTI_ADDRESS"):
                break
        p.send_signal(signal.SIGTERM)
        p.send_signal(signal.SIGTERM)
        out = p.communicate(timeout=10)[0]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 128 + signal.SIGTERM, out
    assert "Traceback" not in out
    assert os.listdir(tmp_path) == []


def test_a_federate_without_an_rti_gives_up_with_a_clear_error(tmp_path):
    env = dict(os.environ, HPRM_SECRET="s3cret")
    address = f"unix:{tmp_path}/rti.sock"
    program = EXAMPLES / "federated_pipeline.py"
    cmd = _federate_cmd(program, "actuator", address, "f2", "--rti-wait", "0.5")
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 3, p.stderr
    assert f"federate actuator stopped: no RTI at {address} after 0.5 s" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert os.listdir(tmp_path) == []  # its store-channel socket is gone too


def test_two_federates_streaming_large_arrays_to_each_other_over_tcp_do_not_deadlock():
    """Over TCP the 4 MB arrays travel inside the frames, both ways at once:
    both federates used to block in send with full sockets, neither reading.
    Now a data link holds back what the socket cannot take (a writer thread
    sends it) and the scheduler keeps reading."""
    outs = _run_by_hand_over_tcp(
        PROGRAMS / "exchange.py", ("a", "b"), "x", EX_COORDINATION="decentralized"
    )
    assert "a got [0, 1, 2, 3, 4]" in outs["a"] and "b got [0, 1, 2, 3, 4]" in outs["b"], outs


def test_large_arrays_are_streamed_transparently_between_hosts_over_tcp():
    """Over TCP there is no shared memory: the same program still works, the
    buffers travel inside the frames (and nothing claims to be zero-copy)."""
    outs = _run_by_hand_over_tcp(
        PROGRAMS / "zero_copy.py", ("producer", "relay", "sink", "safe_sink"), "z", timeout=120
    )
    assert outs["relay"].count("zero_copy=False values=ok") == 5, outs["relay"]
    assert outs["sink"].count("SINK k=") == 5 and outs["safe_sink"].count("type=dict") == 5
    m = re.search(r"socket bytes (\d+)", outs["producer"])
    assert m and int(m.group(1)) > 10 * 1_000_000  # 2 links x 5 x 1 MB went through the socket


def _by_hand(tmp_path, program, names, federation, *extra, env=None, rti_address=None):
    """``hprm rti`` and one ``hprm federate`` per name, placed by hand (as a
    launch system would), peer sockets in ``tmp_path``. Returns (rti, feds)."""
    env = dict(os.environ, HPRM_SECRET="by-hand", PYTHONUNBUFFERED="1", **(env or {}))
    popen = dict(env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rti = subprocess.Popen(
        _rti_cmd(rti_address or f"unix:{tmp_path}/rti.sock", len(names), federation),
        **popen,
    )  # fmt: skip
    address = next(line.split()[1] for line in rti.stdout if line.startswith("RTI_ADDRESS"))
    feds = {
        n: subprocess.Popen(
            _federate_cmd(program, n, address, federation, "--listen-dir", str(tmp_path), *extra),
            **popen,
        )
        for n in names
    }
    return rti, feds, address


def _read_until(proc, text, seen):
    for line in proc.stdout:
        seen.append(line)
        if text in line:
            return
    raise AssertionError(f"{text!r} never came:\n{''.join(seen)}")


def _kill_all(*procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
@pytest.mark.parametrize("victim", ["sensor", "processor"])
def test_a_killed_federate_stops_federates_placed_by_hand_long_before_their_timeout(
    tmp_path, coordination, victim
):
    """SIGKILL one federate of a hand-placed federation whose timeout is an
    hour away: every survivor stops on its own (it used to run on until the
    timeout: a federate with no events of its own kept waiting for the old
    stop tag), exits non-zero naming the dead one, and nothing is left in the
    listen directory. (How fast: the README's reliability section; here the
    bound only has to tell "stopped" from "ran to its timeout".)"""
    rti, feds, _ = _by_hand(
        tmp_path, EXAMPLES / "federated_pipeline.py", ("sensor", "processor", "actuator"),
        "dead1", "--timeout", "1 h", env={"HPRM_COORDINATION": coordination},
    )  # fmt: skip
    try:
        seen = []
        _read_until(feds["actuator"], "speed", seen)  # commands flow end to end
        feds[victim].kill()
        outs = {}
        for name, p in feds.items():
            if name != victim:
                outs[name] = p.communicate(timeout=60)[0]
                assert p.returncode == 3, outs[name]
        rti_out = rti.communicate(timeout=60)[0]
    finally:
        _kill_all(rti, *feds.values())
    vid = ("sensor", "processor").index(victim)
    for name, out in outs.items():
        assert f"federate {name} stopped: federate {victim} (id {vid}) failed" in out, out
    assert rti.returncode == 1
    assert f"federate {victim} (id {vid}) failed" in rti_out
    assert rti_out.count("ERROR") == 1, rti_out  # the survivors "stopped after" it
    assert sorted(os.listdir(tmp_path)) == [], os.listdir(tmp_path)


def test_a_clean_run_placed_by_hand_leaves_no_socket_file(tmp_path):
    rti, feds, _ = _by_hand(
        tmp_path, EXAMPLES / "federated_pipeline.py", ("sensor", "processor", "actuator"), "clean"
    )
    try:
        codes = [p.wait(timeout=60) for p in feds.values()]
        assert rti.wait(timeout=60) == 0 and codes == [0, 0, 0]
    finally:
        _kill_all(rti, *feds.values())
    assert os.listdir(tmp_path) == []


def test_a_killed_rti_leaves_no_socket_file(tmp_path):
    rti, feds, _ = _by_hand(
        tmp_path, EXAMPLES / "federated_pipeline.py", ("sensor", "processor", "actuator"),
        "rtikill", "--timeout", "1 h",
    )  # fmt: skip
    try:
        _read_until(feds["actuator"], "speed", [])
        rti.kill()
        outs = [p.communicate(timeout=60)[0] for p in feds.values()]
    finally:
        _kill_all(rti, *feds.values())
    assert all("lost the RTI" in out for out in outs), outs
    assert os.listdir(tmp_path) == []


def test_silent_connections_to_the_rti_over_tcp_neither_block_nor_cost_a_thread_each(tmp_path):
    """100 silent connections and a one-byte-a-second sender at the RTI's
    TCP port, then the federation is placed by hand: it joins and runs to
    its end, and the RTI never holds more than its bounded handshakes."""
    rti, feds, address = None, {}, None
    env = dict(os.environ, HPRM_SECRET="by-hand", PYTHONUNBUFFERED="1")
    rti = subprocess.Popen(
        _rti_cmd("tcp:127.0.0.1:0", 3, "silent"),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    silent = []
    try:
        address = next(line.split()[1] for line in rti.stdout if line.startswith("RTI_ADDRESS"))
        host, port = address[4:].rsplit(":", 1)
        silent = [socket.create_connection((host, int(port))) for _ in range(100)]
        slow = socket.create_connection((host, int(port)))
        slow.send(b"H")
        silent.append(slow)
        time.sleep(0.5)  # let the gatekeeper admit (and drop) what it can
        with open(f"/proc/{rti.pid}/status") as f:
            threads = int(next(x for x in f if x.startswith("Threads:")).split()[1])
        assert threads <= 16 + 4, f"the RTI runs {threads} threads"
        names = ("sensor", "processor", "actuator")
        popen = dict(env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        program = EXAMPLES / "federated_pipeline.py"
        feds = {
            n: subprocess.Popen(_federate_cmd(program, n, address, "silent"), **popen)
            for n in names
        }
        outs = {n: p.communicate(timeout=120)[0] for n, p in feds.items()}
        assert [p.returncode for p in feds.values()] == [0, 0, 0], outs
        assert "actuator: 10 commands applied" in outs["actuator"]
    finally:
        for s in silent:
            s.close()
        _kill_all(*feds.values())
        if rti.poll() is None:
            rti.terminate()
        rti_out = rti.communicate(timeout=60)[0]
    assert "dropped for a newer one" in rti_out, rti_out
