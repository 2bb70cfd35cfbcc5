"""The ROS 2 tutorial's Fibonacci action server (no HPRM import), with its
cancel step: accepts goals up to order 46 (int32), publishes the sequence as
feedback each ``period`` seconds (a parameter; the tutorial sleeps 1 s) and
returns it; a cancel request is accepted and seen at the next step. As the
tutorial's cancelable server, it spins a MultiThreadedExecutor with its
callbacks in a ReentrantCallbackGroup: under rclpy a single-threaded executor
would take the cancel request only after the goal had ended."""

import contextlib
import time

import rclpy
from example_interfaces.action import Fibonacci
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node


class FibonacciActionServer(Node):
    def __init__(self):
        super().__init__("fibonacci_action_server")
        self.period = self.declare_parameter("period", 1.0).value
        self._action_server = ActionServer(
            self, Fibonacci, "fibonacci", self.execute_callback,
            goal_callback=self.goal_callback, cancel_callback=self.cancel_callback,
            callback_group=ReentrantCallbackGroup(),
        )  # fmt: skip

    def goal_callback(self, goal_request):
        accept = goal_request.order <= 46
        print(f"GOAL order {goal_request.order}: {'accepted' if accept else 'rejected'}",
              flush=True)  # fmt: skip
        return GoalResponse.ACCEPT if accept else GoalResponse.REJECT

    def cancel_callback(self, goal_handle):
        print("CANCEL requested", flush=True)
        return CancelResponse.ACCEPT

    def execute_callback(self, goal_handle):
        print(f"EXECUTE order {goal_handle.request.order}", flush=True)
        feedback_msg = Fibonacci.Feedback()  # the tutorial's: one message, grown in place
        feedback_msg.sequence = [0, 1]
        for i in range(1, goal_handle.request.order):
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                print(f"CANCELED after {len(feedback_msg.sequence)}", flush=True)
                return Fibonacci.Result(sequence=feedback_msg.sequence)
            feedback_msg.sequence.append(feedback_msg.sequence[i] + feedback_msg.sequence[i - 1])
            goal_handle.publish_feedback(feedback_msg)
            time.sleep(self.period)
        goal_handle.succeed()
        result = Fibonacci.Result()
        result.sequence = feedback_msg.sequence
        return result


def main():
    rclpy.init()
    node = FibonacciActionServer()
    with contextlib.suppress(KeyboardInterrupt, SystemExit):
        rclpy.spin(node, executor=MultiThreadedExecutor())


if __name__ == "__main__":
    main()
