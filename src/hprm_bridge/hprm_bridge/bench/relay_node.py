"""An rclpy relay for ``hprm bench bridge``: every Image on /bench/in goes
out unchanged on /bench/out. No HPRM import: the same file runs under real
rclpy (the plain ROS 2 path) and ported behind the gateway."""

import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image


class Relay(Node):
    def __init__(self):
        super().__init__("relay")
        self.pub = self.create_publisher(Image, "bench/out", 10)
        self.create_subscription(Image, "bench/in", self.pub.publish, 10)


def main():
    rclpy.init()
    node = Relay()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
