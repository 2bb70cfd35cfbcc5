"""Precise timeouts for the scheduler's epoll wait.

``epoll.poll(timeout)`` rounds the timeout *up* to whole milliseconds (that is
the resolution of ``epoll_wait``), so a federate sleeping until a tag 150 us
away wakes up to a millisecond late: timers drift into their deadlines, and a
50 us timer fires in bursts. A Linux timerfd in the same epoll set wakes the
wait at the nanosecond it was armed for instead. Python exposes timerfds only
from 3.13 (``os.timerfd_create``); before that, two libc calls through ctypes.

Where neither is available, :func:`create` returns None and the scheduler
falls back to millisecond timeouts.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

_CLOCK_MONOTONIC = 1
_TFD_NONBLOCK = os.O_NONBLOCK
_TFD_CLOEXEC = os.O_CLOEXEC


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class TimerFd:
    """A one-shot timer whose expiry makes its fd readable."""

    def __init__(self, fd: int, settime: Any) -> None:
        self.fd = fd
        self._settime = settime
        self._spec = _Itimerspec()  # reused: arming happens on every timed wait
        self.armed = False

    def arm(self, seconds: float) -> None:
        """Expire ``seconds`` from now (re-arming replaces the previous expiry)."""
        ns = max(int(seconds * 1e9), 1)  # 0 would disarm
        value = self._spec.it_value
        value.tv_sec, value.tv_nsec = divmod(ns, 1_000_000_000)
        self._settime(self.fd, 0, ctypes.byref(self._spec), None)
        self.armed = True

    def disarm(self) -> None:
        value = self._spec.it_value
        value.tv_sec = value.tv_nsec = 0
        self._settime(self.fd, 0, ctypes.byref(self._spec), None)
        self.armed = False

    def clear(self) -> None:
        """Consume an expiry (the fd stays readable until then)."""
        self.armed = False
        try:  # noqa: SIM105 (contextlib.suppress: three Python calls, on every timed tag)
            os.read(self.fd, 8)
        except BlockingIOError:
            pass

    def close(self) -> None:
        os.close(self.fd)


def create() -> TimerFd | None:
    """A timerfd on CLOCK_MONOTONIC, or None where the platform has none."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols: libc's included
        create_fn, settime = libc.timerfd_create, libc.timerfd_settime
    except (OSError, AttributeError):
        return None
    create_fn.argtypes = [ctypes.c_int, ctypes.c_int]
    settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    fd = create_fn(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
    if fd < 0:
        return None
    return TimerFd(fd, settime)
