"""The gateway on real rclpy: the one module of the bridge that imports it.

Each ported node is an rclpy node of the gateway's own context, named as the
node names itself (``ros2 node list`` shows it as any rclpy node, announced by
the sourced rmw), holding the endpoints the gateway keeps for it. Messages
cross as CDR both ways (``raw`` subscriptions, serialized publishes), decoded
once by HPRM's type registry into HPRM's message classes, as on the wire
client, so that ported nodes get the same objects whichever backend carried
them. Service calls are answered by a coroutine that waits for the
federation's answer, which rclpy's executor allows.

Messages into the federation do not go through rclpy's executor: its Python
wait loop rebuilds the wait set around every message (every entity of every
node, QoS event handlers included) and holds the GIL while the gateway's
scheduler waits for it. Given the gateway's event loop, the rmw itself tells
of each message by writing to an eventfd that loop watches (:class:`_InLoop`),
and the gateway's scheduler thread takes the message: no thread of ours is
woken in between. Without a loop, or where that callback cannot be set, a
thread of their own (:class:`_Arrivals`) waits on the subscriptions and hands
each message on; it also waits on their QoS events in both cases. The
executor keeps the timer, the services and everything else.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import rclpy
from rclpy.callback_groups import CallbackGroup
from rclpy.context import Context
from rclpy.duration import Duration
from rclpy.executors import SingleThreadedExecutor
from rclpy.guard_condition import GuardCondition
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, ReliabilityPolicy
from rclpy.qos import QoSProfile as RosQoS
from rclpy.serialization import deserialize_message, serialize_message
from rclpy.signals import SignalHandlerOptions
from rclpy.task import Future

from hprm_bridge import messages
from hprm_bridge.backends import ros_class
from hprm_bridge.wire import default_registry
from hprm_bridge.wire.qos import (
    INFINITE,
    Durability,
    History,
    QoSProfile,
    Reliability,
    follow,
    follow_note,
)

log = logging.getLogger("hprm.gateway")
MATCH_PERIOD_S = 0.25  # how often followed endpoints look at the graph again
_UNSET_NS = (0, 0x7FFFFFFFFFFFFFFF)  # rmw's "not set" and "infinite" durations


def _new_message_callback() -> tuple[Any, int] | None:
    """rcl's setter of a subscription's new-message callback, and a C function
    to pass it that counts messages into the eventfd given as its user data
    (``_rmw_wake``, built with this package); None without either (an rcl
    without the setter, a build without a C compiler): the arrivals then keep
    a thread of their own.

    rmw calls the callback from its own thread for each message: in C, it
    adds the count to the eventfd without Python, the GIL or a thread of ours."""
    try:
        from hprm_bridge.backends import _rmw_wake
    except ImportError:
        return _without_callback("hprm_bridge was built without its C callback (_rmw_wake)")
    try:
        setter = ctypes.CDLL("librcl.so").rcl_subscription_set_on_new_message_callback
    except (OSError, AttributeError) as exc:
        return _without_callback(f"rcl has no new-message callback setter ({exc})")
    setter.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    setter.restype = ctypes.c_int
    return setter, _rmw_wake.callback


def _without_callback(why: str) -> None:
    log.info("gateway: %s: messages from ROS 2 are taken by a thread of their own", why)
    return None


class RclpyBackend:
    """See :mod:`hprm_bridge.backends` for the interface. ``loop``: an object
    with ``add_reader``/``remove_reader`` (the gateway reactor) in whose thread
    the subscriptions' callbacks then run."""

    name = "rclpy"

    def __init__(self, node_name: str, loop: Any = None) -> None:
        self._context = Context()
        # The gateway is a federate: Ctrl-C stops the federation, not rclpy
        rclpy.init(context=self._context, signal_handler_options=SignalHandlerOptions.NO)
        self._executor = SingleThreadedExecutor(context=self._context)
        self._types = default_registry()
        self._nodes: dict[str, Node] = {}
        self._gateway = f"/{node_name}"
        self._node_for([])
        self._followers: list[_Follower] = []
        self._flushes: list[Callable[[], None]] = []  # one per client: sends what it can
        notify = _new_message_callback() if loop is not None else None
        self._in_loop = _InLoop(*notify, loop) if notify is not None else None
        self._arrivals = _Arrivals(self._context, takes_messages=self._in_loop is None)
        # QoS matching looks at the graph on a timer of the executor, which also
        # bounds how long a spin waits: a spin given a timeout would build an rcl
        # timer on every wait (rclpy's executor), a cost on every message
        self._nodes[self._gateway].create_timer(MATCH_PERIOD_S, self._match)

    def _node_for(self, owners: list[str]) -> Node:
        fqn = owners[0] if owners else self._gateway
        if fqn not in self._nodes:
            namespace, name = fqn.rsplit("/", 1)
            # parameter services, if any, are the ported node's own (served by the gateway)
            node = Node(name, namespace=namespace or "/", context=self._context,
                        start_parameter_services=False)  # fmt: skip
            self._nodes[fqn] = node
            self._executor.add_node(node)
        return self._nodes[fqn]

    def publisher(
        self, msg_type: str, topic: str, qos: QoSProfile, *, match: bool, owners: list[str]
    ) -> Callable[[Any], None]:
        follower = _Follower(self._node_for(owners), msg_type, topic, qos, None)
        if match:
            self._followers.append(follower)
        encode = self._types.encode

        def publish(msg: Any) -> None:
            raw = bytes(encode(msg, msg_type))
            with follower.lock:
                follower.entity.publish(raw)

        return publish

    def subscription(
        self,
        msg_type: str,
        topic: str,
        callback: Callable[[Any], None],
        qos: QoSProfile,
        *,
        match: bool,
        owners: list[str],
    ) -> None:
        follower = _Follower(self._node_for(owners), msg_type, topic, qos, callback,
                             self._arrivals, self._in_loop)  # fmt: skip
        self._arrivals.add(follower)
        if self._in_loop is not None:
            self._in_loop.add(follower)
        if match:
            self._followers.append(follower)

    def service(
        self,
        srv_type: str,
        request: str,
        response: str,
        name: str,
        called: Callable[[Callable[..., None], Any], None],
        owner: str,
    ) -> None:
        srv = ros_class(srv_type)
        # the halves' fields, as messages of HPRM's registry (no rmw header here)
        request_type = self._types.define(f"{srv_type}_RequestFields", request)
        response_type = self._types.define(f"{srv_type}_ResponseFields", response)
        types, executor = self._types, self._executor

        async def serve(req: Any, _response: Any) -> Any:
            fields = messages.adopt(types.decode(serialize_message(req), request_type))
            answered: Future = Future(executor=executor)

            def reply(**answer: Any) -> None:  # in the gateway's reactor, at the call's tag
                raw = types.encode(types.new(response_type, **answer), response_type)
                answered.set_result(deserialize_message(bytes(raw), srv.Response))

            called(reply, SimpleNamespace(**{f: getattr(fields, f)
                                              for f in fields.__dataclass_fields__}))  # fmt: skip
            return await answered

        self._node_for([owner]).create_service(srv, name, serve)

    def client(
        self, srv_type: str, request: str, response: str, name: str, owner: str
    ) -> Callable[[dict[str, Any], Callable[[Any], None]], None]:
        """Calls are sent from the executor's thread (the gateway's reactor hands them over
        through a guard condition: rclpy's ``call_async`` from another thread could miss a
        fast reply), as the wire client sends them (:mod:`hprm_bridge.wire.service`): once
        a server has been matched for ``SETTLE_S`` (rclpy drops a call no server sees, and
        the server may see this client later than it sees the server), no more than the
        services' history depth in flight."""
        from hprm_bridge.wire.service import SERVICES_QOS, SETTLE_S

        srv = ros_class(srv_type)
        request_type = self._types.define(f"{srv_type}_RequestFields", request)
        response_type = self._types.define(f"{srv_type}_ResponseFields", response)
        node = self._node_for([owner])
        client = node.create_client(srv, name)
        types = self._types
        unsent: list[tuple[Any, Callable[[Any], None]]] = []
        lock = threading.Lock()  # unsent: appended in the reactor's thread, taken in the executor's
        state = {"ready_since": None, "in_flight": 0}  # touched in the executor's thread only

        def send(req: Any, done: Callable[[Any], None]) -> None:
            def answered(future: Any) -> None:
                state["in_flight"] -= 1
                fields = messages.adopt(types.decode(serialize_message(future.result()),
                                                     response_type))  # fmt: skip
                done(SimpleNamespace(**{f: getattr(fields, f)
                                        for f in fields.__dataclass_fields__}))  # fmt: skip
                flush()

            state["in_flight"] += 1
            client.call_async(req).add_done_callback(answered)

        def flush() -> None:  # in the executor: on a call, an answer, the matching timer
            if not client.service_is_ready():
                state["ready_since"] = None
                return
            now = time.monotonic()
            if state["ready_since"] is None:
                state["ready_since"] = now
            if now - state["ready_since"] < SETTLE_S:
                return
            with lock:
                room = SERVICES_QOS.depth - state["in_flight"]
                batch, unsent[:] = unsent[: max(room, 0)], unsent[max(room, 0) :]
            for req, done in batch:
                send(req, done)

        wake = node.create_guard_condition(flush)

        def call(fields: dict[str, Any], done: Callable[[Any], None]) -> None:
            raw = types.encode(types.new(request_type, **fields), request_type)
            with lock:
                unsent.append((deserialize_message(bytes(raw), srv.Request), done))
            wake.trigger()

        self._flushes.append(flush)
        return call

    def announce(self, nodes: list[str]) -> None:
        for fqn in nodes:  # a node with no endpoint here is still listed
            self._node_for([fqn])

    def spin_once(self, timeout: float) -> None:
        """One callback; returns within :data:`MATCH_PERIOD_S` even when idle
        (``timeout`` is the wire client's; here the matching timer bounds the wait)."""
        self._executor.spin_once()

    def _match(self) -> None:
        own = {(n.get_namespace(), n.get_name()) for n in self._nodes.values()}
        for follower in self._followers:
            follower.match(own)
        for flush in self._flushes:
            flush()

    def close(self) -> None:
        if self._in_loop is not None:
            self._in_loop.close()
        self._arrivals.close()
        self._executor.shutdown(timeout_sec=1)
        for node in self._nodes.values():
            node.destroy_node()
        self._context.try_shutdown()


