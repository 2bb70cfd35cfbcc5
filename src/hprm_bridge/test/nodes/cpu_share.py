"""A plain rclpy listener (no HPRM import) that prints, when spin() returns,
the share of a CPU its process used while it spun: a busy-polling federate
uses most of one, a sleeping one little."""

import time

import rclpy
from rclpy.node import Node
from std_msgs.msg import String


class CpuShare(Node):
    def __init__(self):
        super().__init__("cpu_share")
        self.create_subscription(String, "chatter", self.heard, 10)
        self.heard_count = 0

    def heard(self, msg: String):
        self.heard_count += 1


def main():
    rclpy.init()
    node = CpuShare()
    wall, cpu = time.monotonic(), time.process_time()
    try:
        rclpy.spin(node)
    finally:
        share = (time.process_time() - cpu) / (time.monotonic() - wall)
        print(f"HEARD {node.heard_count} CPU_SHARE {share:.2f}", flush=True)
        node.destroy_node()
        rclpy.shutdown()


if __name__ == "__main__":
    main()
