"""How a ported node becomes one reactor: the reactions that run its callbacks.

Built once, when ``spin`` starts (after that the node's ports are the
federation's). Each reaction finds its entity through the node's list by
position, not by holding the entity: an entity a node creates after the
start takes the place, and the ports, of a destroyed one like it
(:mod:`hprm_bridge.rclpy.late_entities`), and the same reaction then runs
the new one's callback.

Order within a tag: (at the start) the incompatible-QoS and liveliness events; the callbacks of
subscriptions, timers and guard conditions (in the order the node created them),
services, clients, then the tasks that sleep in logical time, the federate status, and
last the publish of everything the tag's callbacks queued
(:func:`hprm_bridge.rclpy.callbacks.flush`).
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hprm_bridge.rclpy import (
    callbacks,
    federate_status,
    guard_condition,
    late_subscriptions,
    main_turns,
    outside_publishes,
    parameter_calls,
    parameter_service,
    qos_compatibility,
)
from hprm_bridge.rclpy.exceptions import UnsupportedError
from hprm_core import Timer

if TYPE_CHECKING:
    from hprm_bridge.rclpy.node import Node


def build(node: Node) -> None:
    """Add the node's reactions to ``node._reactor``."""
    r = node._reactor
    triggers: list[Any] = [r.startup]  # lines logged while the node was built

    def started() -> None:  # which thread is the node's turn (for guard_condition.trigger
        # and Node._kick_soon)
        node._reaction_thread = threading.get_ident()
        node._wheel.started()

    r.add_reaction(started, r.startup, name="started")
    if node._federation_calls is not None:
        answer = functools.partial(parameter_service.answer_calls, node._params,
                                   node._federation_calls, node._federation_answers)  # fmt: skip
        r.add_reaction(exits(node, answer), node._federation_calls,
                       name="parameters_in_federation")  # fmt: skip
        triggers.append(node._federation_calls)
    if node._parameter_calls is not None:

        def answer_calls() -> None:
            parameter_service.answer_calls(node._params, node._parameter_calls,
                                           node._parameter_replies)  # fmt: skip

        r.add_reaction(answer_calls, node._parameter_calls, stp_violation=answer_calls,
                       name="parameters")  # fmt: skip
        triggers.append(node._parameter_calls)

    def discovered() -> None:  # known once the graph came: maybe nothing
        watched = [s for s in node._subscriptions if s._liveliness is not None]
        if (node._incompatible or watched) and node._sleeper is not None:
            node._sleeper.note_callback()  # callbacks ran: for spin_once
        if node._incompatible:
            qos_compatibility.fire(node, node._incompatible)
        for sub in watched:
            sub._liveliness.start(sub._matched)

    # What discovery tells: QoS the RTI refused to connect, then the publishers each
    # liveliness callback counts. The events come first, as discovery before data.
    r.add_reaction(exits(node, discovered, note=False), r.startup, name="discovered")
    tasks = node._tasks_of_callbacks()
    loops = callbacks.loopbacks(r, node._own_publishers, node._subscriptions)
    for i, sub in enumerate(node._subscriptions):
        own = [loops[id(p._port)] for p in callbacks.own_heard(node._own_publishers, sub)]
        fired_by = (sub._port, *own)
        deliver = callbacks.deliver(node._subscriptions, i, own, tasks, node._sleeper)
        r.add_reaction(exits(node, deliver, note=False),
                       *fired_by, name=f"on_{sub._port.name}")  # fmt: skip
        triggers.extend(t for t in fired_by if t not in triggers)
    for handle in node._timers:
        r.add_reaction(exits(node, callbacks.ticked(handle, tasks)), handle._timer,
                       name=f"on_{handle._timer.name}")  # fmt: skip
        triggers.append(handle._timer)
    # timers made after the start: a node's, a deadline's, a lease's (rclpy/timer_wheel.py)
    r.attach("timer_wheel", node._wheel.wake)
    r.add_reaction(node._wheel.fire, node._wheel.wake, name="timer_wheel")
    triggers.append(node._wheel.wake)
    for i, guard in enumerate(node._guards):
        r.add_reaction(exits(node, callbacks.guard_call(node._guards, i, tasks)), guard._soon,
                       guard._outside, name=f"on_guard{i}")  # fmt: skip
        triggers.extend((guard._soon, guard._outside))
    # publishes from outside the node's turns: a main beside it, a thread of the node file
    outside_publishes.attach(node, triggers)
    for i, watch in enumerate(node._deadlines):  # a QoS deadline missed (rclpy/deadline.py)
        r.add_reaction(exits(node, watch.missed), watch.timer, name=f"deadline{i}_missed")
        triggers.append(watch.timer)
    for i, lease in enumerate(node._leases):  # a manual liveliness lost (rclpy/liveliness.py)
        r.add_reaction(exits(node, functools.partial(_lease_expired, node, i), note=False),
                       lease.timer, name=f"lease{i}_expired")  # fmt: skip
        triggers.append(lease.timer)
    # a nanosecond after a publisher another node destroyed (its leaving goes out) or what
    # came for a subscription made after the start (rclpy/late_subscriptions.py)
    node._kick = Timer(offset=1, period=1)
    node._kick.cancel()  # reset by Node._kick_soon
    r.attach("kick", node._kick)
    deliver = exits(node, late_subscriptions.deliver(node, tasks), note=False)

    def kick() -> None:
        # Cancelled here, not only by deliver: after a SystemExit deliver no longer runs,
        # and the kick's 1 ns period would then step the node one nanosecond a tag up to
        # the stop tag the RTI grants (milliseconds later under load: minutes of tags).
        node._kick.cancel()
        deliver()

    r.add_reaction(kick, node._kick, name="kick")
    triggers.append(node._kick)
    own = {s.srv_name for s in node.services} & {c.srv_name for c in node.clients}
    if own:
        raise UnsupportedError(
            f"node {node.get_name()} calls its own service {sorted(own)[0]}: a node's calls "
            "reach other nodes' services only (call the service's callback directly)"
        )
    for i, service in enumerate(node.services):
        r.add_reaction(exits(node, lambda i=i: node.services[i]._answer(tasks)),
                       service._requests, name=f"on_{service._requests.name}")  # fmt: skip
        triggers.append(service._requests)
    for i, client in enumerate(node.clients):
        r.add_reaction(exits(node, lambda i=i: node.clients[i]._receive()), client._replies,
                       name=f"on_{client._replies.name}")  # fmt: skip
        triggers.append(client._replies)
        if client._route is not None:  # to a ported node's parameter service
            answers = client._route.answers
            r.add_reaction(exits(node, lambda i=i: parameter_calls.receive(node.clients[i])),
                           answers, name=f"on_{answers.name}")  # fmt: skip
            triggers.append(answers)
    sleeper = node._sleeper
    if sleeper is not None:  # tasks resume after the tag's other callbacks
        # one node: the sleeper's own; the first of several a main steps: theirs too
        wake, resume, ran, go = main_turns.turn_reactions(node, sleeper)
        r.add_reaction(exits(node, wake, note=False), node._wake, effects=go, name="wake")
        triggers.append(node._wake)
        r.add_reaction(exits(node, resume, note=False), *triggers, *ran, effects=go,
                       name="spin_once")  # fmt: skip
    if node._reports_status:  # /hprm/federate_status, then its last words at shutdown
        from hprm_bridge.porting import federate_names

        report = federate_status.StatusReport(*federate_names())

        def status() -> None:
            msg = report.at(r.tag)
            if msg is not None:
                node._status.publish(msg)

        r.add_reaction(status, *triggers, name="status")
        r.add_reaction(lambda: node._status.publish(report.finished(r.tag)), r.shutdown,
                       name="status_final")  # fmt: skip
        triggers.append(r.shutdown)
    if node._guards:  # after every callback and task of the tag: those triggered
        r.add_reaction(lambda: guard_condition.schedule(node._guards), *triggers,
                       effects=[g._soon for g in node._guards], name="guards")  # fmt: skip
    if sleeper is not None:  # the wake-ups the tag's tasks asked for
        wake = node._wake

        def sleep_until() -> None:
            for delay in sleeper.take_wakeups():
                wake.schedule(None, delay)

        r.add_reaction(sleep_until, *triggers, effects=[wake], name="sleep_until")
        r.add_reaction(sleeper.stop, r.shutdown, name="stop_tasks")
    if node._in_main_turns:  # a sibling of nodes a main steps (rclpy/main_turns.py)
        ran_out, go_in = main_turns.sibling_ports(node)
        r.add_reaction(lambda: ran_out.set(True), *triggers, effects=[ran_out], name="ran")
        triggers.append(go_in)  # what the main published on this node's publishers
    if node._publishers:
        r.add_reaction(
            callbacks.flush(node._publishers, loops),
            *triggers,
            effects=[*(p._port for p in node._publishers), *loops.values()],
            name="publish",
        )
    logging.getLogger("hprm.rclpy").debug(
        "node %s: %d publishers, %d subscriptions, %d timers, %d services, %d clients",
        node.get_name(),
        len(node._publishers),
        len(node._subscriptions),
        len(node._timers),
        len(node.services),
        len(node.clients),
    )


