"""The scheduler thread's waiting (`hprm_core.waiter`): real sockets, eventfd and epoll.

What must hold whatever the load: a watched socket's callback runs in the waiting thread,
whether the data came while it spun or while it slept; a wake-up from another thread ends
the wait; a reader removed is no longer called. How long a wait lasted is asserted only as
a lower bound (a loaded machine may wake us late, never early).
"""

import socket
import threading
import time
from collections import deque

import pytest

from hprm_core.waiter import Waiter


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def _wait_for(waiter, done, limit_s=5.0):
    t0 = time.monotonic()
    with waiter.lock:
        while not done() and time.monotonic() - t0 < limit_s:
            waiter.wait(1.0)


def test_busy_poll_sees_a_socket_written_during_the_spin_and_after_it(pair):
    """The federate path: a watched socket that becomes readable while the
    scheduler spins, and one that becomes readable once the budget is spent
    (it then sleeps in epoll for the rest of its timeout)."""
    a, b = pair
    waiter = Waiter(threading.RLock(), deque(), busy_poll=20_000_000)
    got, threads = [], []
    waiter.add_reader(b, lambda: (got.append(b.recv(100)), threads.append(threading.get_ident())))
    try:
        for delay in (0.005, 0.08):  # inside the 20 ms spin, then well after it
            got.clear()
            timer = threading.Timer(delay, a.send, args=(b"x",))
            timer.start()
            _wait_for(waiter, lambda: got)
            timer.join()
            assert got == [b"x"], f"data sent after {delay} s was not seen"
        assert set(threads) == {threading.get_ident()}  # run by the waiting thread itself
        t0 = time.monotonic()
        with waiter.lock:
            n = waiter.wait(0.05)  # nothing comes: spin 20 ms, sleep the rest
        assert n >= 0 and time.monotonic() - t0 >= 0.05
    finally:
        waiter.close()


@pytest.mark.parametrize("watching", [False, True], ids=["condition", "epoll"])
def test_another_thread_ends_the_wait(pair, watching):
    """Without watched files the wait is a condition variable; with them, epoll on the
    wake-up eventfd. Either way notify() from another thread ends it: the waits below
    would each sleep 30 s otherwise. (The flag is set under the lock the waiter releases
    only while it waits, so the notify always finds it waiting.)"""
    waiter = Waiter(threading.RLock(), deque(), busy_poll=0)
    if watching:
        waiter.add_reader(pair[1], lambda: None)
    waiter.loop_thread = threading.current_thread()
    notified = []

    def notify():
        time.sleep(0.05)
        with waiter.lock:
            notified.append(True)
            waiter.notify()

    t0 = time.monotonic()
    threading.Thread(target=notify).start()
    with waiter.lock:
        while not notified:  # add_reader's own notify may end the first wait early
            waiter.wait(30.0)
    assert time.monotonic() - t0 < 20, "the notify did not end the wait"
    waiter.close()


def test_a_removed_reader_is_not_called_again(pair):
    a, b = pair
    waiter = Waiter(threading.RLock(), deque(), busy_poll=0)
    calls = []
    waiter.add_reader(b, lambda: calls.append(b.recv(100)))
    a.send(b"1")
    _wait_for(waiter, lambda: calls)
    assert calls == [b"1"]
    waiter.remove_reader(b)
    a.send(b"2")
    with waiter.lock:
        waiter.wait(0.1)
        waiter.wait(0.1)
    assert calls == [b"1"]  # "2" stays unread in the socket
    assert b.recv(100) == b"2"
    waiter.close()


def test_closing_waits_for_a_wake_up_in_progress(pair):
    """A stop requested from another thread as the run ends notifies under the lock;
    close() takes the lock too, so the notify never writes to a closed eventfd (seen as
    EBADF from a node file's ``rclpy.try_shutdown()``), nor to a file that took its
    number since."""
    lock = threading.RLock()
    waiter = Waiter(lock, deque(), 0)
    waiter.add_reader(pair[0], lambda: None)  # makes the epoll set and the eventfd
    with lock:
        closing = threading.Thread(target=waiter.close)
        closing.start()
        closing.join(0.2)
        assert closing.is_alive()  # it waits for the lock
        waiter.notify()  # the eventfd is still open: no OSError
    closing.join(10)
    assert not closing.is_alive()
    with lock:
        waiter.notify()  # closed: nothing to write to, and no error
    waiter.wake_from_any_thread()
