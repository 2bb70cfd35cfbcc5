"""ros2/examples' minimal_action_server "server_queue_goals", in its shape (no HPRM
import): goals accepted while one executes wait in a queue; handle_accepted_callback
starts a goal with goal_handle.execute() when none runs, and the execute callback starts
the next one as it ends. Each step sleeps 0.3 s (the example: 1 s)."""

import collections
import threading
import time

import rclpy
from example_interfaces.action import Fibonacci
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node


class QueueServer(Node):
    def __init__(self):
        super().__init__("queue_server")
        self._goal_queue = collections.deque()
        self._goal_queue_lock = threading.Lock()
        self._current_goal = None
        self._action_server = ActionServer(
            self, Fibonacci, "fibonacci",
            handle_accepted_callback=self.handle_accepted_callback,
            execute_callback=self.execute_callback,
            goal_callback=lambda goal: GoalResponse.ACCEPT,
            cancel_callback=lambda goal_handle: CancelResponse.ACCEPT,
            callback_group=ReentrantCallbackGroup(),
        )  # fmt: skip

    def handle_accepted_callback(self, goal_handle):
        with self._goal_queue_lock:
            if self._current_goal is not None:
                self._goal_queue.append(goal_handle)
                print(f"QUEUED {goal_handle.request.order}", flush=True)
            else:
                self._current_goal = goal_handle
                self._current_goal.execute()

    def execute_callback(self, goal_handle):
        try:
            print(f"EXECUTING {goal_handle.request.order}", flush=True)
            sequence = [0, 1]
            for i in range(1, goal_handle.request.order):
                sequence.append(sequence[i] + sequence[i - 1])
                goal_handle.publish_feedback(Fibonacci.Feedback(sequence=sequence))
                time.sleep(0.3)
            goal_handle.succeed()
            return Fibonacci.Result(sequence=sequence)
        finally:
            with self._goal_queue_lock:
                try:
                    self._current_goal = self._goal_queue.popleft()
                    self._current_goal.execute()
                except IndexError:
                    self._current_goal = None


def main():
    rclpy.init()
    node = QueueServer()
    try:
        rclpy.spin(node, executor=MultiThreadedExecutor())
    except Exception:  # rclpy's spin may raise once shut down
        return


if __name__ == "__main__":
    main()
