"""The ROS 2 "Using callback groups" tutorial's client, in its shape (no HPRM import): a
timer's callback calls a service and waits for the answer (client.call); the client and
the timer are in callback groups of their own and a MultiThreadedExecutor spins the node,
as rclpy needs for that call not to deadlock. Prints each answer, then STOP."""

import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node


class SyncCaller(Node):
    def __init__(self):
        super().__init__("sync_caller")
        calls = MutuallyExclusiveCallbackGroup()
        self.client = self.create_client(AddTwoInts, "add_two_ints", callback_group=calls)
        while not self.client.wait_for_service(timeout_sec=1.0):
            self.get_logger().info("service not available, waiting again...")
        self.timer = self.create_timer(0.1, self.tick,
                                       callback_group=MutuallyExclusiveCallbackGroup())  # fmt: skip
        self.n = 0

    def tick(self):
        self.n += 1
        response = self.client.call(AddTwoInts.Request(a=self.n, b=10))
        print(f"SYNC {self.n} + 10 = {response.sum}", flush=True)
        if self.n == 3:
            self.timer.cancel()
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    node = SyncCaller()
    executor = MultiThreadedExecutor()
    executor.add_node(node)
    try:
        executor.spin()
    except Exception:  # rclpy's spin may raise once shut down from a callback
        return


if __name__ == "__main__":
    main()
