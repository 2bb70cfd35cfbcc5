"""``hprm-ros bag``: play a bag through ported nodes (and record), compare two bags.

Examples::

    hprm-ros bag play drive.mcap detector.py planner.py controller.py \\
        --record out1 --fast
    hprm-ros bag play drive.mcap detector.py ... --stamp /camera/image_raw --record out2
    hprm-ros bag diff out1 out2        # "identical", or the first difference; exit 1
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

PLAYER = "rosbag"  # the federates' names: the player, and the recorder
RECORDER = "rosbag_recorder"


def add_parsers(sub: Any, node_options: Callable[[argparse.ArgumentParser], None]) -> Any:
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
    diff = verbs.add_parser("diff", help="the first difference between two bags")
    diff.add_argument("a")
    diff.add_argument("b")
    return play


def run(
    args: argparse.Namespace,
    play: argparse.ArgumentParser,
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
    check(play, args)
    if args.fast and args.coordination == "decentralized":
        play.error("--fast needs centralized coordination (decentralized waits in physical time)")
    from hprm_bridge.bag.source import BagError, BagSource

    try:  # a clear error before any process starts; the recording's time base
        source = BagSource(args.bag, set(args.stamp))
        first = next(source.messages(), None)
        source.close()
    except BagError as exc:
        play.error(str(exc))
    if args.record and Path(args.record).exists():
        play.error(f"--record {args.record}: already exists (rosbag2 writes a new directory)")
    flags = ["--fast"] if args.fast else []
    flags += ["--stp-offset", args.stp_offset] if args.stp_offset else []
    extra = {PLAYER: [sys.executable, "-m", "hprm_bridge.bag.player", args.bag, PLAYER, *flags,
                      "--linger", args.linger,
                      *(a for topic in args.stamp for a in ("--stamp", topic))]}  # fmt: skip
    if args.record:
        extra[RECORDER] = [sys.executable, "-m", "hprm_bridge.bag.recorder", args.record,
                           RECORDER, *flags, "--storage", args.storage,
                           "--time-base", str(first.time if first else 0)]  # fmt: skip
    return launch_nodes(args, flags, extra)
