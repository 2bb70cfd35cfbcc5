"""The timerfd behind the scheduler's sub-millisecond waits (Linux)."""

import select
import time

import pytest

from hprm_core import timerfd


@pytest.fixture
def timer():
    t = timerfd.create()
    if t is None:
        pytest.skip("no timerfd on this platform (the scheduler falls back to ms timeouts)")
    yield t
    t.close()


def test_an_armed_timer_wakes_epoll_after_its_delay_not_before(timer):
    ep = select.epoll()
    try:
        ep.register(timer.fd, select.EPOLLIN)
        for delay in (0.0003, 0.002):
            t0 = time.monotonic()
            timer.arm(delay)
            ready = ep.poll(1.0)  # epoll's own timeout is the fallback only
            elapsed = time.monotonic() - t0
            assert ready == [(timer.fd, select.EPOLLIN)]
            assert elapsed >= delay
            timer.clear()
            assert not timer.armed
            assert ep.poll(0) == []  # the expiry was consumed
    finally:
        ep.close()


def test_a_disarmed_or_rearmed_timer_does_not_fire_early(timer):
    ep = select.epoll()
    try:
        ep.register(timer.fd, select.EPOLLIN)
        timer.arm(0.001)
        timer.disarm()
        assert ep.poll(0.01) == []
        timer.arm(0.001)
        timer.arm(0.05)  # re-arming replaces the earlier expiry
        assert ep.poll(0.02) == []
        assert ep.poll(1.0) == [(timer.fd, select.EPOLLIN)]
        timer.clear()
    finally:
        ep.close()
