"""Fixtures for tests that put real DDS traffic between separate processes.

Each test gets its own random ``ROS_DOMAIN_ID`` (below the ephemeral port
range, see ``random_domain_id``) so parallel runs do not see each other, and
every process is kept on loopback (``ROS_LOCALHOST_ONLY=1`` for our client, a
127.0.0.1-only Cyclone config for plain cyclonedds peers).
Peers that may multicast on every interface (dora-rs/RustDDS) run inside a
private network namespace (``unshare -n``) instead.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hprm_bridge.wire.dds_config import random_domain_id

HERE = Path(__file__).resolve().parent
PEER = HERE / "peer.py"
_used_domains: set[int] = set()


def peer_env(domain: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CYCLONEDDS", "ROS_"))}
    env.update(ROS_DOMAIN_ID=str(domain), ROS_LOCALHOST_ONLY="1", PYTHONUNBUFFERED="1")
    return env


class Peer:
    """A peer process; ``result()`` waits for its final JSON line."""

    def __init__(self, role: str, args: dict[str, Any], domain: int) -> None:
        self.role = role
        self.proc = subprocess.Popen(
            [sys.executable, str(PEER), role, json.dumps({"domain": domain, **args})],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=peer_env(domain),
        )
        self.events: list[dict[str, Any]] = []

    def wait_event(self, name: str, timeout: float = 30) -> dict[str, Any]:
        """Read lines until ``{"event": name}`` (the process keeps running)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            ev = json.loads(line)
            self.events.append(ev)
            if ev.get("event") == name:
                return ev
        _, err = self.proc.communicate(timeout=timeout)
        raise AssertionError(f"peer {self.role} exited before {name!r}: {err[-3000:]}")

    def result(self, timeout: float = 60) -> dict[str, Any]:
        out, err = self.proc.communicate(timeout=timeout)
        for line in out.splitlines():
            self.events.append(json.loads(line))
        assert self.proc.returncode == 0, f"peer {self.role} failed: {err[-3000:]}"
        done = [e for e in self.events if e.get("event") == "done"]
        assert done, f"peer {self.role} reported nothing: {err[-3000:]}"
        return done[-1]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def _fresh_domain() -> int:
    """A domain id no earlier test of this run took, while there are such ids below the
    ephemeral port range (about a hundred); then the run's ids again, from scratch: the
    tests run one at a time and each stops its processes, so an id given long ago is
    free again."""
    try:
        d = random_domain_id(avoid=_used_domains)
    except RuntimeError:
        _used_domains.clear()
        d = random_domain_id()
    _used_domains.add(d)
    return d


@pytest.fixture
def domain() -> int:
    """A ROS domain id no other test of this run uses (random across runs)."""
    return _fresh_domain()


@pytest.fixture
def other_domain() -> int:
    """A second one, for tests that need two domains."""
    return _fresh_domain()


@pytest.fixture
def peers():
    """Start peers with ``peers(role, args, domain)``; all are killed at teardown."""
    started: list[Peer] = []

    def start(role: str, args: dict[str, Any], domain: int) -> Peer:
        p = Peer(role, args, domain)
        started.append(p)
        return p

    yield start
    for p in started:
        p.kill()


NETNS_SETUP = "ip link set lo up && ip link set lo multicast on"
"""A fresh namespace's loopback is down; multicast on makes it look like the usual
multicast-capable LAN interface to every DDS stack (RustDDS, any Cyclone)."""


