"""A node whose first timer callback starts a thread that publishes three messages (a
worker started late, after the node's start). No HPRM import."""

import threading
import time

import rclpy
from rclpy.node import Node
from std_msgs.msg import String


class CallbackThreadTalker(Node):
    def __init__(self):
        super().__init__("callback_thread_talker")
        self.pub = self.create_publisher(String, "chatter", 10)
        self.timer = self.create_timer(0.1, self.tick)
        self.worker = None

    def tick(self):
        if self.worker is None:
            self.worker = threading.Thread(target=self.work, name="late_worker", daemon=True)
            self.worker.start()

    def work(self):
        for n in range(3):
            time.sleep(0.05)
            self.pub.publish(String(data=f"from the late thread {n}"))


def main():
    rclpy.init()
    rclpy.spin(CallbackThreadTalker())


if __name__ == "__main__":
    main()
