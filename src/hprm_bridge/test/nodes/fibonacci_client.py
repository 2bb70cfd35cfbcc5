"""The ROS 2 tutorial's Fibonacci action client (no HPRM import): sends one
goal (its order the parameter ``order``, 5 by default), prints each feedback
and the result, and shuts down. With ``cancel_at`` N it cancels the goal at
its Nth feedback."""

import contextlib

import rclpy
from example_interfaces.action import Fibonacci
from rclpy.action import ActionClient
from rclpy.node import Node


class FibonacciActionClient(Node):
    def __init__(self):
        super().__init__("fibonacci_action_client")
        self._action_client = ActionClient(self, Fibonacci, "fibonacci")
        self.order = self.declare_parameter("order", 5).value
        self.cancel_at = self.declare_parameter("cancel_at", 0).value
        self.feedbacks = 0

    def send_goal(self, order):
        goal_msg = Fibonacci.Goal()
        goal_msg.order = order
        self._action_client.wait_for_server()
        self._send_goal_future = self._action_client.send_goal_async(
            goal_msg, feedback_callback=self.feedback_callback
        )
        self._send_goal_future.add_done_callback(self.goal_response_callback)

    def goal_response_callback(self, future):
        self.goal_handle = future.result()
        if not self.goal_handle.accepted:
            print("REJECTED", flush=True)
            rclpy.shutdown()
            return
        print("ACCEPTED", flush=True)
        self._get_result_future = self.goal_handle.get_result_async()
        self._get_result_future.add_done_callback(self.get_result_callback)

    def get_result_callback(self, future):
        response = future.result()
        print(f"RESULT status {response.status} {response.result.sequence.tolist()}", flush=True)
        rclpy.shutdown()

    def feedback_callback(self, feedback_msg):
        self.feedbacks += 1
        print(f"FEEDBACK {feedback_msg.feedback.sequence.tolist()}", flush=True)
        if self.feedbacks == self.cancel_at:
            self.goal_handle.cancel_goal_async().add_done_callback(self.cancel_done)

    def cancel_done(self, future):
        response = future.result()
        print(f"CANCEL return code {response.return_code}, "
              f"{len(response.goals_canceling)} canceling", flush=True)  # fmt: skip


def main():
    rclpy.init()
    node = FibonacciActionClient()
    node.send_goal(node.order)
    with contextlib.suppress(KeyboardInterrupt, SystemExit):
        rclpy.spin(node)


if __name__ == "__main__":
    main()
