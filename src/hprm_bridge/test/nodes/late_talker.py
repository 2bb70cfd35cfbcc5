"""A node that makes its publisher in its first timer callback (lazily, as nodes that
learn what to publish once running do), publishes on /chatter at each tick, and ends
after the last. No HPRM import.

Parameters: ticks (default 4)."""

import contextlib

import rclpy
from rclpy.node import Node
from std_msgs.msg import String


class LateTalker(Node):
    def __init__(self):
        super().__init__("late_talker")
        self.pub = None
        self.ticks = 0
        self.last = self.declare_parameter("ticks", 4).value
        self.create_timer(0.1, self.tick)

    def tick(self):
        self.ticks += 1
        if self.pub is None:
            self.pub = self.create_publisher(String, "chatter", 10)
        self.pub.publish(String(data=f"late {self.ticks}"))
        print(f"SENT late {self.ticks}", flush=True)
        if self.ticks == self.last:
            raise SystemExit


def main():
    rclpy.init()
    with contextlib.suppress(SystemExit):
        rclpy.spin(LateTalker())
    print("STOP", flush=True)


if __name__ == "__main__":
    main()
