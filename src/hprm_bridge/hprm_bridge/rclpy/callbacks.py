"""The reactions that run a ported node's callbacks: a subscription's for each message,
a timer's tick, a guard condition's call, and the end-of-tag publish.

A node hears its own messages on a topic it also subscribes to, as rclpy delivers them
(``ignore_local_publications`` is off by default). A federate's ports connect to other
federates only, so the node's own go round a logical action per publisher instead:
published at a tag, heard one microstep later at the same logical time, each as it was
when published, by the subscriptions whose QoS DDS would match with the publisher's.
"""

from __future__ import annotations

from collections.abc import Callable

from hprm_bridge.message_pickle import received
from hprm_bridge.rclpy import late_subscriptions, liveliness
from hprm_bridge.rclpy.callback_groups import run_in_group
from hprm_bridge.rclpy.guard_condition import GuardCondition
from hprm_bridge.rclpy.logical_sleep import Sleeper
from hprm_bridge.rclpy.publisher import Publisher
from hprm_bridge.rclpy.subscription import Subscription
from hprm_bridge.rclpy.timer import TimerHandle
from hprm_core import LogicalAction, Reactor
from hprm_core.structure import shortfall


def own_heard(publishers: list[Publisher], sub: Subscription) -> list[Publisher]:
    """The node's own publishers ``sub`` hears: those of its topic whose QoS DDS would
    match with its own (a node's best-effort publisher does not reach its reliable
    subscription under ROS 2 either; both get their events,
    :mod:`hprm_bridge.rclpy.qos_compatibility`)."""
    return [p for p in publishers if p.topic_name == sub.topic_name
            and not shortfall(p._port.contract, sub._port.contract)]  # fmt: skip


def loopbacks(
    reactor: Reactor, publishers: list[Publisher], subscriptions: list[Subscription]
) -> dict[int, LogicalAction]:
    """One logical action (attached to ``reactor``) per publisher of the node that one of
    its subscriptions hears, by ``id`` of its port (a publisher created after the start
    takes a destroyed one's port, and its loop)."""
    loops: dict[int, LogicalAction] = {}
    for sub in subscriptions:
        for pub in own_heard(publishers, sub):
            if id(pub._port) not in loops:
                loops[id(pub._port)] = LogicalAction()
                reactor.attach(f"loopback{len(loops) - 1}", loops[id(pub._port)])
    return loops


def deliver(
    subs: list[Subscription], i: int, loops: list[LogicalAction], tasks: Sleeper | None,
    sleeper: Sleeper | None,
) -> Callable[[], None]:  # fmt: skip
    """The reaction of subscription ``subs[i]`` (whichever holds that place now): its
    callback for each message of the tag, from other federates (or ROS 2, still CDR:
    decoded here) and then the node's own (``loops``: of the publishers it hears, in the
    order the node created them); with ``tasks``, as a task in its callback group
    (:mod:`hprm_bridge.rclpy.callback_groups`). Only a tag that calls something (a
    message, or a liveliness change with a callback for it) counts as a callback for
    ``spin_once`` (``sleeper``): a publisher's leaving alone calls nothing."""

    def deliver() -> None:
        sub = subs[i]
        values = sub._port.value or ()
        for loop in loops:
            if loop.is_present:  # the node's own, a microstep old
                values = (*values, *loop.value)
        # (has_message: not only liveliness changes; asked only where it matters)
        if sleeper is not None and values and (sub._liveliness is not None
                                               or liveliness.has_message(values)):  # fmt: skip
            sleeper.note_callback()
        if sub._deadline is not None:
            sub._arrived(values)
        if tasks is None:
            sub._deliver(values)
        elif values:
            run_in_group(tasks, sub, lambda: sub._deliver(values))

    return deliver


def ticked(handle: TimerHandle, tasks: Sleeper | None) -> Callable[[], None]:
    """What a timer's firing calls: its callback (with ``tasks``, as a task of its group)."""

    def tick() -> None:
        if tasks is None:
            handle._call()
        else:  # a tick while the last one waits: one call when it is done, as rcl's
            run_in_group(tasks, handle, handle._call, once=True)

    return tick


def guard_call(guards: list[GuardCondition], i: int, tasks: Sleeper | None) -> Callable[[], None]:
    def call() -> None:
        if tasks is None:
            guards[i]._call()
        else:  # triggered again while its last call waits: one more call, as rcl's flag
            run_in_group(tasks, guards[i], guards[i]._call, once=True)

    return call


def flush(publishers: list[Publisher], loops: dict[int, LogicalAction]) -> Callable[[], None]:
    """The node's last reaction of a tag: each publisher's messages of the tag onto its
    port as one tuple (a port holds one value per tag), and onto its loopback."""

    def flush() -> None:
        for pub in publishers:
            queue = pub._queue
            if queue:
                values = tuple(queue)
                pub._port.set(values)
                loop = loops.get(id(pub._port))
                if loop is not None:
                    loop.schedule(tuple(received(m) for m in values))
                if pub._late:  # subscriptions made after the start (rclpy/late_subscriptions.py)
                    late_subscriptions.forward(pub, values)
                # not clear(): a thread outside the node's turns may have queued one more
                # since tuple() took them (rclpy/outside_publishes.py)
                del queue[: len(values)]

    return flush
