"""The ``--ros-args`` part of a command line, read as rcl reads it (``rcl/arguments.c``).

Why one module: three readers share the same rules. Each node takes its parameters and
remappings from it; ``rclpy.init`` takes the logging options, which are the process's
(log levels, whether lines go to the console and to ``/rosout``); and
``rclpy.utilities.remove_ros_args`` hands what is left to a node's own ``argparse``. A
``--ros-args`` section runs to a ``--`` or the end; a command line may hold several.
What rcl would refuse is refused here too, naming the argument, rather than ignored.

Example::

    >>> a = parse_ros_args(["talker", "--ros-args", "-p", "rate:=5", "--log-level", "debug",
    ...                     "--", "--verbose"])
    >>> a.param_sources, a.log_levels, a.rest
    ([('param', '/**', 'rate', 5)], {'': <LoggingSeverity.DEBUG: 10>}, ['talker', '--verbose'])
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import yaml

from hprm_bridge.rclpy.logging import LoggingSeverity, get_logging_severity_from_string

__all__ = ["InvalidROSArgsError", "RosArgs", "UnknownROSArgsError", "parse_ros_args"]

_LOG_SWITCHES = {
    f"--{on}-{what}-logs": (what, on == "enable")
    for on in ("enable", "disable")
    for what in ("rosout", "stdout", "external-lib")
}


class InvalidROSArgsError(ValueError):
    """A ``--ros-args`` argument rcl knows, given wrongly (rclpy's ``RCLInvalidROSArgsError``)."""


class UnknownROSArgsError(InvalidROSArgsError):
    """Arguments inside ``--ros-args`` that rcl does not know (as rclpy's)."""

    def __init__(self, unknown: list[str]) -> None:
        super().__init__(
            f"unknown --ros-args argument(s) {unknown}: rcl knows -p/--param, -r/--remap, "
            "--params-file, --log-level, -e/--enclave and --enable/--disable-"
            "{rosout,stdout,external-lib}-logs (end the section with '--' before the node's own)"
        )
        self.unknown = unknown


@dataclasses.dataclass
class RosArgs:
    """A command line split as rcl splits it."""

    # -p [node:]name:=value (YAML) as ("param", node pattern, name, value), --params-file
    # as ("file", path), in order: it decides which wins (rclpy/parameter_overrides.py)
    param_sources: list[tuple[Any, ...]] = dataclasses.field(default_factory=list)
    # -r [node:]from:=to as (node or "", from, to), in order: the first that applies wins
    # (rcl's rule; __node and __ns included)
    remaps: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    log_levels: dict[str, LoggingSeverity] = dataclasses.field(default_factory=dict)  # "": all
    log_outputs: dict[str, bool] = dataclasses.field(default_factory=dict)  # "rosout": False...
    rest: list[str] = dataclasses.field(default_factory=list)  # outside --ros-args


def parse_ros_args(args: list[str]) -> RosArgs:
    """Split ``args`` (a whole ``sys.argv``); raises :class:`InvalidROSArgsError` (or
    :class:`UnknownROSArgsError`) where rcl would fail."""
    out = RosArgs()
    unknown: list[str] = []
    inside = False
    it = iter(args)
    for a in it:
        if a == "--ros-args":
            inside = True
        elif not inside:
            out.rest.append(a)
        elif a == "--":
            inside = False
        elif a in _LOG_SWITCHES:
            what, on = _LOG_SWITCHES[a]
            out.log_outputs[what] = on
        elif a in ("-p", "--param", "--params-file", "-r", "--remap", "--log-level",
                   "--log-config-file", "-e", "--enclave"):  # fmt: skip
            _take(out, a, next(it, None))
        else:
            unknown.append(a)
    if unknown:
        raise UnknownROSArgsError(unknown)
    return out


def _take(out: RosArgs, flag: str, value: str | None) -> None:
    if value is None:
        raise InvalidROSArgsError(f"--ros-args {flag} is the last argument: it needs a value")
    if flag in ("-p", "--param"):
        name, sep, text = value.partition(":=")
        if not sep:
            raise InvalidROSArgsError(f"--ros-args {flag} expects NAME:=VALUE, got {value!r}")
        node, _, param = name.rpartition(":")  # NODE:NAME:=VALUE: for one node only
        if node in ("*", "**"):
            raise InvalidROSArgsError(f"--ros-args {flag} {value}: wildcard {node!r} is not "
                                      "implemented here (rcl refuses it too)")  # fmt: skip
        if "/" in node or ":" in node:
            raise InvalidROSArgsError(
                f"--ros-args {flag} {value}: NODE:NAME:=VALUE takes a node's name, without "
                "namespace (rcl cannot parse it either; a params file can name /ns/node)"
            )
        out.param_sources.append(("param", f"/{node}" if node else "/**", param,
                                  yaml.safe_load(text)))  # fmt: skip
    elif flag == "--params-file":
        out.param_sources.append(("file", value))
    elif flag in ("-r", "--remap"):
        src, sep, dst = value.partition(":=")
        if not sep:
            raise InvalidROSArgsError(f"--ros-args {flag} expects FROM:=TO, got {value!r}")
        node, _, src = src.rpartition(":")  # NODE:FROM:=TO: for that node only
        if "/" in node or ":" in node:
            raise InvalidROSArgsError(
                f"--ros-args {flag} {value}: NODE:FROM:=TO takes a node's name, without "
                "namespace (rcl cannot parse it either)"
            )
        out.remaps.append((node, src, dst))
    elif flag == "--log-level":
        name, sep, level = value.rpartition(":=")
        try:
            out.log_levels[name] = get_logging_severity_from_string(level)
        except RuntimeError:
            raise InvalidROSArgsError(
                f"--log-level {value!r}: {level!r} is not a severity "
                "(debug, info, warn, error, fatal or unset; LOGGER:=LEVEL for one logger)"
            ) from None
    elif flag == "--log-config-file":
        raise InvalidROSArgsError(
            f"--log-config-file {value}: Humble's logging backend takes no configuration file "
            "(rcl refuses it too); set levels with --log-level"
        )
    elif os.environ.get("ROS_SECURITY_ENABLE", "").lower() == "true":  # -e / --enclave
        raise InvalidROSArgsError(
            f"--enclave {value} with ROS_SECURITY_ENABLE=true: SROS2 security does not apply "
            "inside an HPRM federation, whose federates authenticate with the federation's key"
        )


def remapped(rules: list[tuple[str, str, str]], node: str, match: Any) -> str | None:
    """What the first rule for ``node`` (or for every node) whose ``from`` satisfies
    ``match`` maps to; None where none does (rcl: the first rule that applies wins)."""
    for only, src, dst in rules:
        if only in ("", node) and match(src):
            return dst
    return None
