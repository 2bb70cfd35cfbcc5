"""ros2/examples' minimal_action_server "server_single_goal", in its shape (no HPRM
import): one goal at a time; a newly accepted goal aborts the one executing, whose
execute callback sees it is no longer active at its next step. Steps of 0.3 s."""

import threading
import time

import rclpy
from example_interfaces.action import Fibonacci
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node


class SingleGoalServer(Node):
    def __init__(self):
        super().__init__("single_goal_server")
        self._goal_handle = None
        self._goal_lock = threading.Lock()
        self._action_server = ActionServer(
            self, Fibonacci, "fibonacci",
            execute_callback=self.execute_callback,
            goal_callback=lambda goal: GoalResponse.ACCEPT,
            handle_accepted_callback=self.handle_accepted_callback,
            cancel_callback=lambda goal_handle: CancelResponse.ACCEPT,
            callback_group=ReentrantCallbackGroup(),
        )  # fmt: skip

    def handle_accepted_callback(self, goal_handle):
        with self._goal_lock:
            if self._goal_handle is not None and self._goal_handle.is_active:
                print(f"ABORTING {self._goal_handle.request.order}", flush=True)
                self._goal_handle.abort()
            self._goal_handle = goal_handle
        goal_handle.execute()

    def execute_callback(self, goal_handle):
        sequence = [0, 1]
        for i in range(1, goal_handle.request.order):
            if not goal_handle.is_active:
                print(f"GONE {goal_handle.request.order}", flush=True)
                return Fibonacci.Result()
            sequence.append(sequence[i] + sequence[i - 1])
            goal_handle.publish_feedback(Fibonacci.Feedback(sequence=sequence))
            time.sleep(0.3)
        with self._goal_lock:
            if not goal_handle.is_active:
                return Fibonacci.Result()
            goal_handle.succeed()
        return Fibonacci.Result(sequence=sequence)


def main():
    rclpy.init()
    node = SingleGoalServer()
    try:
        rclpy.spin(node, MultiThreadedExecutor())
    except Exception:  # rclpy's spin may raise once shut down
        return


if __name__ == "__main__":
    main()
