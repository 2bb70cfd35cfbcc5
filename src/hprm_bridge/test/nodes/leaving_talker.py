"""Plain rclpy nodes: ``talker`` creates a publisher on /leaving and destroys it 0.5 s
later, never publishing; ``waiter``'s main subscribes to /leaving (no liveliness
callback) and spins once, 2 s at most. The talker's leaving calls nothing in the
waiter, so its spin_once waits out the 2 s, as under rclpy. The waiter prints the
seconds it waited (logical ported, wall-clock under rclpy), rounded, then STOP."""

import sys

import rclpy
from rclpy.node import Node
from std_msgs.msg import String


def talker():
    node = Node("leaving_talker")
    pub = node.create_publisher(String, "leaving", 10)
    timer = node.create_timer(0.5, lambda: (node.destroy_publisher(pub), timer.cancel()))
    rclpy.spin(node)


def waiter():
    node = Node("waiter")
    node.create_subscription(String, "leaving", lambda m: print("HEARD", m.data), 10)
    # a first spin that does not wait: ported, it starts the node, so t0 is a logical time
    # (the clock read before the start is the wall's, and joining may take a while)
    rclpy.spin_once(node, timeout_sec=0)
    t0 = node.get_clock().now()
    rclpy.spin_once(node, timeout_sec=2.0)
    print("WAITED", round((node.get_clock().now() - t0).nanoseconds / 1e9), flush=True)
    print("STOP", flush=True)
    node.destroy_node()


def main():
    rclpy.init()
    {"talker": talker, "waiter": waiter}[sys.argv[1]]()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
