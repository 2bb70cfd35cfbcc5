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
import json
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


def _param_arg(text: str) -> tuple[str, str]:
    node, sep, rest = text.partition(":")
    if not sep or ":=" not in rest:
        raise argparse.ArgumentTypeError(f"expected NODE:NAME:=VALUE, got {text!r}")
    return node, rest


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
    r.add_argument("--params-file", action="append", default=[], metavar="FILE",
                   help="a ROS 2 params file for every node (each reads its own)")  # fmt: skip
    r.add_argument("--param", action="append", default=[], type=_param_arg,
                   metavar="NODE:NAME:=VALUE", help="one parameter of one node")  # fmt: skip
    args = p.parse_args(argv)
    names = [n for n, _ in args.nodes]
    for f in args.params_file:
        if not Path(f).is_file():
            p.error(f"params file not found: {f}")
    unknown = sorted({node for node, _ in args.param} - set(names))
    if unknown:
        p.error(f"--param names no node {', '.join(unknown)} (nodes: {', '.join(names)})")
    if len(set(names)) != len(names):
        p.error(f"two nodes are named alike ({', '.join(names)}): give NAME=FILE")
    commands = {}
    for name, node in args.nodes:
        cmd = [sys.executable, "-m", "hprm_bridge.porting", node, name]
        if args.timeout:
            cmd += ["--timeout", args.timeout]
        if args.stp_offset:
            cmd += ["--stp-offset", args.stp_offset]
        ros_args = [a for f in args.params_file for a in ("--params-file", str(Path(f).resolve()))]
        ros_args += [a for node, kv in args.param if node == name for a in ("-p", kv)]
        if ros_args:
            cmd += ["--ros-args-json", json.dumps(ros_args)]
        commands[name] = cmd
    rti_args = ["--coordination", args.coordination, "--break-cycles"]
    for topic, ns in args.after:
        rti_args += ["--after", f"{topic}={ns} ns"]
    return Launch.of_processes(commands, rti_args=rti_args).wait()


if __name__ == "__main__":
    sys.exit(main())
