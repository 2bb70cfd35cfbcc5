"""``rclpy.wait_for_message``: a node file's main waits for the next message of a topic.

Under rclpy it subscribes, blocks on a wait set until a message comes (or
``time_to_wait`` seconds of the wall clock pass) and unsubscribes. In a federate
the main takes turns with the node instead (:mod:`hprm_bridge.rclpy.main_loop`):
``rclpy.spin_once`` until the subscription has its first message, or
``time_to_wait`` of **logical** time from the start of the wait has passed, so
which message a node waits out, and at which tag, is the same in every run. The
node's other callbacks keep running while it waits (the federation does not stop
for one node's main; under rclpy they wait, as nothing spins them).

The first wait on a topic other federates publish must come before the node's
start, as any subscription's (its port is the federation's); after it, waiting
again on that topic takes the destroyed subscription's place
(:mod:`hprm_bridge.rclpy.late_entities`). A later first wait hears the node's own
process only (:mod:`hprm_bridge.rclpy.late_subscriptions`): on a topic nobody
publishes it times out, as under rclpy; on one another federate publishes it is
refused unless its port was declared (``hprm-ros run --late``). From a callback
it is refused: the message would come at a later tag, which a callback that blocks
never reaches.

Example (a node file's main)::

    node = Node("waiter")
    ok, msg = wait_for_message(String, node, "chatter", time_to_wait=5.0)
    if ok:
        node.get_logger().info(f"first: {msg.data}")
"""

from __future__ import annotations

import threading
from typing import Any

from hprm_bridge.rclpy import main_loop
from hprm_bridge.rclpy.exceptions import UnsupportedError


def wait_for_message(
    msg_type: Any, node: Any, topic: str, *, qos_profile: Any = 1, time_to_wait: float = -1
) -> tuple[bool, Any]:
    """(True, the message), or (False, None) when ``time_to_wait`` (logical seconds;
    negative: no limit) passes first or the federation stops."""
    from hprm_bridge import rclpy

    if threading.current_thread() is not threading.main_thread() or (
        node._finalized and main_loop.running_node() is not node
    ):
        raise UnsupportedError(
            f"wait_for_message({node.resolve_topic_name(topic)}) outside the node file's main "
            "loop (in a callback, or after rclpy.spin): the message would come at a later tag, "
            "which a blocked callback never reaches; subscribe, and take the first message in "
            "the callback"
        )
    got: list[Any] = []
    try:
        sub = node.create_subscription(msg_type, topic, got.append, qos_profile)
    except UnsupportedError as exc:
        raise UnsupportedError(
            f"wait_for_message({node.resolve_topic_name(topic)}) after the node's federate "
            "started (its first wait_for_message or spin_once started it): its subscriptions "
            "are the federation's, fixed at the start, so a main may wait again only on a "
            "topic it waited on first, or on one no other federate publishes"
        ) from exc
    try:
        rclpy.spin_once(node, timeout_sec=0)  # now in the federation's logical time
        deadline = None
        if time_to_wait >= 0:
            deadline = node._clock.logical_ns() + round(time_to_wait * 1_000_000_000)
        while not got and rclpy.ok():
            left = None if deadline is None else deadline - node._clock.logical_ns()
            if left is not None and left <= 0:
                break
            rclpy.spin_once(node, timeout_sec=None if left is None else left / 1e9)
    finally:
        node.destroy_subscription(sub)
    return (True, got[0]) if got else (False, None)
