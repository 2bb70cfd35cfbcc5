"""HPRM's implementation of rclpy's API, for ported nodes.

Inside an HPRM federate (started by ``hprm-ros run``, see
:mod:`hprm_bridge.porting`), ``import rclpy`` gives this package, so a node
file written for rclpy runs unchanged: ``rclpy.init()``, build the node,
``rclpy.spin(node)`` (which runs the node as a federate until the federation
ends) or a main loop of ``rclpy.spin_once(node)`` (in logical time:
:mod:`~hprm_bridge.rclpy.main_loop`), ``rclpy.shutdown()``. Outside a
federation (no RTI given), ``spin`` runs the node on its own, in logical time,
until its timeout.

What is not offered raises :class:`~hprm_bridge.rclpy.node.UnsupportedError`
naming the call.
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any

from hprm_bridge.rclpy import constants, logging, main_loop, signals, utilities  # noqa: F401  (rclpy.X, as rclpy)
from hprm_bridge.rclpy import context as context_module
from hprm_bridge.rclpy.arguments import parse_ros_args
from hprm_bridge.rclpy.context import Context
from hprm_bridge.rclpy.logical_sleep import in_turn, leave
from hprm_bridge.rclpy.node import Node, UnsupportedError
from hprm_bridge.rclpy.parameter import Parameter
from hprm_bridge.rclpy.signals import SignalHandlerOptions
from hprm_bridge.rclpy.task import Future

__all__ = [
    "Context", "Node", "Parameter", "SignalHandlerOptions", "UnsupportedError", "create_node",
    "get_default_context", "get_rmw_implementation_identifier", "init",
    "install_signal_handlers", "logging", "ok", "shutdown", "spin", "spin_once",
    "spin_until_future_complete", "uninstall_signal_handlers",
]  # fmt: skip

_state: dict[str, Any] = {
    "initialized": False, "shutdown": False, "args": [], "spinning": [],
    "nodes": weakref.WeakSet(),  # every node made in this process (main_loop.sleep_unspun)
}  # fmt: skip


def init(
    *, args: list[str] | None = None, context: Any = None, domain_id: int | None = None,
    signal_handler_options: Any = None,
) -> None:  # fmt: skip
    """As rclpy's; ``args`` (default ``sys.argv``) may hold ``--ros-args``
    (:mod:`~hprm_bridge.rclpy.arguments`): the logging options apply now, the
    rest (``-p``, ``--params-file``, ``-r``) to every node created after."""
    args = list(sys.argv if args is None else args)
    ros = parse_ros_args(args)  # bad arguments fail here, as in rcl's init
    logging.configure(ros.log_levels, ros.log_outputs)
    _state["initialized"], _state["shutdown"] = True, False
    _state["args"] = args


def ok(*, context: Any = None) -> bool:
    return bool(_state["initialized"]) and not _state["shutdown"]


def get_default_context() -> Context:
    """The process's context (:mod:`~hprm_bridge.rclpy.context`: one process, one context)."""
    return context_module.DEFAULT


def get_rmw_implementation_identifier() -> str:
    """``rmw_hprm``: between ported nodes no rmw runs (their gateway to plain ROS 2 speaks
    DDS as rmw_cyclonedds_cpp)."""
    return "rmw_hprm"


def install_signal_handlers(options: Any = None) -> None:
    """Accepted: a federate's SIGINT and SIGTERM are its own (they stop it cleanly)."""


def uninstall_signal_handlers() -> None:
    """Accepted (see :func:`install_signal_handlers`)."""


def _stopped() -> None:
    """The process's context is shut down: ``ok()`` is False, ``on_shutdown`` callbacks run."""
    _state["shutdown"] = True
    context_module.run_shutdown_callbacks()


def shutdown(*, context: Any = None) -> None:
    """As rclpy's. Called from a callback while the node spins, it stops the
    whole federation at the next tag (every node's shutdown runs), as
    ``rclpy.shutdown()`` ends ``spin`` in a plain ROS 2 process."""
    _stopped()
    for node in _state["spinning"]:
        in_turn(node._reactor.request_stop)
    leave()  # a main taking turns with its node takes no more


def try_shutdown(*, context: Any = None) -> None:
    shutdown()


def create_node(node_name: str, **kwargs: Any) -> Node:
    return Node(node_name, **kwargs)


def spin(node: Node, executor: Any = None) -> None:
    """Run ``node`` until its federation ends (or, on its own, its timeout).
    Raises SystemExit with the federate's exit code when it failed."""
    if executor is not None:  # node.executor, as rclpy's spin sets it
        executor.add_node(node)
    _spin_together([node])


def _spin_together(nodes: list[Node]) -> None:
    """``rclpy.spin`` of one node, or an executor's ``spin()`` of several: one federate
    (:mod:`hprm_bridge.rclpy.composition`)."""
    from hprm_bridge import porting

    # after a spin_once loop, or a main's publish that started the node beside it: until
    # the federation stops
    if len(nodes) == 1 and main_loop.spin_on(nodes[0]):
        return
    for node in nodes:
        if node._finalized:  # only spin builds the node's reactor
            raise UnsupportedError(
                f"node {node.get_name()} spins a second time: an HPRM federate joins its "
                "federation once, so its main spins once (one rclpy.spin or "
                "spin_until_future_complete)"
            )
    main = threading.current_thread() is threading.main_thread()
    if len(nodes) > 1 and not main:
        raise UnsupportedError(
            "an executor spinning several nodes on a thread other than the node file's "
            "main: spin it from the main (the nodes then run as one federate), or give each "
            "node a node file of its own"
        )
    _state["spinning"].extend(nodes)
    try:
        # on a thread of the node file's, its main may step in logical time
        code = porting.run_node(*nodes) if main else main_loop.spin_in_thread(nodes[0])
    finally:
        for node in nodes:
            _state["spinning"].remove(node)
    _stopped()
    if code:
        raise SystemExit(code)
    for node in nodes:
        if node.system_exit is not None:
            raise node.system_exit


def spin_once(node: Node, *, executor: Any = None, timeout_sec: float | None = None) -> None:
    """As rclpy's, for a node file's main loop, in logical time: returns after the
    node's callbacks of its next tag that has any, or ``timeout_sec`` of logical time
    (:mod:`hprm_bridge.rclpy.main_loop` says how, and why)."""
    main_loop.spin_once(node, timeout_sec)


def spin_until_future_complete(
    node: Node, future: Future, executor: Any = None, timeout_sec: float | None = None
) -> None:
    """As rclpy's, in a node file's main: the node runs, in turns with the main as in a
    ``spin_once`` loop, until ``future`` is done or ``timeout_sec`` of logical time has
    passed (the same in every run); the main may then wait for another future, and its
    end stops the federation (:func:`hprm_bridge.rclpy.main_loop.spin_until_future_complete`)."""
    if future.done():
        return
    if executor is not None:
        executor.add_node(node)
    main_loop.spin_until_future_complete(node, future, timeout_sec)


def get_global_executor() -> Any:
    from hprm_bridge.rclpy.executors import SingleThreadedExecutor

    return SingleThreadedExecutor()
