"""Callback groups of a node whose callbacks run as tasks (hprm_bridge.rclpy.callback_groups):
the rules in process, on a Sleeper with a clock the test moves. Ported nodes calling a
slow service, compared with real rclpy: test_rclpy_services.py."""

from types import SimpleNamespace

import pytest

from hprm_bridge.rclpy.callback_groups import (
    MutuallyExclusiveCallbackGroup,
    ReentrantCallbackGroup,
    run_in_group,
)
from hprm_bridge.rclpy.logical_sleep import Sleeper, sleep


def _sleeper(now):
    sleeper = Sleeper(lambda: now[0], lambda: (now[0], 0))
    assert sleeper.take_wakeups() == []  # started (the node's startup reaction)
    return sleeper


def test_a_mutually_exclusive_group_holds_later_calls_until_its_callback_returns():
    now, seen = [0], []
    sleeper = _sleeper(now)
    group = MutuallyExclusiveCallbackGroup()
    timer, sub = SimpleNamespace(callback_group=group), SimpleNamespace(callback_group=group)

    def tick():
        seen.append(("tick", now[0]))
        sleep(1.0)  # as a blocking call waits

    run_in_group(sleeper, timer, tick, once=True)
    run_in_group(sleeper, sub, lambda: seen.append(("msg", 1)))
    run_in_group(sleeper, timer, tick, once=True)
    run_in_group(sleeper, timer, tick, once=True)  # a tick already waits: the same one
    run_in_group(sleeper, sub, lambda: seen.append(("msg", 2)))
    assert seen == [("tick", 0)] and not group.can_execute(sub)
    assert sleeper.take_wakeups() == [1_000_000_000]
    now[0] = 1_000_000_000
    sleeper.wake()  # the tick returns: those that waited run in turn, in their order
    assert seen[1:] == [("msg", 1), ("tick", 1_000_000_000)]  # that tick sleeps again
    assert not group.can_execute(sub)
    now[0] = 2_000_000_000
    sleeper.wake()
    assert seen[3:] == [("msg", 2)] and group.can_execute(timer)
    assert sleeper._tasks == []


def test_a_reentrant_group_starts_every_call_at_once():
    now, seen = [0], []
    sleeper = _sleeper(now)
    timer = SimpleNamespace(callback_group=ReentrantCallbackGroup())

    def tick(n):
        seen.append(("start", n))
        sleep(1.0)
        seen.append(("done", n))

    for n in (1, 2):
        run_in_group(sleeper, timer, lambda n=n: tick(n), once=True)
    assert seen == [("start", 1), ("start", 2)]
    now[0] = 1_000_000_000
    sleeper.wake()
    assert seen[2:] == [("done", 1), ("done", 2)] and sleeper._tasks == []


def test_a_call_that_raises_frees_its_group():
    now = [0]
    sleeper = _sleeper(now)
    group = MutuallyExclusiveCallbackGroup()
    sub = SimpleNamespace(callback_group=group)

    def fails():
        raise ValueError("from the callback")

    with pytest.raises(ValueError, match="from the callback"):
        run_in_group(sleeper, sub, fails)
    assert group.can_execute(sub)
