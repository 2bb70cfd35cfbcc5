"""A plain rclpy node that subscribes to /chatter half a second after it starts and
stops after hearing three messages (ported: with ``--late NODE=/chatter:...`` declared,
through the gateway from a plain ROS 2 talker)."""

import contextlib

import rclpy
from rclpy.node import Node
from std_msgs.msg import String


class LateChatter(Node):
    def __init__(self):
        super().__init__("late_chatter")
        self.heard_count = 0
        self.timer = self.create_timer(0.5, self.subscribe)

    def subscribe(self):
        self.timer.cancel()
        self.create_subscription(String, "chatter", self.heard, 10)

    def heard(self, msg):
        self.heard_count += 1
        print("HEARD", msg.data, flush=True)
        if self.heard_count == 3:
            raise SystemExit


def main():
    rclpy.init()
    with contextlib.suppress(SystemExit):
        rclpy.spin(LateChatter())


if __name__ == "__main__":
    main()
