"""A plain rclpy node whose main waits for messages before it spins: the next /chatter
message (talker.py's) within ``first_wait`` seconds, then the next one again, then a
short wait for an Int32 on ``last_topic`` (default: /silence, which nobody publishes).
Prints what each wait returns, the same under rclpy and ported (where a last wait on a
topic another federate publishes is refused: that federate's messages come through
ports, fixed once the first wait started the node)."""

import rclpy
from rclpy.node import Node
from rclpy.wait_for_message import wait_for_message
from std_msgs.msg import Int32, String


def main():
    rclpy.init()
    node = Node("waiter")
    first_wait = node.declare_parameter("first_wait", 30.0).value
    last_topic = node.declare_parameter("last_topic", "silence").value
    t0 = node.get_clock().now()
    ok, msg = wait_for_message(String, node, "chatter", time_to_wait=first_wait)
    waited = (node.get_clock().now() - t0).nanoseconds / 1e9
    print("FIRST", ok, msg.data if ok else None, waited >= first_wait, flush=True)
    if ok:
        ok, msg = wait_for_message(String, node, "chatter", time_to_wait=30.0)
        print("AGAIN", ok, msg.data if ok else None, flush=True)
    try:
        print("SILENCE", *wait_for_message(Int32, node, last_topic, time_to_wait=0.2), flush=True)
    except NotImplementedError as e:  # HPRM's UnsupportedError
        print("REFUSED", str(e).split(":")[0], flush=True)
    print("STOP", flush=True)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
