"""A plain rclpy node that destroys what it made while it runs: its /chatter
subscription after three messages, a second timer at its first tick, its publisher
after the fourth tick (a publish then raises); it stops at the sixth, or later if
it has not heard three messages by then (ROS 2 discovery takes its time). Prints what it
sees, the same under rclpy and ported."""

import rclpy
from rclpy.node import Node
from std_msgs.msg import Int32, String


class Destroyer(Node):
    def __init__(self):
        super().__init__("destroyer")
        self.pub = self.create_publisher(Int32, "counts", 10)
        self.sub = self.create_subscription(String, "chatter", self.on_chatter, 10)
        self.heard = 0
        self.ticks = 0
        self.create_timer(0.05, self.tick)
        self.other = self.create_timer(0.01, lambda: print("OTHER", flush=True))

    def on_chatter(self, msg):
        self.heard += 1
        print(f"GOT {self.heard}", flush=True)
        if self.heard == 3:
            print(
                "destroy_subscription",
                self.destroy_subscription(self.sub),
                self.destroy_subscription(self.sub),
                self.sub in self.subscriptions,
                flush=True,
            )

    def tick(self):
        self.ticks += 1
        if self.ticks == 1:  # rclpy cannot destroy a timer in its own callback (TypeError)
            print(
                "destroy_timer",
                self.destroy_timer(self.other),
                self.other in self.timers,
                flush=True,
            )
        try:
            self.pub.publish(Int32(data=self.ticks))
            print(f"SENT {self.ticks}", flush=True)
        except RuntimeError as e:  # rclpy's InvalidHandle is a RuntimeError
            print(f"REFUSED {self.ticks} {type(e).__name__}", flush=True)
        if self.ticks == 4:
            print(
                "destroy_publisher",
                self.destroy_publisher(self.pub),
                self.pub in self.publishers,
                flush=True,
            )
        if self.ticks >= 6 and self.heard >= 3:
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    node = Destroyer()
    rclpy.spin(node)
    node.destroy_node()


if __name__ == "__main__":
    main()