def netns_available() -> bool:
    """Can we make a private network namespace with a multicast-capable loopback?"""
    if shutil.which("unshare") is None:
        return False
    try:
        r = subprocess.run(
            ["unshare", "-n", "sh", "-c", NETNS_SETUP], capture_output=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


@pytest.fixture(scope="session")
def in_netns() -> Callable[[list[str]], list[str]]:
    """``in_netns(argv)``: ``argv`` to run in a private network namespace whose only
    interface is a multicast-flagged loopback; skips where ``unshare -n`` is not allowed."""
    if not netns_available():
        pytest.skip("needs 'unshare -n' (root or user namespaces) for a private loopback")

    def wrap(argv: list[str]) -> list[str]:
        return ["unshare", "-n", "sh", "-c", f'{NETNS_SETUP} && exec "$0" "$@"', *argv]

    return wrap


@pytest.fixture(
    params=[["--coordination", "centralized"],
            ["--coordination", "decentralized", "--stp-offset", "200 ms"]],
    ids=["centralized", "decentralized"],
)  # fmt: skip
def coordination_args(request: pytest.FixtureRequest) -> list[str]:
    """``hprm-ros run``'s options for each coordination, a test per coordination
    (decentralized with an STP offset that a loaded machine's hops fit in: 30 ms was
    exceeded in CI under two CPU hogs, and a reply came a tag late, as tardy)."""
    return request.param


@pytest.fixture
def bridge_env() -> Callable[..., dict[str, str]]:
    """``bridge_env(backend="wire")``: an ``hprm-ros run --bridge``'s environment: its own
    DDS domain, loopback only, and the gateway's backend named (the tests without ROS use
    the wire client, as a machine without ROS 2 does; those marked ros2 say which one
    they check)."""

    def env(backend: str = "wire") -> dict[str, str]:
        return dict(os.environ, PYTHONUNBUFFERED="1", ROS_DOMAIN_ID=str(_fresh_domain()),
                    ROS_LOCALHOST_ONLY="1", HPRM_BRIDGE_BACKEND=backend)  # fmt: skip

    return env


@pytest.fixture
def stop_node() -> Callable[[subprocess.Popen], str]:
    """``stop_node(proc)``: SIGINT (what a ROS 2 node expects), then SIGKILL if it does
    not end; its output."""

    def stop(proc: subprocess.Popen) -> str:
        proc.send_signal(signal.SIGINT)
        try:
            return proc.communicate(timeout=10)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.communicate()[0]

    return stop


@pytest.fixture
def ctrl_c() -> Callable[[subprocess.Popen], str]:
    """``ctrl_c(proc)``: a Ctrl-C to ``proc``'s process group (started with
    ``start_new_session=True``), its output once it ended. Where the group has not ended
    60 s on (a bound, not a measurement), the test fails with the output so far, the
    processes still running and their Python stacks (py-spy, tools/requirements-dev.txt),
    which are then killed: a hang says who hung, and where."""

    def interrupt(proc: subprocess.Popen) -> str:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            return proc.communicate(timeout=60)[0]
        except subprocess.TimeoutExpired:
            left = subprocess.run(["ps", "-o", "pid=,stat=,args=", "-g", str(proc.pid)],
                                  capture_output=True, text=True).stdout  # fmt: skip
            stacks = [_stack(int(line.split()[0])) for line in left.splitlines() if line.strip()]
            os.killpg(proc.pid, signal.SIGKILL)
            out = proc.communicate()[0]
            pytest.fail(f"still running 60 s after a Ctrl-C:\n{left}\n{''.join(stacks)}"
                        f"output:\n{out}")  # fmt: skip

    return interrupt


def _stack(pid: int) -> str:
    """A process's Python stacks, every thread (py-spy), or why there are none."""
    spy = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which("py-spy")
    if spy is None:
        return f"(no stack of {pid}: py-spy is not installed)\n"
    try:
        r = subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, text=True,
                           timeout=30)  # fmt: skip
    except subprocess.TimeoutExpired:
        return f"(py-spy dump of {pid} timed out)\n"
    return f"--- stack of {pid}:\n{r.stdout}{r.stderr}"


@pytest.fixture
def interrupted_run(ctrl_c) -> Callable[..., str]:
    """``interrupted_run(*files_and_options, after=TEXT)``: ``hprm-ros run`` in a session
    of its own, a Ctrl-C once a line of its output holds ``after``; everything it printed
    (``ctrl_c`` bounds the wait for its end)."""

    def run(*args: Any, after: str) -> str:
        proc = subprocess.Popen(
            [sys.executable, "-m", "hprm_bridge.ros_cli", "run", *map(str, args)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True, env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )  # fmt: skip
        seen = []
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                seen.append(line)
                if after in line:
                    break
            return "".join(seen) + ctrl_c(proc)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)

    return run


@pytest.fixture
def ended(ctrl_c, stop_node) -> Callable[[subprocess.Popen, float], str]:
    """``ended(proc, timeout)``: ``proc``'s output once it ended by itself. Where it has
    not ended ``timeout`` s on (a bound, not a measurement), it is stopped as a ROS 2 user
    stops a node, by a Ctrl-C (to its process group where it leads one), and its output
    so far comes back with a line saying so: the test's asserts then fail showing it, and
    nothing is left running."""

    def wait(proc: subprocess.Popen, timeout: float) -> str:
        try:
            return proc.communicate(timeout=timeout)[0]
        except subprocess.TimeoutExpired:
            out = ctrl_c(proc) if os.getpgid(proc.pid) == proc.pid else stop_node(proc)
            return f"{out}\n(still running {timeout} s on: stopped by a Ctrl-C)"

    return wait


