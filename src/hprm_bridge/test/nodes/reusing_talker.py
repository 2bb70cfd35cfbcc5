"""A talker that reuses one message object (no HPRM import): each tick sets its data
and publishes it three times in one callback, then changes it after the last publish.
Under rclpy each publish sends the message as it is at that call."""

import contextlib

import rclpy
from rclpy.node import Node
from std_msgs.msg import String


class ReusingTalker(Node):
    def __init__(self):
        super().__init__("reusing_talker")
        self.pub = self.create_publisher(String, "chatter", 10)
        self.msg = String()
        self.n = 0
        self.create_timer(0.01, self.tick)

    def tick(self):
        self.n += 1
        for part in ("a", "b", "c"):
            self.msg.data = f"{self.n}{part}"
            self.pub.publish(self.msg)
        self.msg.data = "changed after publishing"


def main():
    rclpy.init()
    node = ReusingTalker()
    with contextlib.suppress(KeyboardInterrupt):
        rclpy.spin(node)
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