class _Elsewhere(CallbackGroup):
    """The gateway's subscriptions' group: never ready for the executor
    (``can_execute``), so that it leaves them, and their QoS event handlers,
    to :class:`_Arrivals`."""

    def can_execute(self, entity: Any) -> bool:
        return False

    def beginning_execution(self, entity: Any) -> bool:
        return False

    def ending_execution(self, entity: Any) -> None:
        pass


class _Arrivals:
    """One thread that waits on the gateway's subscriptions alone (rcl's wait
    set, as rclpy's executor builds it, minus everything else) and calls each
    one's callback with every message it takes; with ``takes_messages`` False
    (:class:`_InLoop` takes them), on their QoS events only."""

    def __init__(self, context: Context, takes_messages: bool = True) -> None:
        self._context = context
        self._takes = takes_messages
        self.group = _Elsewhere()
        self._followers: list[_Follower] = []
        self._flushes: list[Callable[[], None]] = []  # one per client: sends what it can
        self._wake = GuardCondition(None, None, context=context)  # the set changed, or close
        self._generation = 0  # bumped on every change: the thread builds its wait set anew
        self._closed = False
        self._thread: threading.Thread | None = None

    def add(self, follower: _Follower) -> None:
        self._followers.append(follower)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gateway-ros2-in",
                                            daemon=True)  # fmt: skip
            self._thread.start()
        self.changed()

    def changed(self) -> None:
        """A subscription was added or replaced: wait on the new set."""
        self._generation += 1
        self._wake.trigger()

    def close(self) -> None:
        self._closed = True
        if self._thread is not None:
            self._wake.trigger()
            self._thread.join(timeout=5)
        self._wake.destroy()

    def _run(self) -> None:
        # The wait set and the entities it holds (entered: rclpy defers destroying
        # them meanwhile) are kept from one message to the next and rebuilt only
        # when the set changed: building them costs more than the wait itself.
        stack = contextlib.ExitStack()
        built = -1
        try:
            while not self._closed:
                try:
                    if built != self._generation:
                        stack.close()
                        stack = contextlib.ExitStack()
                        built = self._generation
                        waiting = self._build(stack)
                    self._wait_once(*waiting)
                except Exception:
                    if self._closed or not self._context.ok():
                        return
                    log.exception("gateway: receiving from ROS 2 failed")
                    built = -1
        finally:
            stack.close()

    def _build(self, stack: contextlib.ExitStack) -> tuple[list[Any], list[Any], Any]:
        subs = [f.entity for f in self._followers]
        events = [h for sub in subs for h in sub.event_handlers]
        for entity in (*[s.handle for s in subs], *events, self._wake.handle,
                       self._context.handle):  # fmt: skip
            stack.enter_context(entity)
        if not self._takes:
            subs = []  # entered above all the same: their event handlers need them alive
        wait_set = _rclpy.WaitSet(len(subs), 1, 0, 0, 0, len(events), self._context.handle)
        return subs, events, wait_set

    def _wait_once(self, subs: list[Any], events: list[Any], wait_set: Any) -> None:
        wait_set.clear_entities()
        for sub in subs:
            wait_set.add_subscription(sub.handle)
        wait_set.add_guard_condition(self._wake.handle)
        for handler in events:
            handler.add_to_wait_set(wait_set)
        wait_set.wait(-1)
        ready = wait_set.get_ready_entities("subscription")
        for handler in events:  # incompatible QoS: rclpy's own warning
            if handler.is_ready(wait_set):
                _run_now(handler.execute(handler.take_data()))
        for sub in subs:
            if sub.handle.pointer not in ready:
                continue
            taken = _take(sub)
            if taken is not None:
                sub.callback(taken)


