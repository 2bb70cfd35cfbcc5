"""A plain rclpy talker (no HPRM import): every 10 ms, two messages on
/chatter in one callback, stamped with the node's clock."""

import rclpy
from rclpy.node import Node
from std_msgs.msg import String


class Talker(Node):
    def __init__(self):
        super().__init__("talker")
        self.pub = self.create_publisher(String, "chatter", 10)
        self.timer = self.create_timer(0.01, self.tick)
        self.n = 0

    def tick(self):
        self.n += 1
        now = self.get_clock().now().nanoseconds
        for part in ("a", "b"):  # two publishes in one callback: both delivered
            self.pub.publish(String(data=f"{self.n}{part}"))
        self.get_logger().info(f"sent {self.n} at {now % 10**9 // 10**6} ms")


def main():
    rclpy.init()
    node = Talker()
    try:
        rclpy.spin(node)
    finally:
        node.destroy_node()
        rclpy.shutdown()


if __name__ == "__main__":
    main()
