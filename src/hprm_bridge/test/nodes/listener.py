"""A plain rclpy listener (no HPRM import): prints what arrives on /chatter."""

import rclpy
from rclpy.node import Node
from std_msgs.msg import String


class Listener(Node):
    def __init__(self):
        super().__init__("listener")
        self.create_subscription(String, "chatter", self.heard, 10)

    def heard(self, msg: String):
        print(f"HEARD {msg.data}", flush=True)


def main():
    rclpy.init()
    node = Listener()
    try:
        rclpy.spin(node)
    finally:
        node.destroy_node()
        rclpy.shutdown()


if __name__ == "__main__":
    main()
