"""Publishes from outside logical time: a device loop in the main, a worker thread.

A node's publish queues its message, and the node's last reaction of a tag sends
what the tag queued (:mod:`hprm_bridge.rclpy.publisher`). From a callback, a task or
a main taking turns with the node (:mod:`hprm_bridge.rclpy.main_loop`) that is the
tag they run at. Driver code also publishes where no tag runs: a main that blocks on
a serial port or a keyboard and publishes what it reads (teleop_twist_keyboard), a
thread of the node file's own that polls a device while ``rclpy.spin`` runs the node.
No reaction of the node would send those messages until its next callback, which a
node without timers or subscriptions never has.

So such a publish is what it is under ROS 2, a sensor's event: it schedules a
physical action of the node, whose tag is the wall-clock time of the publish, and
that tag sends it (as a guard condition triggered from a thread is,
:mod:`hprm_bridge.rclpy.guard_condition`). What the federation does with the message
from then on is deterministic; when it came is the device's.

A physical action is not free: it keeps the federate alive with nothing scheduled,
and in centralized coordination its promises to the RTI follow the wall clock. So a
node gets one only where publishes from outside are to be expected when it starts:
its main runs beside it (``rclpy.spin`` on a thread of the node file's own, or a main
that publishes without spinning), or the node file started threads of its own before
the node's start. A publish from outside any turn on a node without one (a thread
started later, by a callback) is sent with the node's next callback, and the first
one says so in the log.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import TYPE_CHECKING, Any

from hprm_bridge.rclpy.executors import ExternalShutdownException
from hprm_bridge.rclpy.logical_sleep import holds_turn
from hprm_core import PhysicalAction

if TYPE_CHECKING:
    from hprm_bridge.rclpy.node import Node

_before: set[int] = set()  # the threads alive before the node file ran (the runtime's)


def note_threads() -> None:
    """In a federate's process, before its node file runs: threads alive later that are
    not these are the node file's own (or the runtime's, started after the node's)."""
    _before.update(t.ident for t in threading.enumerate() if t.ident is not None)


def _threads_of_node_file() -> list[str]:
    here = threading.get_ident()
    main = threading.main_thread().ident
    return [
        t.name
        for t in threading.enumerate()
        if t.ident not in _before
        and t.ident not in (here, main)
        and not t.name.startswith("hprm-")  # the runtime's own
        and t.is_alive()
    ]


def attach(node: Node, triggers: list[Any]) -> None:
    """At the node's build: a physical action for its publishes from outside its turns
    where they are to be expected (the module says when), its tag one of those that
    flush the node's publishers; else a check that logs the first such publish."""
    publishers = node._publishers
    if not publishers:
        return
    threads = _threads_of_node_file()
    if node._main_beside or threads:
        action = PhysicalAction()
        node._reactor.attach("outside", action)
        triggers.append(action)
        hook = functools.partial(_published, node, action)
        logging.getLogger("hprm.rclpy").debug(
            "node %s: publishes from outside its turns are physical events (%s)",
            node.get_name(),
            "its main runs beside it" if node._main_beside else f"threads {threads}",
        )
    else:
        hook = functools.partial(_unexpected, node)
    for pub in publishers:
        pub._outside = hook


def _published(node: Node, action: PhysicalAction) -> None:
    if not holds_turn(node._reaction_thread):
        from hprm_bridge.rclpy import ok

        if not ok():  # the federation stopped: rclpy's publish raises there too
            raise ExternalShutdownException(
                "publish from outside the node's callbacks after its federation stopped "
                "(rclpy: the publisher's context is invalid)"
            )
        action.schedule()


def _unexpected(node: Node) -> None:
    if holds_turn(node._reaction_thread):
        return
    for pub in node._publishers:  # said once
        pub._outside = None
    node.get_logger().warning(
        f"a publish from the thread {threading.current_thread().name!r}, outside the node's "
        "callbacks: it goes out with the node's next callback. A thread started before the "
        "node spins makes such publishes physical events, sent at once (HPRM checks for "
        "threads of the node file when the node starts)"
    )
