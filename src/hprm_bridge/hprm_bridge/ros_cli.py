"""``hprm-ros``: run unmodified rclpy nodes as one deterministic HPRM federation.

``hprm-ros run talker.py listener.py`` starts an RTI and one federate process
per node (see :mod:`hprm_bridge.porting`); the federate is named after the
file (``NAME=FILE`` to choose), and topics of the same name between nodes
become tagged connections, found from what each node created. Output is
prefixed with each federate's name; the exit code is the first failure's.

Example::

    hprm-ros run camera.py detector.py --coordination decentralized \\
        --stp-offset "20 ms" --timeout "5 s" --after /feedback="1 ms"
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hprm_core.cli import after_arg, duration_arg


def _node_arg(text: str) -> tuple[str, str]:
    name, eq, node = text.partition("=")
    if not eq:
        node = text
        stem = node.rsplit(":", 1)[-1] if ":" in node and not Path(node).exists() else node
        name = Path(stem).stem
    if not name.replace("_", "a").isalnum():
        raise argparse.ArgumentTypeError(f"federate name {name!r}: letters, digits and '_' only")
    if ":" not in node and not Path(node).is_file():
        raise argparse.ArgumentTypeError(f"node file not found: {node}")
    return name, node


def main(argv: list[str] | None = None) -> int:
    from hprm_core.launcher import Launch

    p = argparse.ArgumentParser(prog="hprm-ros", description="Run rclpy nodes on HPRM")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run nodes as one federation (one process per node)")
    r.add_argument("nodes", nargs="+", type=_node_arg, metavar="[NAME=]FILE|module:function")
    r.add_argument("--coordination", choices=("centralized", "decentralized"),
                   default="centralized")  # fmt: skip
    r.add_argument("--timeout", type=duration_arg, help='stop at this logical time, e.g. "5 s"')
    r.add_argument("--stp-offset", type=duration_arg, help="decentralized: safe-to-process offset")
    r.add_argument("--after", action="append", default=[], type=after_arg,
                   metavar="TOPIC=DURATION", help="a logical delay on a topic")  # fmt: skip
    args = p.parse_args(argv)
    names = [n for n, _ in args.nodes]
    if len(set(names)) != len(names):
        p.error(f"two nodes are named alike ({', '.join(names)}): give NAME=FILE")
    commands = {}
    for name, node in args.nodes:
        cmd = [sys.executable, "-m", "hprm_bridge.porting", node, name]
        if args.timeout:
            cmd += ["--timeout", args.timeout]
        if args.stp_offset:
            cmd += ["--stp-offset", args.stp_offset]
        commands[name] = cmd
    rti_args = ["--coordination", args.coordination]
    for topic, ns in args.after:
        rti_args += ["--after", f"{topic}={ns} ns"]
    return Launch.of_processes(commands, rti_args=rti_args).wait()


if __name__ == "__main__":
    sys.exit(main())
