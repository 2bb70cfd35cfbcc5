"""Sends two Fibonacci goals at once (orders 3 and 2; no HPRM import) and prints each
one's acceptance and result, in the order they come, then STOP."""

import rclpy
from example_interfaces.action import Fibonacci
from rclpy.action import ActionClient
from rclpy.node import Node


class TwoGoals(Node):
    def __init__(self):
        super().__init__("two_goals")
        self.client = ActionClient(self, Fibonacci, "fibonacci")
        self.results = 0

    def send(self):
        self.client.wait_for_server()
        for order in (3, 2):
            future = self.client.send_goal_async(Fibonacci.Goal(order=order))
            future.add_done_callback(lambda f, order=order: self.accepted(order, f.result()))

    def accepted(self, order, handle):
        print(f"ACCEPTED {order} {handle.accepted}", flush=True)
        handle.get_result_async().add_done_callback(lambda f: self.done(order, f.result()))

    def done(self, order, response):
        print(f"RESULT {order} {response.status} {list(response.result.sequence)}", flush=True)
        self.results += 1
        if self.results == 2:
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    node = TwoGoals()
    node.send()
    try:
        rclpy.spin(node)
    except Exception:  # rclpy's spin may raise once shut down from a callback
        return


if __name__ == "__main__":
    main()
