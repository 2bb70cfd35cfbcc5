"""Deterministic replay of ROS 2 bags through ported nodes (``hprm-ros bag``).

- :mod:`.source`: a rosbag2 bag (sqlite3 or MCAP, via ``rosbags``; no ROS
  needed) as a stream of messages in a documented, stable order;
- :mod:`.player`: the federate that injects them at logical tags derived
  from their timestamps;
- :mod:`.recorder`: the federate that writes what the nodes publish and none
  subscribes to, stamped with its tags;
- :mod:`.diff`: the first difference between two recorded bags;
- :mod:`.cli`: ``hprm-ros bag play|record|diff``; :func:`play`, :func:`record`
  and :func:`diff` below are the same from Python, and
  ``hprm_bridge.launch.Federation(bag_play=..., bag_record=...)`` from a launch file.

Why it is deterministic: every message enters the federation at a tag fixed
by its timestamp, not by when a player process got round to sending it, and
the federation processes tags in order whatever the machine's load; rosbag2
itself cannot promise this (the play rate changes what nodes see;
equal timestamps have no defined order).

Example::

    from hprm_bridge import bag

    bag.play("drive.mcap", ["detector.py", "planner.py"], record="run1", fast=True)
    bag.play("drive.mcap", ["detector.py", "planner.py"], record="run2")
    assert bag.diff("run1", "run2") is None      # identical
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

__all__ = ["diff", "play", "record"]

PathLike = str | os.PathLike[str]


def _node_args(nodes: Iterable[PathLike], params: Sequence[str]) -> list[str]:
    return [*map(str, nodes), *(a for p in params for a in ("--param", p))]


def _main(argv: list[str]) -> int:
    """``hprm-ros`` in this process; its refusals of arguments become ValueError."""
    from hprm_bridge.ros_cli import main

    try:
        return main(argv)
    except SystemExit as exc:
        if exc.code in (0, None):
            return 0
        if isinstance(exc.code, int) and exc.code != 2:
            return exc.code
        why = "refused its arguments (the reason is printed above)" if exc.code == 2 else exc.code
        raise ValueError(f"hprm-ros {' '.join(argv[:2])}: {why}") from None


def play(
    bag: PathLike,
    nodes: Iterable[PathLike],
    *,
    record: PathLike | None = None,
    stamp: Sequence[str] = (),
    fast: bool = False,
    coordination: str = "centralized",
    stp_offset: str | None = None,
    params: Sequence[str] = (),
) -> int:
    """Play `bag` through `nodes` (files or ``module:function``), recording to `record`;
    the exit code of ``hprm-ros bag play`` with the same options (``params`` as its
    ``--param NODE:NAME:=VALUE``)."""
    argv = ["bag", "play", str(bag), *_node_args(nodes, params), "--coordination", coordination]
    argv += ["--record", str(record)] if record is not None else []
    argv += [a for topic in stamp for a in ("--stamp", topic)]
    argv += ["--fast"] if fast else []
    argv += ["--stp-offset", stp_offset] if stp_offset else []
    return _main(argv)


def record(
    out: PathLike,
    nodes: Iterable[PathLike],
    *,
    timeout: str,
    coordination: str = "centralized",
    storage: str = "mcap",
    params: Sequence[str] = (),
) -> int:
    """Run `nodes` live until the logical time `timeout` (``"10 s"``), writing what they
    publish and none of them subscribes to into the bag `out`; ``hprm-ros bag record``."""
    argv = ["bag", "record", str(out), *_node_args(nodes, params), "--timeout", timeout]
    return _main([*argv, "--coordination", coordination, "--storage", storage])


def diff(a: PathLike, b: PathLike) -> str | None:
    """None when the two bags hold the same messages in the same order with the same
    timestamps, else the first difference (topic, timestamp, field) in words."""
    from hprm_bridge.bag.diff import diff_bags

    return diff_bags(str(a), str(b)) or None
