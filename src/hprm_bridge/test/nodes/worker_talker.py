"""A node whose thread of its own polls a device and publishes what it reads, while the
main spins the node; the node has no timer and no subscription. No HPRM import.

Parameters: readings (default 5), wait (seconds between two readings, 0.05)."""

import contextlib
import threading
import time

import rclpy
from rclpy.node import Node
from std_msgs.msg import String


class WorkerTalker(Node):
    def __init__(self):
        super().__init__("worker_talker")
        self.readings = self.declare_parameter("readings", 5).value
        self.wait = self.declare_parameter("wait", 0.05).value
        self.pub = self.create_publisher(String, "chatter", 10)
        threading.Thread(target=self.poll, name="poller", daemon=True).start()

    def poll(self):
        for n in range(self.readings):
            time.sleep(self.wait)  # Python's sleep, on a thread of the node file's own
            self.pub.publish(String(data=f"polled {n}"))
            print(f"SENT {n}", flush=True)


def main():
    rclpy.init()
    node = WorkerTalker()
    with contextlib.suppress(KeyboardInterrupt):
        rclpy.spin(node)


if __name__ == "__main__":
    main()