@pytest.fixture
def bridged_run() -> Callable[..., subprocess.CompletedProcess]:
    """``bridged_run(node, env, *options, timeout="3 s")``: ``hprm-ros run`` of one node
    file of ``test/nodes`` with ``--bridge``, to its end; its output."""

    def run(node: str, env: dict[str, str], *extra: str,
            timeout: str = "3 s") -> subprocess.CompletedProcess:  # fmt: skip
        return subprocess.run(
            [sys.executable, "-m", "hprm_bridge.ros_cli", "run", str(HERE / "nodes" / node),
             "--bridge", "--timeout", timeout, *extra],
            capture_output=True, text=True, timeout=180, env=env,
        )  # fmt: skip

    return run


@pytest.fixture
def ported_run() -> Callable[..., str]:
    """``ported_run(*files_and_options, timeout="10 s")``: ``hprm-ros run`` of node files
    (paths) with its options, to its end; its output, once it exited 0 (the test fails
    with the whole output otherwise)."""

    def run(*args: Any, timeout: str = "10 s") -> str:
        r = subprocess.run(
            [sys.executable, "-m", "hprm_bridge.ros_cli", "run", *map(str, args),
             "--timeout", timeout],
            capture_output=True, text=True, timeout=180,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    return run


@pytest.fixture
def require_ros2_cli() -> Callable[[], None]:
    """``require_ros2_cli()``: skip the test here unless a Humble is sourced (rclpy
    importable, ``ros2`` on PATH), for the parts of a test that need one."""

    def require() -> None:
        pytest.importorskip(
            "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
        )
        if shutil.which("ros2") is None:
            pytest.skip("needs a sourced ROS 2 Humble (ros2 on PATH)")

    return require


@pytest.fixture
def ros_env(domain: int) -> dict[str, str]:
    """What peers get (:func:`peer_env`), for other ROS programs (``ros2`` CLI)."""
    return peer_env(domain)


def _read_until(
    proc: subprocess.Popen, timeout: float, done: Callable[[list[str]], bool]
) -> list[str]:
    """A child's output lines until ``done(lines so far)`` or ``timeout`` s
    pass, even while the child prints nothing (``for line in proc.stdout``
    waits for the next line forever: a stalled pipeline held a test until
    pytest-timeout, with no output). Reads the pipe's file descriptor, so
    ``communicate()`` afterwards gets the rest."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    lines: list[str] = []
    partial = b""
    while (left := deadline - time.monotonic()) > 0 and select.select([fd], [], [], left)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        *complete, partial = (partial + chunk).split(b"\n")
        lines += [raw.decode(errors="replace") + "\n" for raw in complete]
        if done(lines):
            break
    if partial:
        lines.append(partial.decode(errors="replace"))
    return lines


@pytest.fixture
def read_until() -> Callable[..., list[str]]:
    """``read_until(proc, timeout, done)``: see :func:`_read_until`."""
    return _read_until


@pytest.fixture
def rclpy_until_stop(require_ros2_cli: Callable[[], None]) -> Callable[..., list[str]]:
    """``rclpy_until_stop([NODE_FILE, *args], *others)``: node files run under real rclpy
    (where a Humble is sourced; the test skips elsewhere) in a DDS domain of their own,
    ``others`` started first; the first one's output lines until it prints STOP (Humble's
    ``spin`` does not return after a shutdown from a callback), then every process is
    killed. For the tests that check a node file prints the same ported and under rclpy."""

    def run(main: list[Any], *others: list[Any]) -> list[str]:
        require_ros2_cli()
        env = dict(os.environ, PYTHONUNBUFFERED="1", ROS_DOMAIN_ID=str(_fresh_domain()))
        procs = [
            subprocess.Popen(
                [sys.executable, *map(str, cmd)],
                env=env,
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            for cmd in (*others, main)
        ]
        try:
            lines = _read_until(procs[-1], 120, lambda lines: "STOP\n" in lines)
        finally:
            for p in procs:
                p.kill()
                p.communicate()
        return [x.rstrip("\n") for x in lines]

    return run
