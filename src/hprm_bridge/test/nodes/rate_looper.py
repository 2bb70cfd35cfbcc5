"""A node file that spins its node on a thread of its own and loops in its main at a
fixed rate (no HPRM import), as the rclpy docs show for Rate: each pass publishes its
count and prints what the node's subscription received since the last pass.

Parameters: hz (default 20), passes (default 5), nap (time.sleep instead of the rate,
seconds; default 0: the rate), late (seconds the main waits on an Event before its
loop, default 0), join_only (the main only joins the spin thread: no loop)."""

import threading
import time

import rclpy
from rclpy.node import Node
from std_msgs.msg import Int32, String


def main():
    rclpy.init()
    node = Node("rate_looper")
    hz = node.declare_parameter("hz", 20.0).value
    passes = node.declare_parameter("passes", 5).value
    nap = node.declare_parameter("nap", 0.0).value
    late = node.declare_parameter("late", 0.0).value
    join_only = node.declare_parameter("join_only", False).value
    pub = node.create_publisher(Int32, "beats", 10)
    got = []
    node.create_subscription(String, "chatter", lambda m: got.append(m.data), 10)
    thread = threading.Thread(target=rclpy.spin, args=(node,), daemon=True)
    thread.start()
    if join_only:
        thread.join()
        print(f"JOINED, ok {rclpy.ok()}, {len(got)} received", flush=True)
        return
    rate = node.create_rate(hz)
    if late:
        threading.Event().wait(late)
    n = 0
    try:
        while rclpy.ok() and n < passes:
            pub.publish(Int32(data=n))
            if n:  # the first pass runs before anything arrived
                print(f"BEAT {n} at {node.get_clock().now().nanoseconds} got {got}", flush=True)
            got.clear()
            if nap:
                time.sleep(nap)
            else:
                rate.sleep()
            n += 1
    except KeyboardInterrupt:
        pass
    print(f"END after {n} passes", flush=True)
    rclpy.shutdown()
    thread.join()


if __name__ == "__main__":
    main()
