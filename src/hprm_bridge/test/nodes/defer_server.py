"""ros2/examples' minimal_action_server "server_defer", in its shape (no HPRM import):
handle_accepted_callback defers the goal; a timer it creates then calls
goal_handle.execute() 0.5 s later and cancels itself."""

import time

import rclpy
from example_interfaces.action import Fibonacci
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.node import Node


class DeferServer(Node):
    def __init__(self):
        super().__init__("defer_server")
        self._goal_handle = None
        self._timer = None
        self._action_server = ActionServer(
            self, Fibonacci, "fibonacci",
            execute_callback=self.execute_callback,
            goal_callback=lambda goal: GoalResponse.ACCEPT,
            handle_accepted_callback=self.handle_accepted_callback,
            cancel_callback=lambda goal_handle: CancelResponse.ACCEPT,
        )  # fmt: skip

    def handle_accepted_callback(self, goal_handle):
        print("DEFERRING", flush=True)
        self._goal_handle = goal_handle
        self._timer = self.create_timer(0.5, self.timer_callback)

    def timer_callback(self):
        print("EXECUTE NOW", flush=True)
        if self._goal_handle is not None:
            self._goal_handle.execute()
        self._timer.cancel()

    def execute_callback(self, goal_handle):
        sequence = [0, 1]
        for i in range(1, goal_handle.request.order):
            sequence.append(sequence[i] + sequence[i - 1])
            goal_handle.publish_feedback(Fibonacci.Feedback(sequence=sequence))
            time.sleep(0.1)
        goal_handle.succeed()
        return Fibonacci.Result(sequence=sequence)


def main():
    rclpy.init()
    node = DeferServer()
    try:
        rclpy.spin(node)
    except Exception:  # rclpy's spin may raise once shut down
        return


if __name__ == "__main__":
    main()
