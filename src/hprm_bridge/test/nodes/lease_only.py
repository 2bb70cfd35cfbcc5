"""A main that spins its node once, 2 s at most. The node's one source of events is a
MANUAL_BY_TOPIC publisher's lease (0.5 s) without a liveliness callback: when the lease
runs out nothing is called, so spin_once waits out its timeout, as under rclpy. Prints
the seconds it waited (logical ported, wall-clock under rclpy), rounded."""

import rclpy
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import LivelinessPolicy, QoSProfile
from std_msgs.msg import String

MANUAL = QoSProfile(depth=1, liveliness=LivelinessPolicy.MANUAL_BY_TOPIC,
                    liveliness_lease_duration=Duration(seconds=0.5))  # fmt: skip


def main():
    rclpy.init()
    node = Node("lease_only")
    node.create_publisher(String, "lease_only", MANUAL)
    t0 = node.get_clock().now()
    rclpy.spin_once(node, timeout_sec=2.0)
    print("WAITED", round((node.get_clock().now() - t0).nanoseconds / 1e9), flush=True)
    print("STOP", flush=True)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
