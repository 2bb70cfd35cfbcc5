"""Entities a node creates after its federation started.

A federate's ports are fixed before its federation starts: the RTI connects
them once, and every federate's tag advance depends on who can send it what.
A destroyed entity keeps its port (``Node.destroy_*``). So after the start a
node may create a publisher, subscription, service or client only in the
place of a destroyed one of the same name and type, and a timer in the place
of any destroyed timer (with its own period, first firing one period after
it is created, as rclpy's).

Timers are the node's own (no port), so every node also starts with
:data:`SPARE_TIMERS` spare ones, stopped, for timers created in callbacks: the
one-shot of ros2/examples' ``server_defer`` (create a timer, cancel it in its own
callback). A cancelled timer's slot is free again once nothing else holds its
handle (``self._timer = self.create_timer(...)`` replaced it), as rclpy's node
would have dropped it. That is what a lifecycle node does between
``on_cleanup`` and the next ``on_configure``
(:mod:`hprm_bridge.rclpy.lifecycle`), and what a node re-subscribing with
another callback does. The new entity takes the old one's ports and its place
in the node's reactions (:mod:`~hprm_bridge.rclpy.node_reactor`); the old
handle stays destroyed.

A QoS deadline watched after the start (:mod:`~hprm_bridge.rclpy.deadline`) takes
the timer of a destroyed entity's deadline (the lifecycle node configured again), or
else a spare timer's slot, free again once its entity is destroyed: :func:`lend_timer`.

A subscription on a topic the node did not have at the start hears its own
process's publishers (:mod:`~hprm_bridge.rclpy.late_subscriptions`). Anything else
is refused with an error naming it.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

from hprm_bridge.rclpy.callback_groups import CallbackGroup
from hprm_bridge.rclpy.exceptions import UnsupportedError

SPARE_TIMERS = 4
"""Timers a node may create after its start beside those it destroyed or dropped."""


class Spare:
    """A stopped reactor timer no handle holds yet: a node's slot in ``_timers``."""

    _destroyed = True
    callback = None

    def __init__(self, timer: Any) -> None:
        self._timer = timer

    def _call(self) -> None:
        pass


class Released(Spare):
    """The slot of a cancelled timer made after the start: free once nothing holds the
    timer's handle any more (a ``reset()`` by whoever does takes it back)."""

    def __init__(self, handle: Any) -> None:
        super().__init__(handle._timer)
        self.handle = weakref.ref(handle)

    @property  # type: ignore[override]
    def _destroyed(self) -> bool:
        handle = self.handle()
        return handle is None or handle._destroyed


class Lent(Spare):
    """A spare timer's slot lent to the deadline watch of an entity made after the
    start: its misses, until that entity is destroyed."""

    callback_group = CallbackGroup()  # never waits: a miss is called at its tag

    def __init__(self, timer: Any, watch: Any) -> None:
        super().__init__(timer)
        self.watch = watch

    @property  # type: ignore[override]
    def _destroyed(self) -> bool:
        return self.watch.stopped

    def _call(self) -> None:
        self.watch.missed()


def lend_timer(deadlines: list[Any], timers: list[Any], watch: Any, call: str, name: str) -> None:
    """A timer for ``watch``, the deadline of ``call(name)`` made after the start: that of a
    destroyed entity's watch in ``deadlines`` (the node's reaction calls ``watch`` in its
    place), else a free slot of ``timers``."""
    i = next((i for i, old in enumerate(deadlines) if old.stopped), None)
    if i is not None:
        watch.take(deadlines[i].timer)
        deadlines[i] = watch
        return
    i = place(timers, call, f"{name}, deadline")
    watch.take(timers[i]._timer)
    timers[i] = Lent(watch.timer, watch)


def live(entity: Any) -> Any:
    """The handle in a slot (None in a free one)."""
    if isinstance(entity, Released):
        return entity.handle()
    return None if isinstance(entity, Spare) else entity


def _identity(entity: Any) -> tuple[Any, Any]:
    if hasattr(entity, "topic_name"):  # publisher, subscription
        return entity.topic_name, entity.msg_type
    if hasattr(entity, "srv_name"):  # service, client
        return entity.srv_name, entity.srv_type
    return None, None  # a timer: any destroyed one will do


# what "after the start" means to a node file
STARTED = (
    "after its node started (by spin, a spin_once, or the first sleep of a main that never spins)"
)


def place(entities: list[Any], call: str, name: str, type_: Any = None) -> int:
    """The index in ``entities`` of a destroyed entity the new one (``name`` of
    ``type_``; a timer gives none) may replace."""
    want = (None, None) if type_ is None else (name, type_)
    found = _free(entities, want)
    if found is None and type_ is None:
        # a dropped timer in a reference cycle (its callback holds its handle) is freed
        # only by the cycle collector: once, before saying every spare is in use
        gc.collect()
        found = _free(entities, want)
    if found is not None:
        return found
    if type_ is None:
        raise UnsupportedError(
            f"Node.{call}({name}) {STARTED}: the node's {SPARE_TIMERS} spare "
            "timers are all in use by timers and QoS deadlines made after the start "
            "(destroy one, or cancel and drop such a timer, to free one; or create it "
            "before spin and reset() it when needed)"
        )
    raise UnsupportedError(
        f"Node.{call}({name}) {STARTED}: an HPRM federate's ports are fixed "
        "before its federation starts, and this node has no destroyed entity of that name "
        "and type to take the place of (create it before spin, or in a lifecycle node's "
        "on_configure/on_activate, which run before the node joins)"
    )


def free(entities: list[Any], name: str, type_: Any) -> int | None:
    """The index in ``entities`` of a destroyed publisher, subscription, service or client
    of ``name`` and ``type_``, if there is one."""
    return _free(entities, (name, type_))


def _free(entities: list[Any], want: tuple[Any, Any]) -> int | None:
    for i, entity in enumerate(entities):
        if entity._destroyed and _identity(entity) == want:
            return i
    return None


def destroy(entity: Any) -> bool:
    """``Node.destroy_*``: the entity stops, its port stays (a federate's are fixed); True
    the first time, as rclpy's."""
    if entity._destroyed:
        return False
    entity.destroy()
    return True
