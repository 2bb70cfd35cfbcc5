"""``rclpy.logging``: node loggers in rclpy's console format, on stderr.

``[INFO] [1732451234.123456789] [camera]: message``, as rcutils prints by
default. ``once``, ``skip_first`` and ``throttle_duration_sec`` behave as in
rclpy, with one difference that is the point of HPRM: inside a federate the
throttle counts logical time (the node's clock), so which messages a
throttled logger prints is the same in every run.

Levels are the process's, by logger name, as in rcutils: setting one on a
logger sets it for every logger object of that name, and a logger without
one takes its nearest dotted ancestor's (``camera.driver`` takes
``camera``'s), else the default (INFO, or ``--ros-args --log-level LEVEL``).
``rclpy.init`` reads ``--log-level [NAME:=]LEVEL`` and
``--disable-stdout-logs`` / ``--disable-rosout-logs`` from its arguments.

Example::

    >>> from hprm_bridge.rclpy.logging import get_logger
    >>> log = get_logger("camera")
    >>> log.info("frame", throttle_duration_sec=1.0)   # at most once a second
    True
"""

from __future__ import annotations

import enum
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "LoggingSeverity", "RcutilsLogger", "clear_config", "get_logger", "get_logger_effective_level",
    "get_logging_severity_from_string", "set_logger_level",
]  # fmt: skip


class LoggingSeverity(enum.IntEnum):
    UNSET = 0
    DEBUG = 10
    INFO = 20
    WARN = 30
    ERROR = 40
    FATAL = 50


_KNOWN_KW = {"once", "skip_first", "throttle_duration_sec", "throttle_time_source_type"}
_levels: dict[str, LoggingSeverity] = {}  # logger name -> its own level (rcutils' map)
_config: dict[str, Any] = {}  # "": the default level; "stdout", "rosout": lines go there


def clear_config() -> None:
    """Forget every level and output setting: INFO by default, lines to both outputs."""
    _levels.clear()
    _config.update({"": LoggingSeverity.INFO, "stdout": True, "rosout": True})


clear_config()


def configure(levels: dict[str, LoggingSeverity], outputs: dict[str, bool]) -> None:
    """``rclpy.init``'s: the levels (``""``: the default) and outputs its
    ``--ros-args`` give (see :mod:`hprm_bridge.rclpy.arguments`)."""
    for name, level in levels.items():
        if name:
            set_logger_level(name, level)
        else:
            _config[""] = level
    _config.update({k: v for k, v in outputs.items() if k in ("stdout", "rosout")})


def set_logger_level(name: str, level: Any) -> None:
    """As rclpy's; UNSET makes the logger take its ancestor's level again."""
    level = _severity(level)
    if level == LoggingSeverity.UNSET:
        _levels.pop(name, None)
    else:
        _levels[name] = level


def get_logger_effective_level(name: str) -> LoggingSeverity:
    while True:
        level = _levels.get(name)
        if level is not None:
            return level
        if "." not in name:
            return _config[""]
        name = name.rsplit(".", 1)[0]


def get_logging_severity_from_string(log_severity: str) -> LoggingSeverity:
    """``"debug"`` -> DEBUG, any case; RuntimeError otherwise, as rclpy."""
    try:
        return LoggingSeverity[log_severity.upper()]
    except KeyError:
        raise RuntimeError(
            f"{log_severity!r} is not a logging severity (unset, debug, info, warn, error, fatal)"
        ) from None


def _severity(level: Any) -> LoggingSeverity:
    # A name too (HPRM's; rclpy takes only the number or enum).
    if isinstance(level, str):
        return get_logging_severity_from_string(level)
    return LoggingSeverity(level)


class RcutilsLogger:
    """What ``node.get_logger()`` and ``rclpy.logging.get_logger()`` return.
    ``now``: the clock throttling counts in (ns); the node's logical clock in
    a federate, the system clock otherwise."""

    def __init__(
        self,
        name: str = "",
        now: Callable[[], int] | None = None,
        sink: Callable[[str, LoggingSeverity, str, Any], None] | None = None,
    ) -> None:
        self.name = name
        self._now = now or time.time_ns
        # Also hands each printed line (logger name, severity, text, caller frame) here: a node's
        # /rosout publisher (hprm_bridge.rclpy.rosout).
        self._sink = sink
        self._seen: dict[tuple[Any, ...], Any] = {}  # per call site: once/skip/throttle state

    # -- levels ------------------------------------------------------------------------

    def set_level(self, level: Any) -> bool:
        set_logger_level(self.name, level)
        return True

    def get_effective_level(self) -> LoggingSeverity:
        return get_logger_effective_level(self.name)

    def is_enabled_for(self, severity: Any) -> bool:
        return LoggingSeverity(severity) >= self.get_effective_level()

    def get_child(self, name: str) -> RcutilsLogger:
        if not name:
            raise ValueError("child logger name must not be empty")
        return RcutilsLogger(f"{self.name}.{name}" if self.name else name, self._now, self._sink)

    # -- logging -------------------------------------------------------------------------

    def log(self, message: Any, severity: Any, **kwargs: Any) -> bool:
        """Log ``message`` if enabled and its filters let it through; True if logged
        (whether or not an output takes it, as rclpy)."""
        unknown = set(kwargs) - _KNOWN_KW
        if unknown:
            raise TypeError(f"unsupported logging keyword(s): {', '.join(sorted(unknown))}")
        severity = LoggingSeverity(severity)
        if not self.is_enabled_for(severity):
            return False
        # rclpy keys a call's filter state by where it was called from.
        caller = sys._getframe(1)
        while caller.f_code.co_filename == __file__ and caller.f_back is not None:
            caller = caller.f_back
        site = (caller.f_code.co_filename, caller.f_lineno, severity)
        if not self._passes(site, kwargs):
            return False
        name = "WARN" if severity == LoggingSeverity.WARN else severity.name
        if _config["stdout"]:
            print(f"[{name}] [{time.time():.9f}] [{self.name}]: {message}", file=sys.stderr)
        if self._sink is not None and _config["rosout"]:
            self._sink(self.name, severity, f"{message}", caller)
        return True

    def _passes(self, site: tuple[Any, ...], kw: dict[str, Any]) -> bool:
        state = self._seen.setdefault(site, {"calls": 0, "last": None})
        state["calls"] += 1
        if kw.get("once") and state["calls"] > 1:
            return False
        if kw.get("skip_first") and state["calls"] == 1:
            return False
        period = kw.get("throttle_duration_sec")
        if period is not None:
            now = self._now()
            if state["last"] is not None and now - state["last"] < period * 1e9:
                return False
            state["last"] = now
        return True

    def debug(self, message: Any, **kwargs: Any) -> bool:
        return self.log(message, LoggingSeverity.DEBUG, **kwargs)

    def info(self, message: Any, **kwargs: Any) -> bool:
        return self.log(message, LoggingSeverity.INFO, **kwargs)

    def warning(self, message: Any, **kwargs: Any) -> bool:
        return self.log(message, LoggingSeverity.WARN, **kwargs)

    warn = warning

    def error(self, message: Any, **kwargs: Any) -> bool:
        return self.log(message, LoggingSeverity.ERROR, **kwargs)

    def fatal(self, message: Any, **kwargs: Any) -> bool:
        return self.log(message, LoggingSeverity.FATAL, **kwargs)


def get_logger(name: str) -> RcutilsLogger:
    return RcutilsLogger(name)
