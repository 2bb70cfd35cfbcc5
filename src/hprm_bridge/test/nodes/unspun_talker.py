"""A node file that never spins (the oldest rclpy shape, as ros2/examples' old-school
publisher): its main makes a node, then loops publishing on /chatter and sleeping.
No HPRM import.

Parameters: passes (default 5), nap (seconds slept after each pass, default 0.1)."""

import time

import rclpy
from std_msgs.msg import String


def main():
    rclpy.init()
    node = rclpy.create_node("unspun_talker")
    passes = node.declare_parameter("passes", 5).value
    nap = node.declare_parameter("nap", 0.1).value
    pub = node.create_publisher(String, "chatter", 10)
    last = None
    n = 0
    try:
        while rclpy.ok() and n < passes:
            pub.publish(String(data=f"unspun {n}"))
            now = node.get_clock().now().nanoseconds
            gap = "" if last is None else f", {round((now - last) / 1e6)} ms after the last"
            print(f"SENT {n}{gap}", flush=True)
            last = now
            time.sleep(nap)
            n += 1
    except KeyboardInterrupt:  # as ros2/demos' data_publisher: a last word, then out
        print(f"INTERRUPTED, ok {rclpy.ok()}", flush=True)
        time.sleep(0.1)
        print("SLEPT AFTER THE INTERRUPT", flush=True)
        raise
    print(f"END after {n} passes, ok {rclpy.ok()}", flush=True)
    print("STOP", flush=True)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
