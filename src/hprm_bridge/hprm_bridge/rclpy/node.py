"""``rclpy.node.Node`` on the reactor runtime: a ported node is one reactor.

What each rclpy concept becomes (the table in ``hprm_bridge/README.md``):

- a publisher is an output port (``topic=``, ``msg_type=``); a subscription
  an input port and a reaction calling its callback; a timer a reactor
  timer in logical time (first firing one period after the start, as rclpy);
- every publish of one tag is delivered, in order: publishing only queues
  the message, and a last reaction of the node (declared after every
  callback, triggered by whatever triggers them) sets each publisher's port
  to the tuple of its messages; a subscription's reaction calls the callback
  once per message. Why not set the port at ``publish()``: a port holds one
  value per tag, and two publishes in one callback would overwrite;
- callbacks of one node run one at a time, in tag order; at one tag, in the
  order the node created its subscriptions and timers;
- ``get_clock().now()`` inside a callback is the tag's logical time;
- a service is a request port and a reply port (:mod:`hprm_bridge.service_ports`):
  a client's ``call_async`` is answered at the same logical time, and its
  future completes in the node's callbacks.
"""

from __future__ import annotations

import collections
import logging
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from hprm_bridge import action_ports, parameter_services
from hprm_bridge.parameter_services import PORT_TYPE, reply_topic, request_topic
from hprm_bridge.rclpy import (
    callbacks,
    federate_status,
    late_entities,
    liveliness,
    node_reactor,
    parameter_calls,
    parameter_service,
    qos_compatibility,
    rosout,
)
from hprm_bridge.rclpy.arguments import parse_ros_args, remapped
from hprm_bridge.rclpy.callback_groups import CallbackGroup, MutuallyExclusiveCallbackGroup
from hprm_bridge.rclpy.client import Client
from hprm_bridge.rclpy.clock import ROSClock
from hprm_bridge.rclpy.deadline import DeadlineWatch
from hprm_bridge.rclpy.exceptions import (
    InvalidNamespaceException,
    InvalidNodeNameException,
    InvalidServiceNameException,
    InvalidTopicNameException,
    NameValidationException,
    UnsupportedError,
)
from hprm_bridge.rclpy.graph import Graph, GraphQueries
from hprm_bridge.rclpy.guard_condition import GuardCondition
from hprm_bridge.rclpy.logging import RcutilsLogger
from hprm_bridge.rclpy.logical_sleep import Sleeper
from hprm_bridge.rclpy.node_parameters import NodeParameterMethods, NodeParameters, _descriptor
from hprm_bridge.rclpy.node_services import NodeServiceMethods
from hprm_bridge.rclpy.node_topics import NodeTopicMethods
from hprm_bridge.rclpy.parameter import Parameter  # noqa: F401  (as rclpy.node)
from hprm_bridge.rclpy.parameter_overrides import resolve as resolve_overrides
from hprm_bridge.rclpy.publisher import Publisher
from hprm_bridge.rclpy.rate import Rate
from hprm_bridge.rclpy.service import Service
from hprm_bridge.rclpy.subscription import Subscription
from hprm_bridge.rclpy.timer import TimerHandle
from hprm_bridge.rclpy.timer_wheel import TimerWheel
from hprm_bridge.wire import naming
from hprm_bridge.wire.naming import InvalidNameError
from hprm_core import Input, LogicalAction, Reactor, Timer

_REASON = re.compile(r"^invalid [a-z ]+ '[^']*': ")  # naming's prefix: rclpy's names the name
NODE_SERVICES = "HPRM_NODE_SERVICES"  # =1: /rosout and ros2 param (hprm-ros run --node-services)


class _NodeReactor(Reactor):
    """The reactor a Node builds; its ports and reactions are added per instance."""


