"""Several nodes in one process: one federate, each node a reactor inside it.

ROS 2 composes nodes in one process (ros2/examples' ``composed``: a talker and a
listener added to one executor, ``executor.spin()``). Here that process is one
federate, its reactor a container of the nodes' reactors:

- every port of every node is *hoisted*: the container has a port of the same
  topic and type (named ``<node>_<port>``), so the RTI matches it with the other
  federates' by topic, as it would the node's own;
- a node hears its siblings as it hears itself (:mod:`hprm_bridge.rclpy.callbacks`):
  what a sibling publishes at a tag reaches it one microstep later, at the same
  logical time, each message as it was when published (a copy: as rclpy, a
  subscriber never shares the publisher's object). The federation's messages on
  the topic come first, then the siblings', in the order the nodes were added; a
  sibling whose QoS DDS would not match is not heard, and both get their events
  (:mod:`hprm_bridge.rclpy.qos_compatibility`), as between federates;
- the nodes' callbacks at a tag run one at a time, in an order fixed before the
  start: the executor's threads change nothing (a ``MultiThreadedExecutor`` lets
  each node's callbacks wait, as for one node).

Through a gateway (``hprm-ros run --bridge``) ROS 2 sees each node (``ros2 node
list``, ``ros2 param``); the federation's other ported nodes see each node with its own
endpoints (the federate's label names each sibling's). A topic the nodes of the process
publish and subscribe among themselves reaches the federation's other subscribers too,
but not ROS 2: as any topic the federation both publishes and subscribes, it is not left
open for the gateway (``hprm-ros graph``: "published, no subscriber inside but itself").
"""

from __future__ import annotations

from typing import Any

from hprm_bridge.message_pickle import copied
from hprm_bridge.rclpy import late_subscriptions, main_turns
from hprm_core import Input, Output, Reactor
from hprm_core.structure import shortfall
from hprm_core.trigger import Port

_TO_SIBLING = ""  # a hoisted output's mark: a sibling reads it (Node._check_connections)


class _Composed(Reactor):
    """A federate holding several nodes' reactors."""

    #: sibling pairs whose QoS DDS would not match (output, input, topic, terms): not
    #: connected; their events come from Node._check_connections, as the RTI's refusals
    refused_inside: list[tuple[Port, Port, str, tuple[str, ...]]]
    #: how many siblings' publishers feed a node's input (id(input) -> count): matched
    #: publishers, for liveliness (rclpy/liveliness.py)
    fed_inside: dict[int, int]


def compose(nodes: list[Any], federate: str) -> Reactor:
    """One reactor for ``nodes`` (each already built: ``node._as_reactor()``), its
    top-level ports the nodes' ports, hoisted; ``federate`` is its name in the graph."""
    top = _Composed()
    top.refused_inside = []
    top.fed_inside = {}
    inputs: list[tuple[str, int, Port, Input]] = []
    by_topic: dict[str, list[tuple[int, Port]]] = {}  # topic -> (node index, its output)
    for i, node in enumerate(nodes):
        child = top.attach(f"node{i}", node._reactor)
        ports = [
            e for e in child._elements if isinstance(e, Port) and not main_turns.is_internal(e)
        ]
        for port in ports:
            name = f"{node.get_name()}_{port.name}"
            if name in top.__dict__:  # two nodes of one name: the index tells them apart
                name = f"node{i}_{port.name}"
            node._hoisted[id(port)] = f"{federate}.{name}"
            if isinstance(port, Output):
                hoisted_out = Output(topic=port.topic, msg_type=port.msg_type,
                                     boundary=port.boundary, contract=port.contract)  # fmt: skip
                top.connect(port, top.attach(name, hoisted_out))
                by_topic.setdefault(port.topic or port.name, []).append((i, port))
            else:
                hoisted_in = Input(topic=port.topic, msg_type=port.msg_type, wait=port.wait,
                                   boundary=port.boundary, contract=port.contract)  # fmt: skip
                inputs.append((name, i, port, top.attach(name, hoisted_in)))
    declared = set().union(*(late_subscriptions.declared_ports(n) for n in nodes))
    for name, i, port, hoisted_in in inputs:
        topic = port.topic or port.name
        if id(port) in declared:  # the federation's only (rclpy/late_subscriptions.py)
            top.connect(hoisted_in, port)
            continue
        fed_by = []
        for j, out in by_topic.get(topic, ()):
            if j == i:  # the node's own: it hears itself (callbacks.loopbacks)
                continue
            terms = tuple(shortfall(out.contract, port.contract))
            if terms:  # as the RTI refuses such a pair between federates
                top.refused_inside.append((out, port, topic, terms))
            else:
                fed_by.append((j, out))
        top.fed_inside[id(port)] = len(fed_by)
        if not fed_by:
            top.connect(hoisted_in, port)
            continue
        for j, out in fed_by:  # a client's calls a sibling serves reach a server
            nodes[j]._hoisted[id(out)] = _TO_SIBLING
        mux = top.attach(f"{name}_mux", _Merge(len(fed_by)))
        top.connect(hoisted_in, mux.federation)
        for (_, out), heard in zip(fed_by, mux.siblings, strict=True):
            top.connect(out, heard, after=0)  # a microstep on: no zero-delay loop
        top.connect(mux.merged, port)
    if nodes[0]._main_siblings:  # a main steps them (rclpy/main_turns.py)
        main_turns.connect(top, nodes)
    return top


class _Merge(Reactor):
    """What one input of a node hears: the federation's messages on its topic, then its
    siblings' (a microstep after they published), each sibling's a copy."""

    def __init__(self, siblings: int) -> None:
        super().__init__()
        self.federation = Input()
        self.siblings = [self.attach(f"sibling{k}", Input()) for k in range(siblings)]
        self.merged = Output()
        self.add_reaction(self._merge, self.federation, *self.siblings, effects=[self.merged])

    def _merge(self) -> None:
        values = tuple(self.federation.value or ()) if self.federation.is_present else ()
        for heard in self.siblings:
            if heard.is_present:
                values = (*values, *(copied(m) for m in heard.value))
        if values:
            self.merged.set(values)
