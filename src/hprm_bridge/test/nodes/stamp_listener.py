"""A plain rclpy node printing each /points message with how far the node's
clock is past the message's header.stamp when it arrives."""

import rclpy
from geometry_msgs.msg import PointStamped
from rclpy.node import Node


class StampListener(Node):
    def __init__(self):
        super().__init__("stamp_listener")
        self.create_subscription(PointStamped, "points", self.heard, 10)

    def heard(self, msg: PointStamped):
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        past = self.get_clock().now().nanoseconds - stamp
        print(f"POINT {msg.point.x} past_stamp={past}", flush=True)


def main():
    rclpy.init()
    node = StampListener()
    rclpy.spin(node)
    rclpy.shutdown()


if __name__ == "__main__":
    main()