def _take(sub: Any) -> bytes | None:
    """The next message's CDR, or None (none left; or replaced and destroyed
    since by QoS matching)."""
    try:
        taken = sub.handle.take_message(sub.msg_type, sub.raw)
    except Exception:
        return None
    return None if taken is None else taken[0]


class _InLoop:
    """The subscriptions' messages taken in the thread of ``loop`` (the
    gateway's scheduler), woken by an eventfd the rmw writes for each message
    (:func:`_new_message_callback`)."""

    def __init__(self, setter: Any, callback: int, loop: Any) -> None:
        self._set, self._callback, self._loop = setter, callback, loop
        self._fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._followers: list[_Follower] = []
        self._flushes: list[Callable[[], None]] = []  # one per client: sends what it can
        loop.add_reader(self, self._take_all)

    def fileno(self) -> int:
        return self._fd

    def watch(self, entity: Any, topic: str) -> None:
        """Have the rmw count ``entity``'s messages into the eventfd (those
        already waiting at once)."""
        rc = self._set(entity.handle.pointer, self._callback, self._fd)
        if rc != 0:
            raise RuntimeError(f"{topic}: rcl refused a new-message callback (rcl error {rc})")

    def unwatch(self, entity: Any) -> None:
        """Before ``entity`` is destroyed: rmw calls nothing for it after this."""
        self._set(entity.handle.pointer, None, None)

    def add(self, follower: _Follower) -> None:
        self._followers.append(follower)
        self.poke()  # what came between its watch() and now

    def poke(self) -> None:
        """Look at every subscription again: one was added, or replaced (its
        messages may have been counted while the old one was still taken from)."""
        with contextlib.suppress(OSError):  # closed: the gateway is stopping
            os.eventfd_write(self._fd, 1)

    def _take_all(self) -> None:
        try:
            os.eventfd_read(self._fd)
        except BlockingIOError:
            return
        # one message per subscription per round: topics interleave as they arrived,
        # none waits behind another's backlog
        more = True
        while more:
            more = False
            for follower in self._followers:
                with follower.lock:  # never a subscription being replaced
                    taken = _take(follower.entity)
                if taken is None:
                    continue
                more = True
                assert follower.arrived is not None
                try:  # as the arrival thread would: the scheduler's thread must go on
                    follower.arrived(taken)
                except Exception:
                    log.exception("gateway: a message from ROS 2 on %s was lost", follower.topic)

    def close(self) -> None:
        self._loop.remove_reader(self)
        for follower in self._followers:
            with follower.lock:
                self.unwatch(follower.entity)
        fd, self._fd = self._fd, -1
        os.close(fd)


