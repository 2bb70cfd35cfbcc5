"""A plain rclpy node in a feedback loop with ponger.py: every 10 ms
(PINGER_PERIOD_S) it sends a count on /ping and prints each answer arriving
on /pong, with the time it took by the node's clock."""

import os

import rclpy
from rclpy.node import Node
from std_msgs.msg import Int64


class Pinger(Node):
    def __init__(self):
        super().__init__("pinger")
        self.pub = self.create_publisher(Int64, "ping", 10)
        self.create_subscription(Int64, "pong", self.answered, 10)
        self.create_timer(float(os.environ.get("PINGER_PERIOD_S", "0.01")), self.tick)
        self.n = 0
        self.sent_at = {}

    def tick(self):
        self.n += 1
        self.sent_at[self.n] = self.get_clock().now().nanoseconds
        self.pub.publish(Int64(data=self.n))

    def answered(self, msg: Int64):
        took = self.get_clock().now().nanoseconds - self.sent_at[msg.data // 10]
        print(f"PONG {msg.data} after {took} ns", flush=True)


def main():
    rclpy.init()
    node = Pinger()
    try:
        rclpy.spin(node)
    finally:
        node.destroy_node()
        rclpy.shutdown()


if __name__ == "__main__":
    main()
