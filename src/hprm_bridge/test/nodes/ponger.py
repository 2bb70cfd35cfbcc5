"""A plain rclpy node that answers every /ping with ten times it on /pong."""

import rclpy
from rclpy.node import Node
from std_msgs.msg import Int64


class Ponger(Node):
    def __init__(self):
        super().__init__("ponger")
        self.pub = self.create_publisher(Int64, "pong", 10)
        self.create_subscription(Int64, "ping", self.pinged, 10)

    def pinged(self, msg: Int64):
        self.pub.publish(Int64(data=msg.data * 10))


def main():
    rclpy.init()
    node = Ponger()
    try:
        rclpy.spin(node)
    finally:
        node.destroy_node()
        rclpy.shutdown()


if __name__ == "__main__":
    main()
