"""Running an unmodified rclpy node file as an HPRM federate.

``python -m hprm_bridge.porting NODE NAME --rti ADDR --federation ID
[--listen-dir DIR] [--timeout D] [--stp-offset D] [-- NODE ARGS...]`` is one
federate process
(what ``hprm-ros run`` starts per node): it makes ``import rclpy`` and
``import <pkg>.msg`` resolve to HPRM's implementations (ahead of a sourced
ROS 2), then runs NODE, a file (as ``__main__``) or ``package.module:function``
(a ROS 2 entry point). The node's ``rclpy.spin(node)`` runs it as federate
NAME: it describes its publishers and subscriptions to the RTI, which
connects them by topic to the other nodes'.

Outside a federation (no ``--rti``), ``rclpy.spin`` runs the node on its
own in logical time, until ``HPRM_TIMEOUT``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import logging
import os
import runpy
import sys
import types
from typing import Any

from hprm_bridge import messages
from hprm_bridge.rclpy.graph import ROS_TOPICS_LABEL
from hprm_core.process_output import setup_process_output

_SETTINGS: dict[str, Any] = {}
ROS_NODE_LABEL = "ros_node"  # a ported federate's label (FederationGraph.labels): /ns/name
# A composed federate's other nodes (rclpy/composition.py), comma-separated full names
# (its ROS_TOPICS_LABEL entries name the sibling each belongs to).
ROS_SIBLINGS_LABEL = "ros_siblings"
# The gateway federate's name (hprm_bridge.gateway): here, so that what starts it need not
# import the gateway and DDS with it.
GATEWAY_NAME = "ros2_gateway"


def late_spec(text: str) -> str:
    """A port for late subscriptions or publishers as ``--late`` and ``--late-publisher``
    take it, ``TOPIC:TYPE`` (a full topic name, a message type), checked; a ValueError
    saying what is expected otherwise."""
    topic, colon, ros_type = text.partition(":")
    if not (colon and topic.startswith("/") and ros_type.count("/") == 2):
        raise ValueError(
            "expected TOPIC:TYPE, a full topic name and its message type (e.g. "
            f"/chatter:std_msgs/msg/String), got {text!r}"
        )
    return text


# Why a module of rclpy's is missing, for the error a node file's import of it meets.
_OFFERED = "HPRM offers rclpy's node API (node, executors, timers, services, actions, logging)"


# rclpy modules that are one concept here: rclpy.validate_topic_name is rclpy.names
_RCLPY_ALIASES = {
    f"rclpy.{m}": "rclpy.names"
    for m in ("validate_topic_name", "validate_full_topic_name", "validate_node_name",
              "validate_namespace", "expand_topic_name")
}  # fmt: skip


# ROS 2's Python packages a federate's process takes from hprm_bridge
_REPLACED = ("rclpy", "sensor_msgs_py")


class _RclpyFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``rclpy`` and ``rclpy.X`` are ``hprm_bridge.rclpy`` and ``hprm_bridge.rclpy.X``
    (``sensor_msgs_py`` the same); a module of theirs that HPRM does not offer is a
    ModuleNotFoundError saying so (an ImportError: a node's ``try: import ... except
    ImportError`` still works)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.partition(".")[0] not in _REPLACED:
            return None
        spec = importlib.util.find_spec(self._ours(fullname))
        if spec is None:
            raise ModuleNotFoundError(
                f"{fullname} is not available in an HPRM federate: {_OFFERED}. Run this node as a "
                "plain ROS 2 node beside the federation (hprm-ros run --bridge) until it is.",
                name=fullname,
            )
        return importlib.machinery.ModuleSpec(
            fullname, self, is_package=spec.submodule_search_locations is not None
        )

    @staticmethod
    def _ours(fullname: str) -> str:
        return "hprm_bridge." + _RCLPY_ALIASES.get(fullname, fullname)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return importlib.import_module(self._ours(spec.name))

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def install_imports() -> None:
    """``import rclpy`` (and ``sensor_msgs_py``) and ``import <pkg>.msg`` give HPRM's in
    this process, and ``time.sleep`` is the one that sleeps in logical time inside an
    action's execute callback (:mod:`hprm_bridge.rclpy.logical_sleep`; Python's
    everywhere else): set before the node file runs, so its ``from time import sleep``
    takes it too."""
    from hprm_bridge.rclpy import logical_sleep

    if not any(isinstance(f, _RclpyFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _RclpyFinder())
    messages.install()
    logical_sleep.install()


def rti_options(
    coordination: str = "centralized", after: dict[str, str] | None = None
) -> list[str]:
    """What the RTI of a federation of ported nodes is told beyond the names
    (shared by ``hprm-ros run`` and the ``ros2 launch`` action): nodes that
    publish to each other get their loops broken by a microstep."""
    opts = ["--coordination", coordination, "--break-cycles"]
    for topic, d in (after or {}).items():
        opts += ["--after", f"{topic}={d}"]
    return opts


def check_federation(
    names: list[str],
    *,
    coordination: str = "centralized",
    durations: dict[str, str | None] | None = None,
) -> None:
    """Refuse, naming the problem, what would otherwise fail only after the
    processes were started: a bad coordination, federate name or duration."""
    from hprm_core.structure import COORDINATIONS
    from hprm_core.tag import duration

    if coordination not in COORDINATIONS:
        raise ValueError(f"coordination must be one of {COORDINATIONS}, got {coordination!r}")
    if not names:
        raise ValueError("a federation needs at least one node")
    for n in names:
        if not n or not n.replace("_", "a").isalnum():
            raise ValueError(f"federate name {n!r}: letters, digits and '_' only")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"two nodes are named {', '.join(twice)}: give each its own name")
    for label, value in (durations or {}).items():
        if value is None:
            continue
        try:
            ns = duration(value)
        except ValueError as exc:
            raise ValueError(f"{label}: {exc}") from None
        if ns < 0:
            raise ValueError(f"{label}: {value!r} is negative")


def sibling_nodes(labels: dict[str, str]) -> list[str]:
    """The full names of the nodes a composed federate holds beside its first."""
    return [n for n in labels.get(ROS_SIBLINGS_LABEL, "").split(",") if n]


def label_endpoints(labels: dict[str, str], node: str) -> list[tuple[Any, ...]]:
    """A ported federate's endpoints from its topics label: ``(node, kind, name, type,
    qos)``, ``node`` where the entry names none (a composed sibling's names its own)."""
    found = []
    for kind, name, ros_type, *rest in json.loads(labels.get(ROS_TOPICS_LABEL, "[]")):
        qos = rest[0] if rest else None
        found.append((rest[1] if len(rest) > 1 else node, kind, name, ros_type, qos))
    return found


def endpoint_nodes(labels: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """A composed federate's port topics it ``writes`` and ``reads``, each with the nodes
    it belongs to (empty for a federate of one node: all its ports are its node's)."""
    from hprm_bridge import service_ports

    if not sibling_nodes(labels):
        return {}
    owners: dict[str, dict[str, list[str]]] = {"writes": {}, "reads": {}}
    for node, kind, name, _, _ in label_endpoints(labels, labels.get(ROS_NODE_LABEL, "")):
        request, reply = service_ports.request_topic(name), service_ports.reply_topic(name)
        ends = {"pub": [("writes", name)], "sub": [("reads", name)],
                "srv": [("reads", request), ("writes", reply)],
                "cli": [("writes", request), ("reads", reply)]}.get(kind, [])  # fmt: skip
        for end, topic in ends:
            nodes = owners[end].setdefault(topic, [])
            if node not in nodes:
                nodes.append(node)
    return owners


def federate_names() -> tuple[str, str]:
    """(federation id, federate name) of this process's node ("" outside a federation)."""
    return _SETTINGS.get("federation") or "", _SETTINGS.get("name") or ""


def describing() -> bool:
    """True in ``hprm-ros graph``'s pass, where spinning writes the node's ports instead of
    running it."""
    return bool(_SETTINGS.get("describe"))


def run_node(node: Any, *siblings: Any) -> int:
    """What ``rclpy.spin(node)`` does here: the node as a federate, or on its own; with
    ``siblings`` (an executor's other nodes), all of them as one federate
    (:mod:`hprm_bridge.rclpy.composition`)."""
    from hprm_core import run
    from hprm_core.federate import run_self_described

    _SETTINGS["spun"] = True
    if _SETTINGS.get("late_publishers"):  # before its build: in the publish's effects
        from hprm_bridge.rclpy import late_entities

        late_entities.declare_publishers(node, _SETTINGS["late_publishers"])
    reactor = node._as_reactor()
    nodes = [node, *siblings]
    for n in nodes:  # what a subscription made after the start may hear
        n._process = nodes
    if _SETTINGS.get("late"):  # ports for late subscriptions (rclpy/late_subscriptions.py)
        from hprm_bridge.rclpy import late_subscriptions

        late_subscriptions.declare(node, _SETTINGS["late"])
    if siblings:
        from hprm_bridge.rclpy.composition import compose

        for n in siblings:
            n._reports_status = False  # the federate's status: the first node's
            n._as_reactor()
        reactor = compose(nodes, _SETTINGS.get("name") or "main")
    if describing():  # hprm-ros graph: the node's ports, not a run
        from hprm_core.structure import describe_ports

        with open(_SETTINGS["describe"], "w") as f:
            json.dump(describe_ports(reactor), f)
        return 0
    timeout = _SETTINGS.get("timeout") or os.environ.get("HPRM_TIMEOUT")
    if not _SETTINGS.get("rti"):
        run(reactor, timeout=timeout)
        return 0
    options: dict[str, Any] = {"timeout": timeout, "fast": bool(_SETTINGS.get("fast"))}
    for key in ("stp_offset", "busy_poll"):
        if _SETTINGS.get(key):
            options[key] = _SETTINGS[key]
    return run_self_described(
        reactor,
        _SETTINGS["name"],
        rti=_SETTINGS["rti"],
        secret=os.environ["HPRM_SECRET"].encode(),
        federation=_SETTINGS["federation"],
        options=options,
        listen_dir=_SETTINGS.get("listen_dir"),
        labels={
            ROS_NODE_LABEL: node.get_fully_qualified_name(),
            ROS_TOPICS_LABEL: node._graph.label(*(n._graph for n in siblings)),
            **(
                {ROS_SIBLINGS_LABEL: ",".join(n.get_fully_qualified_name() for n in siblings)}
                if siblings
                else {}
            ),
        },
        on_graph=lambda graph: _check_connections(nodes, graph),
    )


def _check_connections(nodes: list[Any], graph: Any) -> None:
    for n in nodes:
        n._check_connections(graph)
        n._graph.learn_siblings([m._graph for m in nodes])


def main(argv: list[str] | None = None) -> int:
    from hprm_core.federate import exit_code

    p = argparse.ArgumentParser(prog="python -m hprm_bridge.porting", description=__doc__)
    p.add_argument("node", help="a node file, or package.module:function")
    p.add_argument("name", help="the federate's name (the RTI's --federates list)")
    p.add_argument("--rti")
    p.add_argument("--federation")
    p.add_argument("--listen-dir")
    p.add_argument("--timeout")
    p.add_argument("--stp-offset")
    p.add_argument("--busy-poll", help="spin this long before sleeping (hprm_core busy_poll)")
    p.add_argument("--fast", action="store_true", help="logical time as fast as the nodes run")
    p.add_argument("--late", action="append", default=[], metavar="TOPIC:TYPE", type=late_spec,
                   help="a port for subscriptions the node makes after the start")  # fmt: skip
    p.add_argument("--late-publisher", action="append", default=[], metavar="TOPIC:TYPE",
                   type=late_spec, dest="late_publishers",
                   help="a port for a publisher the node makes after the start")  # fmt: skip
    p.add_argument(
        "--describe",
        metavar="FILE",
        help="write the node's ports (what it publishes and subscribes) as JSON to FILE "
        "instead of running it",
    )
    p.add_argument(
        "--ros-args-json",
        default="[]",
        help="the node's --ros-args as a JSON list (what rclpy.init() finds in sys.argv)",
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    # After "--": the node's own command line (its arguments, --ros-args ...),
    # as a launch system builds it.
    node_argv = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = p.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    try:
        ros_args = json.loads(args.ros_args_json)
        if not (isinstance(ros_args, list) and all(isinstance(a, str) for a in ros_args)):
            raise ValueError("not a list of strings")
    except ValueError as exc:
        p.error(f"--ros-args-json: {exc}")
    if args.rti and not (args.federation and os.environ.get("HPRM_SECRET")):
        p.error("--rti needs --federation and the federation's secret in HPRM_SECRET")
    setup_process_output()
    _SETTINGS.update(
        name=args.name,
        rti=args.rti,
        federation=args.federation,
        listen_dir=args.listen_dir,
        timeout=args.timeout,
        stp_offset=args.stp_offset,
        busy_poll=args.busy_poll,
        fast=args.fast,
        describe=args.describe,
        late=args.late,
        late_publishers=args.late_publishers,
    )
    install_imports()
    from hprm_bridge.rclpy import main_loop

    main_loop.start_unspun_mains()  # a node file that never spins
    sys.argv = [args.node, *node_argv, *(["--ros-args", *ros_args] if ros_args else [])]
    code = exit_code(args.name, lambda: _run_node_code(args.node))
    if code == 0 and not _SETTINGS.get("spun") and (args.rti or args.describe):
        # Its federation would wait for it forever (the RTI starts no one until all joined).
        logging.getLogger("hprm.porting").error(
            "node file %s ended without spinning a node: a ported node file creates its "
            "node and calls rclpy.spin(node), as under ros2 run; it never joined%s",
            args.node,
            " (it is an HPRM reactor program, @main: run it with hprm run)"
            if _SETTINGS.get("reactor_program")
            else "",
        )
        return 1
    return code


def _run_node_code(node: str) -> int:
    """A node file as ``__main__``, or ``package.module:function``; its exit code."""
    from hprm_bridge.rclpy import main_loop

    try:
        if ":" in node and not os.path.exists(node):
            module, _, func = node.partition(":")
            code = int(getattr(importlib.import_module(module), func)() or 0)
            return main_loop.finish(None) or code
        found = runpy.run_path(node, run_name="__main__")
        if not _SETTINGS.get("spun"):  # for the error main() then gives: what was it?
            _SETTINGS["reactor_program"] = any(
                isinstance(v, type) and "_hprm_main_options" in vars(v) for v in found.values()
            )
        return main_loop.finish(None) or 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return main_loop.finish(None) or code
    except KeyboardInterrupt:
        code = main_loop.interrupted()
        if code is None:
            raise
        return code
    except Exception as exc:
        code = main_loop.finish(exc)
        if code is not None:  # the node failed, as a callback's error fails it, or the
            # federation's stop ended its main loop (ExternalShutdownException)
            return 1 if main_loop.failed(exc) else code
        if _SETTINGS.get("spun"):
            raise  # from the runtime, not from the node's own set-up: its frames matter
        from hprm_core.errors import user_traceback

        logging.getLogger("hprm.porting").error(
            "node file %s failed before rclpy.spin():\n%s",
            node,
            user_traceback(exc, skip=(__file__,)),
        )
        return 1


if __name__ == "__main__":
    # Run as the imported module, not as __main__: rclpy.spin (in the node's
    # code) reaches this module's settings through ``hprm_bridge.porting``.
    from hprm_bridge.porting import main as _main

    sys.exit(_main())
