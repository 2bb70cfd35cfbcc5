"""A node file whose main loop drives its node with rclpy.spin_once (no HPRM import),
as many teleop and script-like nodes do. Each pass publishes its count and prints
what the node's subscription received since the last pass, with the clock's time (ns).

Parameters: timeout (spin_once's timeout_sec, default 0.025), passes (0: while
rclpy.ok()), nap (a time.sleep in each pass, default 0: none), fail_at (raise in that
pass, default -1: never), then_spin (rclpy.spin after the passes, default False)."""

import time

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from std_msgs.msg import Int32, String


def main():
    rclpy.init()
    node = Node("spin_looper")
    timeout = node.declare_parameter("timeout", 0.025).value
    passes = node.declare_parameter("passes", 0).value
    nap = node.declare_parameter("nap", 0.0).value
    fail_at = node.declare_parameter("fail_at", -1).value
    then_spin = node.declare_parameter("then_spin", False).value
    pub = node.create_publisher(Int32, "passes", 10)
    got = []
    node.create_subscription(String, "chatter", lambda m: got.append(m.data), 10)
    n = 0
    try:
        while rclpy.ok() and (passes == 0 or n < passes):
            rclpy.spin_once(node, timeout_sec=timeout)
            if not rclpy.ok():
                break
            if n == fail_at:
                raise RuntimeError(f"pass {n} failed")
            pub.publish(Int32(data=n))
            print(f"PASS {n} at {node.get_clock().now().nanoseconds} got {got}", flush=True)
            got.clear()
            if nap:
                time.sleep(nap)
            n += 1
        if then_spin:
            rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    print(f"END after {n} passes, ok {rclpy.ok()}, {len(got)} unprinted", flush=True)
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
