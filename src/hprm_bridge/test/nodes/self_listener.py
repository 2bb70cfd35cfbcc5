"""A plain rclpy node that subscribes to the topic it publishes on (rclpy delivers a
node its own messages): five ticks 10 ms apart, each publishing its number; it prints
what it sends and hears, and stops once it has heard the fifth."""

import rclpy
from rclpy.node import Node
from std_msgs.msg import Int32


class SelfListener(Node):
    def __init__(self):
        super().__init__("self_listener")
        self.pub = self.create_publisher(Int32, "loop", 10)
        self.create_subscription(Int32, "loop", self.on_loop, 10)
        self.ticks = 0
        self.timer = self.create_timer(0.01, self.tick)

    def tick(self):
        if self.ticks == 5:
            return
        self.ticks += 1
        msg = Int32(data=self.ticks)
        self.pub.publish(msg)
        msg.data = -1  # changed after publish: what was published is heard
        print(
            f"SENT {self.ticks} at {self.get_clock().now().nanoseconds // 10**6 % 1000}", flush=True
        )

    def on_loop(self, msg):
        print(
            f"HEARD {msg.data} at {self.get_clock().now().nanoseconds // 10**6 % 1000}", flush=True
        )
        if msg.data == 5:
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    rclpy.spin(SelfListener())


if __name__ == "__main__":
    main()
