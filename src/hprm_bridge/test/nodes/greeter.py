"""A plain rclpy node with parameters (no HPRM import): every `period` s it
publishes "<greeting> <n>" on /chatter."""

import rclpy
from rclpy.node import Node
from std_msgs.msg import String


class Greeter(Node):
    def __init__(self):
        super().__init__("greeter")
        self.greeting = self.declare_parameter("greeting", "hello").value
        period = self.declare_parameter("period", 0.01).value
        self.pub = self.create_publisher(String, "chatter", 10)
        self.create_timer(period, self.tick)
        self.n = 0

    def tick(self):
        self.n += 1
        self.pub.publish(String(data=f"{self.greeting}_{self.n}"))


def main():
    rclpy.init()
    node = Greeter()
    rclpy.spin(node)
    rclpy.shutdown()


if __name__ == "__main__":
    main()
