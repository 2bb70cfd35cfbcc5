"""A plain rclpy service node whose answer takes a second (no HPRM import): /slow_add
sleeps in its callback, spun by a MultiThreadedExecutor. Its callback is in the node's
default (mutually exclusive) group, so calls are answered one after another."""

import time

import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node


class SlowAdder(Node):
    def __init__(self):
        super().__init__("slow_adder")
        self.create_service(AddTwoInts, "slow_add", self.add)

    def add(self, request, response):
        time.sleep(1.0)  # ported: a second of logical time
        response.sum = request.a + request.b
        return response


def main():
    rclpy.init()
    executor = MultiThreadedExecutor()
    executor.add_node(SlowAdder())
    try:
        executor.spin()
    except Exception:  # rclpy's spin may raise once shut down
        return


if __name__ == "__main__":
    main()
