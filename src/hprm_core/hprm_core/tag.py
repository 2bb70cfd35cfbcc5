"""Logical time: tags and durations.

A tag is ``(time, microstep)``: ``time`` in integer nanoseconds (absolute, on the
same epoch as ``time.time_ns()``, so federates on one host agree on it), and a
``microstep`` that orders events which are logically simultaneous but causally
ordered (a zero-delay action scheduled at ``(t, m)`` fires at ``(t, m + 1)``).
Tags are totally ordered lexicographically. Integer nanoseconds keep arithmetic
exact: a timer's k-th firing is ``offset + k * period`` with no drift, however
long it runs.

Durations in the API accept integers (ns), ``datetime.timedelta`` or strings
such as ``"10 ms"``, ``"1s"``, ``"250 us"``, ``"2 min"``, ``"forever"``.

Example::

    >>> from hprm_core.tag import Tag, duration
    >>> Tag(duration("1 s"), 0).delay(duration("10 ms"))
    Tag(time=1010000000, microstep=0)
    >>> Tag(5, 0).delay(0)
    Tag(time=5, microstep=1)
"""

from __future__ import annotations

import datetime
import functools
import re
from typing import NamedTuple

NSEC = 1
USEC = 1_000
MSEC = 1_000_000
SEC = 1_000_000_000
MINUTE = 60 * SEC
HOUR = 60 * MINUTE

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
UINT32_MAX = 2**32 - 1

_UNITS = {
    "ns": NSEC, "nsec": NSEC, "nsecs": NSEC,
    "us": USEC, "usec": USEC, "usecs": USEC, "µs": USEC,
    "ms": MSEC, "msec": MSEC, "msecs": MSEC,
    "s": SEC, "sec": SEC, "secs": SEC, "second": SEC, "seconds": SEC,
    "m": MINUTE, "min": MINUTE, "mins": MINUTE, "minute": MINUTE, "minutes": MINUTE,
    "h": HOUR, "hour": HOUR, "hours": HOUR,
}  # fmt: skip
_DURATION_RE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([a-zµ]+)\s*$", re.IGNORECASE)

Duration = int | float | str | datetime.timedelta | None


def duration(value: Duration) -> int:
    """Convert a human duration to integer nanoseconds.

    Strings need a unit (a bare ``"10"`` is ambiguous and rejected); ints are
    nanoseconds; ``None`` and ``"forever"`` mean "never" (``INT64_MAX``).
    """
    if value is None:
        return INT64_MAX
    if isinstance(value, bool):
        raise TypeError(f"duration must be a number of ns or a string like '10 ms', not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value != value:
            raise ValueError("duration must not be NaN")
        return round(value)
    if isinstance(value, datetime.timedelta):
        return (value.days * 86_400 + value.seconds) * SEC + value.microseconds * USEC
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("forever", "never", "inf"):
            return INT64_MAX
        m = _DURATION_RE.match(text)
        if not m or m.group(2) not in _UNITS:
            raise ValueError(
                f"cannot parse duration {value!r}: expected a number and a unit "
                f"(ns, us, ms, s, min, h), e.g. '10 ms'"
            )
        return round(float(m.group(1)) * _UNITS[m.group(2)])
    raise TypeError(f"duration must be a number of ns or a string like '10 ms', not {value!r}")


def format_duration(ns: int) -> str:
    """The shortest exact human form of ``ns``: ``10000000 -> '10 ms'``."""
    if ns >= INT64_MAX:
        return "forever"
    for unit, size in (("h", HOUR), ("min", MINUTE), ("s", SEC), ("ms", MSEC), ("us", USEC)):
        if ns and ns % size == 0:
            return f"{ns // size} {unit}"
    return f"{ns} ns"


class Tag(NamedTuple):
    """A logical tag. Tuple ordering is tag ordering."""

    time: int
    microstep: int = 0

    def delay(self, interval: int) -> Tag:
        """The tag ``interval`` ns later; a zero interval advances the microstep."""
        if interval == 0:
            return Tag(self.time, self.microstep + 1)
        if self.time >= INT64_MAX or interval >= INT64_MAX:
            return FOREVER
        return Tag(min(self.time + interval, INT64_MAX), 0)

    def elapsed(self, start: int) -> tuple[int, int]:
        """(time - start, microstep): what traces and logs show."""
        return (self.time - start, self.microstep)

    def __repr__(self) -> str:
        return f"Tag(time={self.time}, microstep={self.microstep})"


def delayed(tag: Tag, delay: int | None) -> Tag:
    """The tag a message sent at ``tag`` carries over a connection made with
    ``after=delay`` (``None``: no ``after``, the same tag)."""
    return tag if delay is None else tag.delay(delay)


#: ``make_tag((time, microstep))``: a Tag without NamedTuple's Python-level
#: ``__new__`` (one C call), for the per-message paths.
make_tag = functools.partial(tuple.__new__, Tag)

NEVER = Tag(INT64_MIN, 0)
FOREVER = Tag(INT64_MAX, UINT32_MAX)