def _run_now(coroutine: Any) -> None:
    """Run a coroutine that never suspends (a QoS event's callback) to its end."""
    with contextlib.suppress(StopIteration):
        coroutine.send(None)


class _Follower:
    """One endpoint (a publisher, or a subscription when ``arrived`` is given)
    whose QoS may follow the remote endpoints of its topic."""

    def __init__(self, node: Node, msg_type: str, topic: str, qos: QoSProfile,
                 arrived: Callable[[bytes], None] | None,
                 arrivals: _Arrivals | None = None,
                 in_loop: _InLoop | None = None) -> None:  # fmt: skip
        self.node, self.topic, self.base = node, topic, qos
        self.cls = ros_class(msg_type)
        self.arrived = arrived
        self.arrivals = arrivals
        self.in_loop = in_loop
        self.lock = threading.Lock()  # a publish or a take never meets its entity replaced
        self.qos = qos
        self.entity = self._open(qos)

    def _open(self, qos: QoSProfile) -> Any:
        if self.arrived is None:
            return self.node.create_publisher(self.cls, self.topic, _to_ros(qos))
        assert self.arrivals is not None
        sub = self.node.create_subscription(
            self.cls, self.topic, self.arrived, _to_ros(qos), raw=True,
            callback_group=self.arrivals.group,
        )  # fmt: skip
        if self.in_loop is not None:
            self.in_loop.watch(sub, self.topic)
        return sub

    def match(self, own: set[tuple[str, str]]) -> None:
        publisher = self.arrived is None
        infos = (self.node.get_subscriptions_info_by_topic if publisher
                 else self.node.get_publishers_info_by_topic)(self.topic)  # fmt: skip
        peers = [_from_ros(i.qos_profile) for i in infos
                 if (i.node_namespace, i.node_name) not in own]  # fmt: skip
        want = follow(self.qos, self.base, peers, publisher=publisher)
        if want is None:
            return
        new = self._open(want)
        with self.lock:
            old, self.entity, self.qos = self.entity, new, want
        if self.arrivals is not None:
            self.arrivals.changed()
        if self.in_loop is not None:
            self.in_loop.unwatch(old)
            self.in_loop.poke()
        (self.node.destroy_publisher if publisher else self.node.destroy_subscription)(old)
        log.info("%s", follow_note(publisher, self.topic, want, len(peers)))


