"""``hprm-ros bag``: play a bag through ported nodes (and record), compare two bags.

Examples::

    hprm-ros bag play drive.mcap detector.py planner.py controller.py \\
        --record out1 --fast
    hprm-ros bag play drive.mcap detector.py ... --stamp /camera/image_raw --record out2
    hprm-ros bag diff out1 out2        # "identical", or the first difference; exit 1
    hprm-ros bag record live camera.py detector.py --timeout "10 s"   # no bag played
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

PLAYER = "rosbag"  # the federates' names: the player, and the recorder
RECORDER = "rosbag_recorder"


def add_parsers(
    sub: Any, node_options: Callable[[argparse.ArgumentParser], None]
) -> dict[str, argparse.ArgumentParser]:
    bag = sub.add_parser("bag", help="deterministic bag replay through ported nodes")
    verbs = bag.add_subparsers(dest="verb", required=True)
    play = verbs.add_parser("play", help="play a bag into a federation of nodes")
    play.add_argument("bag", help="a rosbag2 bag (directory or .mcap/.db3 file)")
    node_options(play)
    play.add_argument("--record", metavar="OUT",
                      help="record what the nodes publish and none subscribes to")  # fmt: skip
    play.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap")
    play.add_argument("--stamp", action="append", default=[], metavar="TOPIC",
                      help="take this topic's logical time from header.stamp "
                      "(default: the recorded receive time)")  # fmt: skip
    play.add_argument(
        "--fast",
        action="store_true",
        help="as fast as the nodes compute (centralized only); default: paced",
    )
    play.add_argument("--stp-offset", help="decentralized: safe-to-process offset")
    play.add_argument("--linger", default="100 ms",
                      help="logical time the federation runs past the last message")  # fmt: skip
    record = verbs.add_parser("record", help="record a live federation of nodes (no bag played)")
    record.add_argument("out", help="the bag to write (a new directory)")
    node_options(record)
    record.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap")
    record.add_argument("--timeout", help='stop at this logical time, e.g. "10 s" (else Ctrl-C)')
    record.add_argument("--stp-offset", help="decentralized: safe-to-process offset")
    record.set_defaults(record=None, bag=None, stamp=[], fast=False, linger=None)
    diff = verbs.add_parser("diff", help="the first difference between two bags")
    diff.add_argument("a")
    diff.add_argument("b")
    return {"play": play, "record": record}


def run(
    args: argparse.Namespace,
    parsers: dict[str, argparse.ArgumentParser],
    check: Callable[[argparse.ArgumentParser, argparse.Namespace], Any],
    launch_nodes: Callable[..., int],
) -> int:
    if args.verb == "diff":
        from hprm_bridge.bag.diff import diff_bags

        try:
            result = diff_bags(args.a, args.b)
        except Exception as exc:
            print(f"hprm-ros bag diff: {exc}", file=sys.stderr)
            return 2
        print(result or "identical")
        return 1 if result else 0
    parser = parsers[args.verb]
    check(parser, args)
    if args.fast and args.coordination == "decentralized":
        parser.error("--fast needs centralized coordination (decentralized waits in physical time)")
    out = args.record if args.verb == "play" else args.out
    try:
        extra = boundary_federates(args.bag, out, stamp=args.stamp, fast=args.fast,
                                   stp_offset=args.stp_offset, storage=args.storage,
                                   linger=args.linger)  # fmt: skip
    except ValueError as exc:
        parser.error(str(exc))
    flags = ["--fast"] if args.fast else []
    flags += ["--stp-offset", args.stp_offset] if args.stp_offset else []
    flags += ["--timeout", args.timeout] if getattr(args, "timeout", None) else []
    return launch_nodes(args, flags, extra)


def boundary_federates(
    bag: str | None,
    record: str | None,
    *,
    stamp: list[str] | tuple[str, ...] = (),
    fast: bool = False,
    stp_offset: str | None = None,
    storage: str = "mcap",
    linger: str | None = "100 ms",
) -> dict[str, list[str]]:
    """The player's and the recorder's commands (without the RTI's address, which the
    launcher or the launch action adds), after checking the bag and the output: one place
    for ``hprm-ros bag``, :func:`hprm_bridge.bag.play` and the launch action.
    Raises ValueError naming what is wrong."""
    from hprm_bridge.bag.source import BagError, BagSource

    first = None
    if bag is not None:
        try:  # a clear error before any process starts; the recording's time base
            source = BagSource(bag, set(stamp))
            first = next(source.messages(), None)
            source.close()
        except BagError as exc:
            raise ValueError(str(exc)) from None
    if record and Path(record).exists():
        raise ValueError(f"{record}: already exists (rosbag2 writes a new directory)")
    flags = ["--fast"] if fast else []
    flags += ["--stp-offset", stp_offset] if stp_offset else []
    extra = {}
    if bag is not None:
        extra[PLAYER] = [sys.executable, "-m", "hprm_bridge.bag.player", str(bag), PLAYER,
                         *flags, "--linger", linger or "100 ms",
                         *(a for topic in stamp for a in ("--stamp", topic))]  # fmt: skip
    if record:
        extra[RECORDER] = [sys.executable, "-m", "hprm_bridge.bag.recorder", str(record),
                           RECORDER, *flags, "--storage", storage,
                           "--time-base", str(first.time if first else 0)]  # fmt: skip
    return extra
