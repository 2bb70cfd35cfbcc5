"""How the scheduler thread sleeps, and what wakes it.

The scheduler thread waits in one place (:meth:`Waiter.wait`) for whichever comes first:
a watched socket becoming readable (it then runs the socket's callback itself, so a message
goes from the kernel to the event heap with no thread hand-off), another thread's event
(the inbox, announced through an eventfd), or a timeout (armed on a timerfd, since epoll
alone rounds up to whole milliseconds). With ``busy_poll`` it spins instead of sleeping for
a while first: a sleeping receiver is woken by the kernel, and on a VM the sender's send
call pays an inter-processor interrupt for it.

Kept apart from :mod:`hprm_core.scheduler`, which decides what runs when; this module only
decides how to wait. Compiled (:mod:`hprm_core.compiled`): it is on every message's path.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from hprm_core import timerfd


class Waiter:
    """The scheduler's waiting: an epoll set of watched files, a wake-up eventfd, a timerfd.

    ``lock`` is the scheduler's (it guards the inbox and the coordinator's state);
    ``inbox`` the scheduler's queue of events from other threads, watched while spinning.
    Created by the scheduler; other code goes through the scheduler's methods of the same
    names.
    """

    def __init__(self, lock: threading.RLock, inbox: deque[Any], busy_poll: int) -> None:
        self.lock = lock
        self.busy_poll = busy_poll
        self._inbox = inbox
        self._wake = threading.Condition(lock)
        self.loop_thread: threading.Thread | None = None  # the scheduler's, once it runs
        # Sockets read by the scheduler thread itself while it waits (no thread
        # hand-off on the data path); other threads wake it through an eventfd.
        self._epoll: select.epoll | None = None
        self._readers: dict[int, tuple[Any, Callable[[], None]]] = {}  # fd -> (file, callback)
        self._wakefd = -1
        self._timer: timerfd.TimerFd | None = None  # sub-millisecond timed waits
        self._pending_readers: list[tuple[Any, Callable[[], None] | None]] = []

    def notify(self) -> None:
        """Wake the scheduler thread (caller holds ``lock``)."""
        self._wake.notify_all()
        if self._wakefd >= 0 and threading.current_thread() is not self.loop_thread:
            os.eventfd_write(self._wakefd, 1)

    def wake_from_any_thread(self) -> None:
        """Wake a waiting scheduler without taking any lock: safe from a
        garbage-collection callback (e.g. a received array being released)."""
        wakefd = self._wakefd  # read once: close() may set it to -1 meanwhile
        if wakefd >= 0:
            with contextlib.suppress(OSError):
                os.eventfd_write(wakefd, 1)

    def add_reader(self, fileobj: Any, callback: Callable[[], None]) -> None:
        """Have the scheduler thread call ``callback`` whenever ``fileobj`` is
        readable, while it waits. Thread-safe."""
        with self.lock:
            self._pending_readers.append((fileobj, callback))
            if self._epoll is None:
                self._epoll = select.epoll()
                self._wakefd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
                self._epoll.register(self._wakefd, select.EPOLLIN)
                self._timer = timerfd.create()
                if self._timer is not None:
                    self._epoll.register(self._timer.fd, select.EPOLLIN)
            self.notify()

    def remove_reader(self, fileobj: Any) -> None:
        """Stop watching ``fileobj`` (thread-safe; effective at the next wait)."""
        with self.lock:
            self._pending_readers.append((fileobj, None))
            self.notify()

    def wait(self, timeout: float | None, exact: bool = True) -> int:
        """Block until notified, a watched socket is readable, or ``timeout`` s;
        returns how many ready files it handled (``wait(0)``: a non-blocking
        pass over whatever is readable now). ``exact=False``: a timeout that
        may run up to a millisecond long (a periodic check-in, not a tag's
        time), which spares arming the timer on every wait.

        The caller holds ``_lock`` exactly once; it is released while waiting.
        Readable-socket callbacks run in this (the scheduler's) thread, with
        ``_lock`` released, so they may take it themselves.
        """
        ep = self._epoll
        if ep is None:
            if not self.busy_poll or timeout == 0:
                self._wake.wait(timeout)
            elif not self._spin_for_inbox(timeout):
                left = None if timeout is None else max(0.0, timeout - self.busy_poll / 1e9)
                self._wake.wait(left)
            return 0
        if self._pending_readers:
            self._apply_pending_readers(ep)
        readers = self._readers
        timer = self._timer
        poll_timeout = -1 if timeout is None else timeout
        if timer is not None:
            if exact and timeout is not None and timeout > 0:
                timer.arm(timeout)  # epoll alone would round up to whole ms
                poll_timeout = -1
            elif timer.armed and timeout is None:
                timer.disarm()  # an old expiry would only wake us for nothing
        self.lock.release()
        try:
            if self.busy_poll and poll_timeout != 0:
                ready = self._spin(ep, poll_timeout)
            else:
                ready = ep.poll(poll_timeout)
            for fd, _ in ready:
                entry = readers.get(fd)
                if entry is not None:
                    entry[1]()
                elif fd == self._wakefd:
                    with contextlib.suppress(BlockingIOError):
                        os.eventfd_read(fd)
                elif timer is not None and fd == timer.fd:
                    timer.clear()
        finally:
            self.lock.acquire()
        return len(ready)

    def _spin(self, ep: select.epoll, poll_timeout: float) -> list[tuple[int, int]]:
        """Busy-poll: check the watched files without sleeping for up to
        ``busy_poll`` ns, then block for what is left of ``poll_timeout``.

        Why: a sleeping process is woken by the kernel when a message comes,
        and the sender's send call pays for that wake-up (on a VM, an
        inter-processor interrupt to a halted virtual CPU). A spinning
        receiver is already running and sees the message on its next turn. It
        costs a CPU for the spin, so it is opt-in, for latency-critical
        federates with a core to spare. Timed waits stay exact: the timerfd
        armed by :meth:`wait` becomes readable like any other file."""
        poll = ep.poll
        clock = time.monotonic_ns
        start = clock()
        end = start + self.busy_poll
        while True:
            ready = poll(0)
            if ready:
                return ready
            now = clock()
            if now >= end:
                break
        if poll_timeout > 0:
            poll_timeout = max(0.0, poll_timeout - (now - start) / 1e9)
        return poll(poll_timeout)

    def _spin_for_inbox(self, timeout: float | None) -> bool:
        """:meth:`_spin` without sockets: spin on the inbox (events from other
        threads) for up to ``busy_poll`` ns or ``timeout`` s, whichever is
        shorter; True when done waiting (an event came, or the timeout passed).
        Each turn yields the GIL (and the CPU, should another task want it):
        the threads that fill the inbox need it."""
        spin = self.busy_poll if timeout is None else min(self.busy_poll, int(timeout * 1e9))
        end = time.monotonic_ns() + spin
        inbox = self._inbox
        self.lock.release()
        try:
            while not inbox and time.monotonic_ns() < end:
                os.sched_yield()
        finally:
            self.lock.acquire()
        return bool(inbox) or spin < self.busy_poll

    def _apply_pending_readers(self, ep: select.epoll) -> None:
        pending, self._pending_readers = self._pending_readers, []
        readers = self._readers
        for fileobj, callback in pending:
            if callback is None:
                # The file may be closed already (fileno -1): find it by identity.
                for fd, (obj, _) in list(readers.items()):
                    if obj is fileobj:
                        del readers[fd]
                        with contextlib.suppress(OSError, ValueError):
                            ep.unregister(fd)
            else:
                fd = fileobj.fileno()
                if fd < 0:
                    continue  # closed before we got to watch it
                readers[fd] = (fileobj, callback)
                ep.register(fd, select.EPOLLIN)

    def close(self) -> None:
        """Release the epoll set and the wake-up eventfd. Under the lock: another thread's
        ``notify`` (a stop requested as the run ends) checks the eventfd and writes to it
        under the lock too, and must not write to a closed one, or to a file that took
        its number since (seen: EBADF in a node file's ``rclpy.try_shutdown()``)."""
        with self.lock:
            if self._epoll is not None:
                self._epoll.close()
                self._epoll = None
                self._readers.clear()
                wakefd, self._wakefd = self._wakefd, -1  # -1 first: wake_from_any_thread
                os.close(wakefd)
                if self._timer is not None:
                    self._timer.close()
                    self._timer = None
