"""How the scheduler waits: sleeping by default, busy-polling when asked.

CPU time over wall time tells the two apart without timing anything: a
program that sleeps between sparse events uses a few percent of a CPU, one
that busy-polls nearly all of one. The thresholds leave wide margins both
ways for a loaded machine.
"""

import threading
import time

import pytest

from hprm_core import Reactor, Timer, main, reaction, run
from hprm_core.scheduler import Scheduler


class Ticker(Reactor):
    """A timer every 20 ms: idle ~all of the time in between."""

    def __init__(self):
        super().__init__()
        self.t = Timer(period="20 ms")
        self.lags = []

    @reaction("t")
    def tick(self):
        self.lags.append(time.time_ns() - self.tag.time)


def _cpu_share(busy_poll, timeout="300 ms"):
    p = Ticker()
    wall0, cpu0 = time.monotonic(), time.process_time()
    run(p, timeout=timeout, busy_poll=busy_poll)
    share = (time.process_time() - cpu0) / (time.monotonic() - wall0)
    return p, share


def test_the_scheduler_sleeps_while_idle_by_default():
    p, share = _cpu_share(0)
    assert len(p.lags) == 16 and min(p.lags) >= 0
    assert share < 0.25, f"an idle program used {share:.0%} of a CPU"


def test_busy_poll_spins_while_idle_and_keeps_timers_exact():
    p, share = _cpu_share("forever")
    assert len(p.lags) == 16
    assert min(p.lags) >= 0, "a timer fired before its time while spinning"
    assert share > 0.3, f"busy_poll='forever' used only {share:.0%} of a CPU"


def test_busy_poll_spins_for_its_budget_then_sleeps():
    # 1 ms of spinning per 20 ms wait: ~5% of a CPU, not ~100%.
    p, share = _cpu_share("1 ms")
    assert len(p.lags) == 16 and min(p.lags) >= 0
    assert share < 0.35, f"busy_poll='1 ms' used {share:.0%} of a CPU"


def test_wait_with_busy_poll_sees_a_socket_written_during_the_spin_and_after_it():
    """The federate path: a watched socket that becomes readable while the
    scheduler spins, and one that becomes readable once the budget is spent
    (the scheduler then sleeps in epoll for the rest of its timeout)."""
    import socket

    sched = Scheduler(
        _EnvStub(),  # only the waiting machinery is used
        fast=False,
        timeout=None,
        keepalive=False,
        on_error="stop",
        tracer=None,
        busy_poll="20 ms",
    )
    a, b = socket.socketpair()
    got = []
    sched.add_reader(b, lambda: got.append(b.recv(100)))
    try:
        for delay in (0.005, 0.08):  # inside the 20 ms spin, then well after it
            got.clear()
            timer = threading.Timer(delay, a.send, args=(b"x",))
            timer.start()
            t0 = time.monotonic()
            with sched._lock:
                while not got and time.monotonic() - t0 < 5:
                    sched.wait(1.0)
            timer.join()
            assert got == [b"x"], f"data sent after {delay} s was not seen"
        t0 = time.monotonic()
        with sched._lock:
            n = sched.wait(0.05)  # nothing comes: spin 20 ms, sleep the rest
        assert n >= 0 and time.monotonic() - t0 >= 0.05
    finally:
        sched.close()
        a.close()
        b.close()


class _EnvStub:
    """What Scheduler.__init__ reads from an Environment, for an empty program."""

    ordered: list = []
    triggers: list = []
    reactors: list = []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"busy_poll": "fast"}, "@main option busy_poll: cannot parse duration 'fast'"),
        ({"busy_poll": "-1 ms"}, "@main option busy_poll must not be negative"),
        ({"busy_poll": {"camera": "1 parsec"}}, "@main option busy_poll: cannot parse"),
        ({"timeout": "ten seconds"}, "@main option timeout: cannot parse duration"),
        ({"stp_offset": True}, "@main option stp_offset: duration must be a number"),
        (
            {"on_error": "ignore"},
            "@main option on_error must be 'stop' or 'continue', got 'ignore'",
        ),
    ],
)
def test_bad_main_options_fail_at_the_decorator_naming_the_option(options, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        main(**options)
