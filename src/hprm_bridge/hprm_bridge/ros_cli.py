"""``hprm-ros``: run unmodified rclpy nodes as one deterministic HPRM federation.

``hprm-ros run talker.py listener.py`` starts an RTI and one federate process
per node (see :mod:`hprm_bridge.porting`); the federate is named after the
file (``NAME=FILE`` to choose), and topics of the same name between nodes
become tagged connections, found from what each node created. Output is
prefixed with each federate's name; the exit code is the first failure's.
``hprm-ros graph`` takes the same arguments and draws that federation
(text, Mermaid or Graphviz dot) without running it.

Example::

    hprm-ros run camera.py detector.py --coordination decentralized \\
        --stp-offset "20 ms" --timeout "5 s" --after /feedback="1 ms"
    hprm-ros run deadline.py --arguments deadline="350 --publish-for 3000"
    hprm-ros graph camera.py detector.py --format mermaid
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hprm_bridge.bridge_config import lateness_arg, tag_policy_arg
from hprm_bridge.porting import GATEWAY_NAME, late_spec
from hprm_bridge.rclpy.node import NODE_SERVICES
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
    """``NODE:NAME:=VALUE`` (a parameter) or ``NODE:FROM:=TO`` (a remapping)."""
    node, sep, rest = text.partition(":")
    if not sep or ":=" not in rest or rest.startswith(":="):
        raise argparse.ArgumentTypeError(f"expected NODE:NAME:=VALUE, got {text!r}")
    return node, rest


def _arguments_arg(text: str) -> tuple[str, list[str]]:
    """``NODE=ARGS``: the program arguments of one node, split as a shell would."""
    node, sep, rest = text.partition("=")
    if not sep or not node:
        raise argparse.ArgumentTypeError(f'expected NODE="ARG ...", got {text!r}')
    try:
        return node, shlex.split(rest)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--arguments {node}: {exc}") from None


def _per_node_duration(text: str) -> tuple[str | None, str]:
    """``DURATION`` (every federate) or ``NODE=DURATION`` (that node's federate only)."""
    node, sep, value = text.rpartition("=")
    return (node if sep else None), duration_arg(value)


def _late_arg(text: str) -> tuple[str, str]:
    """``--late`` (``--late-publisher``) ``NODE=TOPIC:TYPE``: (node, "TOPIC:TYPE")."""
    node, sep, spec = text.partition("=")
    if not (sep and node):
        raise argparse.ArgumentTypeError(f"expected NODE=TOPIC:TYPE, got {text!r}")
    try:
        return node, late_spec(spec)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{node}: {exc}") from None


def _node_options(p: argparse.ArgumentParser) -> None:
    """What ``run`` and ``graph`` both take: the nodes and what shapes their ports."""
    p.add_argument("nodes", nargs="+", type=_node_arg, metavar="[NAME=]FILE|module:function")
    p.add_argument("--coordination", choices=("centralized", "decentralized"),
                   default="centralized")  # fmt: skip
    p.add_argument("--after", action="append", default=[], type=after_arg,
                   metavar="TOPIC=DURATION", help="a logical delay on a topic")  # fmt: skip
    p.add_argument("--params-file", action="append", default=[], metavar="FILE",
                   help="a ROS 2 params file for every node (each reads its own)")  # fmt: skip
    p.add_argument("--param", action="append", default=[], type=_param_arg,
                   metavar="NODE:NAME:=VALUE", help="one parameter of one node")  # fmt: skip
    p.add_argument("--remap", action="append", default=[], type=_param_arg,
                   metavar="NODE:FROM:=TO",
                   help="one remapping of one node (a topic, __ns or __node)")  # fmt: skip
    p.add_argument("--late", action="append", default=[], type=_late_arg,
                   metavar="NODE=TOPIC:TYPE",
                   help="a port for a subscription the node makes after the start, on a "
                   "topic other federates publish (repeatable)")  # fmt: skip
    p.add_argument("--late-publisher", action="append", default=[], type=_late_arg,
                   metavar="NODE=TOPIC:TYPE", dest="late_publisher",
                   help="a port for a publisher the node makes after the start, on a topic "
                   "it had none of (repeatable)")  # fmt: skip
    p.add_argument("--arguments", action="append", default=[], type=_arguments_arg,
                   metavar='NODE="ARG ..."',
                   help="a node's own command-line arguments (what ros2 run passes after "
                   "the executable; shell-quoted, repeatable)")  # fmt: skip


def _check(p: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    names = [n for n, _ in args.nodes]
    for f in args.params_file:
        if not Path(f).is_file():
            p.error(f"params file not found: {f}")
    for option in ("param", "remap", "arguments", "late", "late_publisher"):
        unknown = sorted({node for node, _ in getattr(args, option)} - set(names))
        if unknown:
            flag, listed = option.replace("_", "-"), ", ".join(names)
            p.error(f"--{flag} names no node {', '.join(unknown)} (nodes: {listed})")
    per_node = ("stp_offset", "busy_poll") if args.command == "run" else ()  # [NODE=]VALUE
    for option in per_node:  # NODE None: every node
        unknown = sorted({node for node, _ in getattr(args, option)} - {None, *names})
        if unknown:
            flag = "--" + option.replace("_", "-")
            p.error(f"{flag} names no node {', '.join(unknown)} (nodes: {', '.join(names)})")
    if getattr(args, "node_services", False) and not args.bridge:
        p.error("--node-services reach ROS 2 through the gateway: add --bridge")
    if len(set(names)) != len(names):
        p.error(f"two nodes are named alike ({', '.join(names)}): give NAME=FILE")
    config = getattr(args, "bridge_config", None)
    if config:
        if not args.bridge:
            p.error("--bridge-config configures the gateway: add --bridge")
        from hprm_bridge.bridge_config import BridgeConfig

        try:
            BridgeConfig.load(config)
        except ValueError as exc:
            p.error(str(exc))
    if GATEWAY_NAME in names:
        p.error(f"{GATEWAY_NAME} is the gateway's name: give the node another (NAME=FILE)")
    return names


def _node_command(
    args: argparse.Namespace, name: str, node: str, flags: list[str] | tuple[str, ...] = ()
) -> list[str]:
    """One node's federate process (``hprm_bridge.porting``) with ``flags``, its
    --ros-args and, last, its own arguments."""
    cmd = [sys.executable, "-m", "hprm_bridge.porting", node, name, *flags]
    cmd += [a for n, spec in args.late if n == name for a in ("--late", spec)]
    cmd += [a for n, spec in args.late_publisher if n == name for a in ("--late-publisher", spec)]
    ros_args = [a for f in args.params_file for a in ("--params-file", str(Path(f).resolve()))]
    ros_args += [a for n, kv in args.param if n == name for a in ("-p", kv)]
    ros_args += [a for n, rule in args.remap if n == name for a in ("-r", rule)]
    if ros_args:
        cmd += ["--ros-args-json", json.dumps(ros_args)]
    own = [a for n, given in args.arguments if n == name for a in given]
    return [*cmd, "--", *own] if own else cmd


def _run(args: argparse.Namespace) -> int:
    timing = ["--timeout", args.timeout] if args.timeout else []  # the gateway's too
    every_node: list[str] = []
    per_node: dict[str, list[str]] = {}
    # the gateway shares the nodes' STP offset; it does not spin (measured: no gain)
    for flag, given, shared in (("--stp-offset", args.stp_offset, timing),
                                ("--busy-poll", args.busy_poll, every_node)):  # fmt: skip
        by_node = dict(given)  # every name known (_check)
        if None in by_node:
            shared.extend([flag, by_node[None]])
        for n, _ in args.nodes:
            if n in by_node:
                per_node.setdefault(n, []).extend([flag, by_node[n]])
    extra = {}
    if args.node_services:
        os.environ[NODE_SERVICES] = "1"  # the nodes' processes inherit it
    if args.bridge:  # the RTI gives it the topics the nodes leave open
        extra[GATEWAY_NAME] = [sys.executable, "-m", "hprm_bridge.gateway", GATEWAY_NAME, *timing]
        extra[GATEWAY_NAME] += ["--lateness", args.lateness] if args.lateness else []
        extra[GATEWAY_NAME] += ["--config", args.bridge_config] if args.bridge_config else []
        for topic, (policy, offset) in args.tag_policy:
            extra[GATEWAY_NAME] += ["--tag-policy", f"{topic}={policy}:{offset} ns"]
    return launch_nodes(args, timing + every_node, extra, per_node)


def launch_nodes(
    args: argparse.Namespace,
    node_flags: list[str],
    extra: dict[str, list[str]],
    per_node: dict[str, list[str]] | None = None,
) -> int:
    """One federation: a federate per node (with ``node_flags``, then its
    ``per_node`` flags, which win), the ``extra`` federates (a gateway, a bag
    player), the RTI; its exit code."""
    from hprm_bridge.porting import rti_options
    from hprm_core.launcher import Launch

    per_node = per_node or {}
    commands = {
        name: _node_command(args, name, node, [*node_flags, *per_node.get(name, [])])
        for name, node in args.nodes
    }
    commands.update(extra)
    after = {topic: f"{ns} ns" for topic, ns in args.after}
    return Launch.of_processes(commands, rti_args=rti_options(args.coordination, after)).wait()


def _describe(args: argparse.Namespace) -> dict[str, list[dict[str, Any]]] | None:
    """Start every node only as far as its ports (in parallel): what each
    publishes and subscribes, by node name; None (after saying why) if one fails."""
    ports = {}
    with tempfile.TemporaryDirectory(prefix="hprm-describe-") as tmp:
        procs = {}
        for name, node in args.nodes:
            out = Path(tmp) / f"{name}.json"
            cmd = _node_command(args, name, node, ["--describe", str(out)])
            procs[name] = (out, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                                 stderr=subprocess.STDOUT, text=True))  # fmt: skip
        failed = False
        for name, (out, proc) in procs.items():
            text, _ = proc.communicate()
            if proc.returncode != 0 or not out.exists():
                failed = True
                print(f"hprm-ros {args.command}: node {name} failed before spin() "
                      f"(exit code {proc.returncode}):\n{text}", file=sys.stderr)  # fmt: skip
                continue
            ports[name] = json.loads(out.read_text())
    return None if failed else ports


def _graph(args: argparse.Namespace) -> int:
    """Match the nodes' ports by topic exactly as the RTI of ``run`` would,
    and draw the result."""
    from hprm_core.diagram import render_federation
    from hprm_core.errors import AssemblyError
    from hprm_core.structure import FederationGraph

    ports = _describe(args)
    if ports is None:
        return 1
    try:
        graph = FederationGraph.from_descriptions(
            [n for n, _ in args.nodes], ports, coordination=args.coordination,
            after=dict(args.after), break_cycles=True,
        )  # fmt: skip
    except AssemblyError as exc:
        print(f"hprm-ros graph: {exc}", file=sys.stderr)
        return 1
    print(render_federation(graph, ports, args.format))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hprm-ros", description="Run rclpy nodes on HPRM")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run nodes as one federation (one process per node)")
    _node_options(r)
    r.add_argument("--timeout", type=duration_arg, help='stop at this logical time, e.g. "5 s"')
    r.add_argument("--stp-offset", action="append", default=[], type=_per_node_duration,
                   metavar="[NODE=]DURATION",
                   help="decentralized: safe-to-process offset, of every node or of one "
                   "(repeatable; a node's own wins)")  # fmt: skip
    r.add_argument("--busy-poll", action="append", default=[], type=_per_node_duration,
                   metavar="[NODE=]DURATION",
                   help="spin this long (or 'forever') before sleeping when idle, of every "
                   "node or of one: no kernel wake-up per message, a CPU per spinning node "
                   "(for machines with cores to spare; repeatable; a node's own wins)")  # fmt: skip
    r.add_argument("--bridge", action="store_true",
                   help="carry the topics the nodes leave open (no publisher, or no subscriber, "
                   "among them) to and from plain ROS 2, through a gateway federate")  # fmt: skip
    r.add_argument("--node-services", action="store_true",
                   help="--bridge: the nodes' log lines on /rosout and their parameters for "
                   "ros2 param, through the gateway")  # fmt: skip
    r.add_argument("--tag-policy", action="append", default=[], type=tag_policy_arg,
                   metavar="TOPIC=header_stamp[:OFFSET]",
                   help="--bridge: tag a topic from ROS 2 by its header.stamp (+ OFFSET) "
                   "instead of its arrival")  # fmt: skip
    r.add_argument("--bridge-config", metavar="FILE",
                   help="--bridge: which open topics cross and how (YAML: allow, deny, "
                   "lateness, topics; see hprm_bridge.bridge_config)")  # fmt: skip
    r.add_argument("--lateness", type=lateness_arg, metavar="drop|clamp|MODULE:FUNCTION",
                   help="--bridge, header_stamp: drop (and count) or clamp a message whose "
                   "tag would lie behind its arrival, or hand it to MODULE:FUNCTION(topic, "
                   "msg, stamp_ns, arrival_ns), which returns what to deliver or None")  # fmt: skip
    g = sub.add_parser("graph", help="draw the federation the nodes would form (not run)")
    _node_options(g)
    g.add_argument("--format", choices=("text", "mermaid", "dot"), default="text")
    from hprm_bridge.bag import cli as bag_cli

    b = bag_cli.add_parsers(sub, _node_options)
    args = p.parse_args(argv)
    if args.command == "bag":
        return bag_cli.run(args, b, _check, launch_nodes)
    _check(r if args.command == "run" else g, args)
    return _run(args) if args.command == "run" else _graph(args)


if __name__ == "__main__":
    sys.exit(main())
