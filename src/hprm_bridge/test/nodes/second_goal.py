"""Sends a Fibonacci goal of order 5 and, at its first feedback, a second one of order 2
(no HPRM import); prints each result (status, sequence), then STOP."""

import rclpy
from example_interfaces.action import Fibonacci
from rclpy.action import ActionClient
from rclpy.node import Node


class SecondGoal(Node):
    def __init__(self):
        super().__init__("second_goal")
        self.client = ActionClient(self, Fibonacci, "fibonacci")
        self.sent_second = False
        self.results = 0

    def send(self, order):
        future = self.client.send_goal_async(Fibonacci.Goal(order=order),
                                             feedback_callback=self.feedback)  # fmt: skip
        future.add_done_callback(lambda f: self.accepted(order, f.result()))

    def feedback(self, msg):
        if not self.sent_second:
            self.sent_second = True
            self.send(2)

    def accepted(self, order, handle):
        handle.get_result_async().add_done_callback(lambda f: self.done(order, f.result()))

    def done(self, order, response):
        print(f"RESULT {order} {response.status} {list(response.result.sequence)}", flush=True)
        self.results += 1
        if self.results == 2:
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    node = SecondGoal()
    node.client.wait_for_server()
    node.send(5)
    try:
        rclpy.spin(node)
    except Exception:  # rclpy's spin may raise once shut down from a callback
        return


if __name__ == "__main__":
    main()
