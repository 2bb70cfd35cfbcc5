"""A main that steps an executor of several nodes: ``executor.spin_once()`` or
``executor.spin_until_future_complete(f)`` with the nodes one federate.

The nodes of one executor run as one federate (:mod:`hprm_bridge.rclpy.composition`).
A main that steps them takes turns with the first node's reactor, as with one node
(:mod:`hprm_bridge.rclpy.main_loop`); two links make the others part of its turns:

- each sibling tells the first node, at every tag it runs, that it did (a port into
  the first node's ``spin_once`` reaction): ``spin_once`` returns after the next tag at
  which *any* of the executor's nodes ran a callback, as rclpy's executor hands out the
  callbacks of all its nodes;
- the first node tells each sibling when the main had a turn (a port into the sibling's
  publish reaction): what the main publishes on a sibling's publisher goes out at the
  tag of that turn, as it does on the first node's.

Both are zero-delay connections inside the federate, and no cycle: a sibling's
callbacks come before the first node's turn reaction, and the sibling's publish after
it. The ports are the process's own, never hoisted to the federation.

ros2/demos' ``incompatible_qos`` steps a talker and a listener so, until the talker has
published five times.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hprm_core import Input, Output

if TYPE_CHECKING:
    from hprm_bridge.rclpy.logical_sleep import Sleeper
    from hprm_bridge.rclpy.node import Node

_PREFIX = "turns_"  # the links' port names (a node's own ports are pub0, sub0, ...)


def prepare(first: Node, siblings: list[Node]) -> None:
    """Before the nodes' reactors are built: mark the first node and its siblings."""
    first._main_siblings = len(siblings)
    for node in siblings:
        node._in_main_turns = True


def turn_reactions(
    node: Node, sleeper: Sleeper
) -> tuple[Callable[[], None], Callable[[], None], list[Input], list[Output]]:
    """What the node's ``wake`` and ``spin_once`` reactions call, and the ports they
    read and set: the sleeper's own methods, no port, for a node stepped alone; for the
    first of several, one input per sibling (it ran) and one output per sibling (the
    main had a turn), which they read and set."""
    n = node._main_siblings
    if not n:
        return sleeper.wake, sleeper.resume_spinners, [], []
    ran = [node._reactor.attach(f"{_PREFIX}ran{k}", Input()) for k in range(n)]
    go = [node._reactor.attach(f"{_PREFIX}go{k}", Output()) for k in range(n)]

    def wake() -> None:
        sleeper.wake()
        for port in go:  # the main may have published on a sibling's publisher
            port.set(True)

    def resume() -> None:
        if any(port.is_present for port in ran):  # a sibling ran a callback
            sleeper.note_callback()
        sleeper.resume_spinners()
        for port in go:
            port.set(True)

    return wake, resume, ran, go


def sibling_ports(node: Node) -> tuple[Output, Input]:
    """A sibling's: it ran (to the first node), the main had a turn (from it)."""
    reactor = node._reactor
    return reactor.attach(f"{_PREFIX}ran", Output()), reactor.attach(f"{_PREFIX}go", Input())


def is_internal(port: Any) -> bool:
    """Whether ``port`` is one of these links (composition does not hoist them)."""
    return port.name.startswith(_PREFIX)


def connect(top: Any, nodes: list[Node]) -> None:
    """In the composed federate ``top``: the links between the first node and the rest."""
    first = nodes[0]._reactor
    for k, node in enumerate(nodes[1:]):
        sibling = node._reactor
        top.connect(getattr(sibling, f"{_PREFIX}ran"), getattr(first, f"{_PREFIX}ran{k}"))
        top.connect(getattr(first, f"{_PREFIX}go{k}"), getattr(sibling, f"{_PREFIX}go"))