def _lease_expired(node: Node, i: int) -> None:
    """A lease ran out: a callback ran (for ``spin_once``) only where the publisher has a
    ``liveliness`` one; its subscriptions hear the loss through its port either way."""
    lease = node._leases[i]
    if lease.has_callback and node._sleeper is not None:
        node._sleeper.note_callback()
    lease.expired()


def exits(node: Node, callback: Callable[[], None], note: bool = True) -> Callable[[], None]:
    """``callback`` as a reaction. ``raise SystemExit`` in a callback ends a plain ROS 2
    node's spin (the usual way out of a callback: ``rclpy.shutdown()`` there deadlocks
    Humble's global executor). Here it stops the federation at the next tag, and
    ``rclpy.spin`` raises the same SystemExit once the federation has stopped, for the
    node's main to catch. The node's callbacks do not run after it, as none would under
    rclpy once its spin was left, though the stop the RTI grants may come tags later (its
    peers may be past the tag, and a gateway's messages keep coming until then). With
    ``note``, running the callback is noted for a main in ``spin_once``."""
    sleeper = node._sleeper if note else None  # a callback ran: for spin_once

    def run() -> None:
        if node.system_exit is not None:
            return
        try:
            if sleeper is not None:
                sleeper.note_callback()
            callback()
        except SystemExit as exc:
            if node.system_exit is None:
                node.system_exit = exc
            node._reactor.request_stop()

    return run


def has_coroutines(node: Node) -> bool:
    """Whether a subscription, timer or service callback is ``async def`` (rclpy awaits
    those; here they run as tasks, which may wait for what they await)."""
    found = [*(s.callback for s in node._subscriptions), *(t.callback for t in node._timers),
             *(s.callback for s in node.services)]  # fmt: skip
    return any(inspect.iscoroutinefunction(c) for c in found if c is not None)