def _to_ros(qos: QoSProfile) -> RosQoS:
    def duration(seconds: float) -> Duration:
        return Duration() if seconds == INFINITE else Duration(nanoseconds=round(seconds * 1e9))

    return RosQoS(
        history=HistoryPolicy.KEEP_ALL if qos.history is History.KEEP_ALL
        else HistoryPolicy.KEEP_LAST,
        depth=max(1, qos.depth),
        reliability=ReliabilityPolicy.BEST_EFFORT if qos.reliability is Reliability.BEST_EFFORT
        else ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL
        if qos.durability is Durability.TRANSIENT_LOCAL else DurabilityPolicy.VOLATILE,
        deadline=duration(qos.deadline),
        lifespan=duration(qos.lifespan),
    )  # fmt: skip


def _from_ros(qos: RosQoS) -> QoSProfile:
    def seconds(d: Duration) -> float:
        return INFINITE if d.nanoseconds in _UNSET_NS else d.nanoseconds / 1e9

    return QoSProfile(
        depth=qos.depth,
        reliability=Reliability.BEST_EFFORT if qos.reliability == ReliabilityPolicy.BEST_EFFORT
        else Reliability.RELIABLE,
        durability=Durability.TRANSIENT_LOCAL
        if qos.durability == DurabilityPolicy.TRANSIENT_LOCAL else Durability.VOLATILE,
        deadline=seconds(qos.deadline),
    )  # fmt: skip