class Node(GraphQueries, NodeTopicMethods, NodeParameterMethods, NodeServiceMethods):
    """The subset of rclpy's Node that nodes publishing, subscribing and
    timing use; see the module docstring for what each call becomes."""

    def __init__(
        self,
        node_name: str,
        *,
        namespace: str | None = None,
        context: Any = None,
        cli_args: list[str] | None = None,
        parameter_overrides: list[Any] | None = None,
        allow_undeclared_parameters: bool = False,
        automatically_declare_parameters_from_overrides: bool = False,
        **kwargs: Any,
    ) -> None:
        from hprm_bridge import rclpy

        args = list(rclpy._state["args"]) if kwargs.get("use_global_arguments", True) else []
        glob, local = parse_ros_args(args), parse_ros_args(list(cli_args or []))
        self._remaps = local.remaps + glob.remaps  # rcl: the node's own rules first
        original = node_name
        node_name = remapped(self._remaps, original, "__node".__eq__) or node_name
        try:
            self._name = naming.validate_node_name(node_name)
        except InvalidNameError as exc:
            raise InvalidNodeNameException(node_name, _REASON.sub("", str(exc))) from None
        ns = remapped(self._remaps, original, "__ns".__eq__) or namespace or "/"
        try:
            self._namespace = naming.normalize_namespace(ns)
        except InvalidNameError as exc:
            raise InvalidNamespaceException(ns, _REASON.sub("", str(exc))) from None
        fqn = f"{self._namespace.rstrip('/')}/{node_name}"
        # files and -p as rcl reads them, the node's own after the process's
        overrides = resolve_overrides(glob.param_sources + local.param_sources, fqn)
        for param in parameter_overrides or ():
            overrides[param.name] = param.value
        self._params = NodeParameters(
            node_name, overrides, allow_undeclared=allow_undeclared_parameters
        )
        if automatically_declare_parameters_from_overrides:
            self._params.declare("", [(n, v, _descriptor()) for n, v in overrides.items()], True)
        # Every rclpy node declares it (ros2 param list shows it). Here time is the
        # federation's logical time whatever it says: true is accepted and reported.
        if "use_sim_time" not in self._params.values:
            self._params.declare("", [("use_sim_time", False, _descriptor())], False)
        if self._params.values["use_sim_time"].value:
            logging.getLogger("hprm.rclpy").warning(
                "node %s: use_sim_time is true, but an HPRM federate's clock is the federation's "
                "logical time (no /clock subscription)",
                node_name,
            )
        self._reactor = _NodeReactor()
        self._hoisted: dict[int, str] = {}  # id(port) -> its name in a composed federate
        # a main stepping an executor of several nodes (rclpy/main_turns.py): the first
        # node's count of siblings, a sibling's True; set before the reactor is built
        self._main_siblings = 0
        self._in_main_turns = False
        self._graph = Graph(fqn)
        self._publishers: list[Publisher] = []
        self._subscriptions: list[Subscription] = []
        self._timers: list[TimerHandle] = []  # made before the start: the reactor's timers
        self._wheel = TimerWheel()  # timers made after it (rclpy/timer_wheel.py)
        self._timers_made_late: list[weakref.ref[TimerHandle]] = []
        self._deadlines: list[DeadlineWatch] = []  # QoS deadlines watched (rclpy/deadline.py)
        self._leases: list[liveliness.Lease] = []  # manual liveliness (rclpy/liveliness.py)
        # a flush a nanosecond on: for a publisher another node destroyed, and the
        # deliveries of late subscriptions (made in build; rclpy/late_subscriptions.py)
        self._kick: Timer | None = None
        self._late_subscriptions: list[Subscription] = []
        self._late_inbox: list[tuple[Any, Callable[[], None], tuple[Any, ...]]] = []
        self._process: list[Node] = [self]  # the nodes of its federate (set by spin)
        # ports for late subscriptions, by topic (--late: late_subscriptions.DeclaredPort)
        self._declared: dict[str, Any] = {}
        self._incompatible: list[Any] = []  # refused by QoS (rclpy/qos_compatibility.py)
        self._guards: list[GuardCondition] = []
        # its main runs beside it, out of turns: it publishes from outside (main_loop.py)
        self._main_beside = False
        self._reaction_thread: int | None = None  # set at the start (logical_sleep.holds_turn)
        self.services: list[Service] = []
        self.clients: list[Client] = []
        self._clock = ROSClock(self._reactor)
        self._clock._set_ros_time_is_active(self._params.values["use_sim_time"].value)
        self._executor: Any = None  # rclpy's node.executor (set by Executor.add_node)
        self._callbacks_as_tasks = False  # spun by a MultiThreadedExecutor (_as_reactor)
        self._default_group = MutuallyExclusiveCallbackGroup()
        # On the ROS 2 graph through the gateway: /rosout and ros2 param (opt-in: more ports
        # on every node, more traffic to the gateway; see hprm_bridge README)
        self._services = os.environ.get(NODE_SERVICES) == "1"
        self._reports_status = self._services  # its federate's status: one node of a process
        self._parameter_calls: Input | None = None
        # other ported nodes' calls of its parameter services (rclpy/parameter_calls.py)
        self._federation_calls: Input | None = None
        if kwargs.get("start_parameter_services", True):
            self._federation_calls, self._federation_answers = parameter_calls.serve(self, fqn)
            for short in parameter_services.SERVICES:  # in the graph, as rclpy's
                self._graph.add("srv", f"{fqn}/{short}", parameter_services.srv_type(short))
        if self._services:
            self._rosout = self._publisher(rosout.TOPIC, rosout.MSG_TYPE, "rosout")
            # never waited for: a call may come late, the node need not wait on the gateway
            self._parameter_calls = Input(topic=request_topic(fqn), msg_type=PORT_TYPE, wait=False)
            self._reactor.attach("parameter_calls", self._parameter_calls)
            self._parameter_replies = self._publisher(reply_topic(fqn), PORT_TYPE,
                                                      "parameter_replies")  # fmt: skip
            events = self._publisher(parameter_service.EVENTS_TOPIC,
                                     parameter_service.EVENT_TYPE, "parameter_events")  # fmt: skip

            def publish_event(new: list[Any], changed: list[Any], deleted: list[Any]) -> None:
                events.publish(parameter_service.event(fqn, self._clock.now_ns(), new, changed,
                                                       deleted))  # fmt: skip

            self._params.on_change = publish_event
            publish_event(list(self._params.values.values()), [], [])  # declared so far
            self._status = self._publisher(federate_status.TOPIC, federate_status.MSG_TYPE,
                                           "federate_status")  # fmt: skip
        self._own_publishers: list[Publisher] = []  # the node's own: ports pub0, pub1...
        sink = self._to_rosout if self._services else None
        # rcl's node logger name: the namespace and name, dotted (/robot1/talker: robot1.talker)
        self._logger = RcutilsLogger(fqn[1:].replace("/", "."), self._clock.now_ns, sink)
        self._sleeper: Sleeper | None = None  # callbacks that sleep in logical time (_tasks)
        self._wake = LogicalAction()
        self._finalized = False
        self.system_exit: SystemExit | None = None  # raised by a callback (node_reactor.exits)
        rclpy._state["nodes"].add(self)
        # the main starts a node it made at its first sleep or publish, never one another
        # thread made (that thread steps it: main_loop.sleep_unspun, published_unspun)
        self._made_by_main = threading.current_thread() is threading.main_thread()

    # -- names --------------------------------------------------------------------

    def get_name(self) -> str:
        return self._name

    def get_namespace(self) -> str:
        return self._namespace

    def get_fully_qualified_name(self) -> str:
        return f"{self._namespace.rstrip('/')}/{self._name}"

    def resolve_topic_name(self, topic: str, *, only_expand: bool = False) -> str:
        """Expanded as ROS 2 does (namespace, ``~``, ``{node}``), then remapped (``-r
        from:=to``, ``from`` as written or expanded); a name ROS 2 refuses is an
        InvalidTopicNameException (a ValueError)."""
        return self._resolve(topic, only_expand, InvalidTopicNameException)

    def resolve_service_name(self, service: str, *, only_expand: bool = False) -> str:
        """As :meth:`resolve_topic_name` (rclpy's rules are the same), refusing with an
        InvalidServiceNameException."""
        return self._resolve(service, only_expand, InvalidServiceNameException)

    def _resolve(self, name: str, only_expand: bool, refused: type[NameValidationException]) -> str:
        expanded = self._expand(name, refused)
        if only_expand:
            return expanded

        def applies(src: str) -> bool:
            return not src.startswith("__") and (
                src == name or self._expand(src, refused) == expanded
            )

        dst = remapped(self._remaps, self._name, applies)  # by the node's (remapped) name
        return expanded if dst is None else self._expand(dst, refused)

    def _expand(self, name: str, refused: type[NameValidationException]) -> str:
        try:
            return naming.expand_topic_name(name, self._name, self._namespace)
        except InvalidNameError as exc:
            raise refused(name, _REASON.sub("", str(exc))) from None

    # -- entities -------------------------------------------------------------------

    def _check_open(self, call: str) -> None:
        if self._finalized:
            raise UnsupportedError(
                f"Node.{call} {late_entities.STARTED}: an HPRM federate's ports are fixed "
                "before its federation starts"
            )

    def _to_rosout(self, logger: str, severity: int, text: str, caller: Any) -> None:
        log = rosout.log_record(logger, severity, text, caller, self._clock.now_ns())
        self._rosout.publish(log)

    def create_timer(
        self, timer_period_sec: float, callback: Callable[..., Any],
        callback_group: CallbackGroup | None = None, clock: Any = None,
    ) -> TimerHandle:  # fmt: skip
        period = round(timer_period_sec * 1_000_000_000)
        if period <= 0:
            raise ValueError(f"timer period must be > 0 s, got {timer_period_sec!r}")
        if self._finalized:  # on the node's timer wheel, first call one period on
            handle = TimerHandle(period, None, callback, self._clock)
            handle._timer = self._late_timer(
                period, callbacks.ticked(handle, self._tasks_of_callbacks())
            )
            handle._timer.reset()
            self._timers_made_late.append(weakref.ref(handle))  # gone once dropped, cancelled
            return self._in_group(handle, callback_group)
        timer = Timer(offset=period, period=period)  # rclpy: first call after one period
        self._reactor.attach(f"timer{len(self._timers)}", timer)
        handle = TimerHandle(period, timer, callback, self._clock)
        self._timers.append(handle)
        return self._in_group(handle, callback_group)

    def create_rate(self, frequency: float, clock: Any = None) -> Rate:
        """A rate whose ``sleep()`` works in logical time inside an action's execute
        callback (:mod:`hprm_bridge.rclpy.rate`)."""
        if frequency <= 0:
            raise ValueError(f"frequency must be > 0, got {frequency!r}")
        return Rate(round(1_000_000_000 / frequency), self._clock.logical_ns)

    def _in_group(self, entity: Any, group: CallbackGroup | None) -> Any:
        """``entity`` in ``group`` (the node's default group if None), as rclpy puts it."""
        entity.callback_group = group if group is not None else self._default_group
        entity.callback_group.add_entity(entity)
        return entity

    # Destroying: a federate's ports are fixed, so an entity's port stays and the entity
    # stops (a subscription's callback is not called again, a service answers no more, a
    # publisher, client or timer refuses use with InvalidHandle), as it would under rclpy.
    # True the first time, as rclpy's.

    def destroy_service(self, service: Service) -> bool:
        return late_entities.destroy(service)

    def destroy_client(self, client: Client) -> bool:
        return late_entities.destroy(client)

    def destroy_timer(self, timer: TimerHandle) -> bool:
        return late_entities.destroy(timer)

    def destroy_node(self) -> None:
        """Every entity the node's code created: usually after spin returns, where it
        changes nothing; in a callback, the node stops there."""
        for entity in [*self._own_publishers, *self._subscriptions,
                       *self._late_subscriptions, *self.timers,
                       *self.services, *self.clients, *self.guards]:  # fmt: skip
            late_entities.destroy(entity)

    # rclpy's entity listings: iterators, of what is not destroyed

    @property
    def timers(self) -> Iterator[TimerHandle]:
        self._timers_made_late = [r for r in self._timers_made_late if r() is not None]
        late = (r() for r in self._timers_made_late)
        return (t for t in (*self._timers, *late) if t is not None and not t._destroyed)

    def _tasks_of_callbacks(self) -> Sleeper | None:
        """What runs the node's callbacks as tasks, where they may wait (spun by a
        MultiThreadedExecutor, ``async def`` callbacks); None where they run in turn."""
        return self._sleeper if self._callbacks_as_tasks else None

    def _late_timer(self, period: int, call: Callable[[], None], note: bool = True) -> Any:
        """A stopped timer on the node's wheel (:mod:`~hprm_bridge.rclpy.timer_wheel`), for
        a timer, deadline or lease made after the start: ``call`` as a callback of the
        node's (``note``: one that ``spin_once`` counts)."""
        return self._wheel.timer(period, node_reactor.exits(self, call, note=note))

    def get_logger(self) -> RcutilsLogger:
        return self._logger

    def get_clock(self) -> ROSClock:
        return self._clock

    @property
    def context(self) -> Any:
        """The process's context (one process, one context: :mod:`hprm_bridge.rclpy.context`)."""
        from hprm_bridge import rclpy

        return rclpy.get_default_context()

    @property
    def executor(self) -> Any:
        """The executor the node was added to, None if none (as rclpy's)."""
        return self._executor

    @executor.setter
    def executor(self, new: Any) -> None:
        if new is self._executor:
            return
        if self._executor is not None:
            self._executor.remove_node(self)
        self._executor = new
        if new is not None:
            new.add_node(self)

    @property
    def default_callback_group(self) -> MutuallyExclusiveCallbackGroup:
        return self._default_group

    def destroy_rate(self, rate: Rate) -> bool:
        rate.destroy()
        return True

    def create_guard_condition(
        self, callback: Callable[[], Any], callback_group: CallbackGroup | None = None
    ) -> GuardCondition:
        """Called back at the next microstep when triggered in the node's turn, as an
        event of the wall clock when triggered by another thread
        (:mod:`hprm_bridge.rclpy.guard_condition` says why)."""
        self._check_open("create_guard_condition")
        guard = GuardCondition(callback, lambda: self._reaction_thread)
        self._reactor.attach(f"guard{len(self._guards)}", guard._soon)
        self._reactor.attach(f"guard{len(self._guards)}_outside", guard._outside)
        self._guards.append(guard)
        return self._in_group(guard, callback_group)

    def destroy_guard_condition(self, guard: GuardCondition) -> bool:
        return late_entities.destroy(guard)

    @property
    def guards(self) -> Iterator[GuardCondition]:
        return (g for g in self._guards if not g._destroyed)

    # -- the reactor ------------------------------------------------------------------

    def _as_reactor(self) -> Reactor:
        """The node's reactor with its reactions (once; spin() calls this). A node spun
        by a MultiThreadedExecutor runs its callbacks as tasks: each may block in a
        service call until its answer, as rclpy lets it there."""
        if not self._finalized:
            from hprm_bridge.rclpy.executors import MultiThreadedExecutor

            threaded = isinstance(self._executor, MultiThreadedExecutor)
            if threaded or node_reactor.has_coroutines(self):
                self._callbacks_as_tasks = True
                self._tasks()
            self._finalized = True
            node_reactor.build(self)
        return self._reactor

    def _check_connections(self, graph: Any) -> None:
        """Before the start: a client whose calls no node serves (and no gateway carries
        to ROS 2) would wait forever; say so, as rclpy's ``wait_for_service`` would by
        never returning True."""
        from hprm_bridge.porting import ROS_NODE_LABEL

        top = self._reactor
        while top.container is not None:  # a node composed with others (rclpy/composition.py)
            top = top.container
        self._graph.learn(graph, top.name, ROS_NODE_LABEL)
        sources = {c.src for c in graph.connections}

        def qualified(port: Any) -> str:  # "": read by a sibling only (rclpy/composition.py)
            return self._hoisted.get(id(port), f"{top.name}.{port.name}")

        def connected(port: Any) -> bool:
            return qualified(port) in (*sources, "")

        inside = [*getattr(top, "refused_inside", []),  # composed siblings' (composition.py)
                  *qos_compatibility.refused_own(self)]  # fmt: skip
        self._incompatible = qos_compatibility.refused_ends(self, graph.refused, qualified,
                                                            inside)  # fmt: skip
        into = collections.Counter(c.dst for c in graph.connections)
        siblings = getattr(top, "fed_inside", {})  # composed siblings' publishers
        for sub in self._subscriptions:  # matched publishers: the node's own too
            own = sum(not p._destroyed for p in callbacks.own_heard(self._own_publishers, sub))
            sub._matched = into[qualified(sub._port)] + siblings.get(id(sub._port), 0) + own
        told: set[str] = set()
        for client in self.clients:
            route = client._route
            client._via_route = route is not None and connected(route.calls._port)
            client._served = client._via_route or connected(client._requests._port)
            action = action_ports.action_of(client.srv_name)  # its three services: once
            what = client.srv_name if action is None else f"the action {action}"
            if not client._served and what not in told:
                told.add(what)
                self._logger.warning(
                    f"no node of the federation serves {what}: its calls will not be "
                    "answered (hprm-ros run --bridge carries them to a ROS 2 server)"
                )

    def _unique_name(self) -> str:
        """The node's name, unique in its federation even when two federates run nodes of
        one name (ROS 2 allows that): their clients must not take each other's replies."""
        from hprm_bridge.porting import federate_names

        federate = federate_names()[1]
        fqn = self.get_fully_qualified_name()
        return f"{federate}:{fqn}" if federate else fqn

    def _tasks(self) -> Sleeper:
        """The node's tasks: callbacks that sleep in logical time (an action's execute
        callback, :mod:`hprm_bridge.rclpy.logical_sleep`); set up before spin."""
        if self._sleeper is None:
            self._check_open("ActionServer")
            self._sleeper = Sleeper(self._clock.now_ns, lambda: self._reactor.tag)
            self._reactor.attach("wake", self._wake)
        return self._sleeper
