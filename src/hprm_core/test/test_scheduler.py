"""How the scheduler waits: sleeping by default, busy-polling when asked.

Whether a thread spins or sleeps shows in how long the kernel saw it
runnable (on a CPU, or waiting in a run queue for one) over wall time: a
spinning thread is runnable all the time however loaded the machine is,
a sleeping one only for its few wake-ups. CPU time would not do: on a
loaded machine a spinning thread gets little of it (1% of a CPU, seen
with two CPU hogs on two cores). The share is taken in a fresh process
(no other Python thread to wait on the GIL for: a wait that sleeps) and
from the first tick to the last (start-up and shutdown block, and take
longer on a loaded machine: a spinner was seen runnable 83% of a whole
run with two CPU hogs beside it).
"""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from hprm_core import PhysicalAction, Reactor, Timer, main, reaction, run
from hprm_core.scheduler import Scheduler
from hprm_core.tag import Tag

SCHEDSTAT = "/proc/thread-self/schedstat"
pytestmark_schedstat = pytest.mark.skipif(
    not os.path.exists(SCHEDSTAT), reason=f"{SCHEDSTAT} is missing (kernel without schedstats)"
)


class Ticker(Reactor):
    """A timer every 20 ms: idle ~all of the time in between. Each tick notes
    the scheduler thread's runnable time (reactions run in that thread)."""

    def __init__(self):
        super().__init__()
        self.t = Timer(period="20 ms")
        self.lags = []
        self.marks = []

    @reaction("t")
    def tick(self):
        self.lags.append(time.time_ns() - self.tag.time)
        self.marks.append((time.monotonic_ns(), _runnable_ns()))


def _runnable_ns():
    with open(SCHEDSTAT) as f:
        on_cpu, in_run_queue, _ = map(int, f.read().split())
    return on_cpu + in_run_queue


def _measure(busy_poll):
    """In the child: run() runs the scheduler in this thread for 16 ticks."""
    p = Ticker()
    run(p, timeout="300 ms", busy_poll=busy_poll)
    (wall0, runnable0), (wall1, runnable1) = p.marks[0], p.marks[-1]
    print(json.dumps({"lags": p.lags, "share": (runnable1 - runnable0) / (wall1 - wall0)}))


def _runnable_share(busy_poll):
    """(timer lags, the scheduler thread's runnable share between its first and last tick)."""
    r = subprocess.run([sys.executable, __file__, json.dumps(busy_poll)],
                       capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    out = json.loads(r.stdout)
    return out["lags"], out["share"]


@pytestmark_schedstat
def test_the_scheduler_sleeps_while_idle_by_default():
    lags, share = _runnable_share(0)
    assert len(lags) == 16 and min(lags) >= 0
    assert share < 0.5, f"an idle program was runnable {share:.0%} of the time"


@pytestmark_schedstat
def test_busy_poll_spins_while_idle_and_keeps_timers_exact():
    lags, share = _runnable_share("forever")
    assert len(lags) == 16
    assert min(lags) >= 0, "a timer fired before its time while spinning"
    assert share > 0.9, f"busy_poll='forever' was runnable only {share:.0%} of the time"


@pytestmark_schedstat
def test_busy_poll_spins_for_its_budget_then_sleeps():
    # 1 ms of spinning per 20 ms wait: runnable ~5% of the time, not ~100%.
    lags, share = _runnable_share("1 ms")
    assert len(lags) == 16 and min(lags) >= 0
    assert share < 0.75, f"busy_poll='1 ms' was runnable {share:.0%} of the time"


@pytest.fixture
def bound_action():
    """A scheduler of an empty program and a physical action bound to it, as
    assembling a program binds one."""
    sched = Scheduler(
        _EnvStub(), fast=False, timeout=None, keepalive=False, on_error="stop", tracer=None
    )
    action = PhysicalAction()
    action._sched = sched
    yield sched, action
    sched.close()


def test_a_physical_event_is_stamped_once_the_scheduler_lock_is_free(bound_action):
    """A federate with physical actions promises the RTI "no event before now"
    while it holds the scheduler's lock. An event stamped before its thread
    took that lock (preempted in between, on a loaded machine) could fall
    behind the promise and reach the next federate tardy: the stamp is read
    under the lock."""
    sched, action = bound_action
    with sched.lock:
        sensor = threading.Thread(target=action.schedule, args=("reading",))
        sensor.start()
        time.sleep(0.05)  # the sensor thread waits for the lock meanwhile
        promised = sched.physical_time()  # what a NET sent now would promise
    sensor.join()
    ((trigger, stamp, value),) = sched._inbox
    assert (trigger, value) == (action, "reading")
    assert stamp >= promised, f"stamped {(promised - stamp) / 1e6:.1f} ms before the promise"


def test_a_physical_event_never_takes_a_tag_behind_the_last_promise(bound_action):
    """A stamp of the caller's own (schedule_at) behind the federate's last NET
    would reach federates granted past it tardy: it takes the NET's tag, and a
    second one the next microstep."""
    sched, action = bound_action
    promise = Tag(sched.physical_time() + 10_000_000, 0)
    sched.physical_floor = promise  # as the federation's coordinator sets it with a NET
    action.schedule_at("stamped behind", promise.time - 5_000_000)
    action.schedule_at("also behind", promise.time - 4_000_000)
    action.schedule_at("stamped ahead", promise.time + 1)
    sched.drain_inbox()
    queued = sorted((e[0], e[1], e[4]) for e in sched._events)
    # two events moved up to one promise keep one tag each (else one value is lost)
    assert queued == [
        (promise.time, 0, "stamped behind"),
        (promise.time, 1, "also behind"),
        (promise.time + 1, 0, "stamped ahead"),
    ]


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


class Cancelling(Reactor):
    """A 10 ms timer cancelled at its third firing, reset by a second timer later."""

    def __init__(self, reset_at=None):
        super().__init__()
        self.t = Timer(period="10 ms")
        self.later = Timer(offset=reset_at or "1 s")
        self.reset_at = reset_at
        self.fired = []

    @reaction("t")
    def tick(self):
        self.fired.append(self.tag.time - self.start_time)
        if len(self.fired) == 3:
            self.t.cancel()

    @reaction("later")
    def again(self):
        if self.reset_at:
            self.t.reset()


def test_a_cancelled_timer_leaves_no_event_and_reset_restarts_it():
    # The firing queued before cancel() (at 30 ms) must not happen either.
    p = Cancelling()
    run(p, timeout="100 ms", fast=True)
    assert p.fired == [0, 10_000_000, 20_000_000]
    p = Cancelling(reset_at="55 ms")
    run(p, timeout="80 ms", fast=True)
    assert p.fired == [0, 10_000_000, 20_000_000, 65_000_000, 75_000_000]


if __name__ == "__main__":
    _measure(json.loads(sys.argv[1]))
