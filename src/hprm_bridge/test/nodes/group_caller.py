"""What a callback group does to a timer whose callback blocks in client.call (no HPRM
import): ticks every 0.1 s, each calling slow_adder.py's /slow_add (a second to answer).
With ``-p group:=exclusive`` the timer is alone in a MutuallyExclusiveCallbackGroup:
a tick waits for the last one's answer. With ``group:=reentrant`` it is in a
ReentrantCallbackGroup: three ticks start before the first answer. Prints START/DONE
for three calls, then STOP. With ``-p nap:=SECONDS`` the main sleeps that long before it
spins (to let connections settle, as some node files do)."""

import time

import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node


class GroupCaller(Node):
    def __init__(self):
        super().__init__("group_caller")
        kind = self.declare_parameter("group", "exclusive").value
        group = {"exclusive": MutuallyExclusiveCallbackGroup, "reentrant": ReentrantCallbackGroup}
        calls = MutuallyExclusiveCallbackGroup()
        self.client = self.create_client(AddTwoInts, "slow_add", callback_group=calls)
        while not self.client.wait_for_service(timeout_sec=1.0):
            self.get_logger().info("service not available, waiting again...")
        self.started = self.done = 0
        self.timer = self.create_timer(0.1, self.tick, callback_group=group[kind]())

    def tick(self):
        if self.started == 3:
            return
        self.started += 1
        n = self.started
        print(f"START {n}", flush=True)
        response = self.client.call(AddTwoInts.Request(a=n, b=100))
        print(f"DONE {n} {response.sum}", flush=True)
        self.done += 1
        if self.done == 3:
            self.timer.cancel()
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    node = GroupCaller()
    time.sleep(node.declare_parameter("nap", 0.0).value)
    executor = MultiThreadedExecutor(num_threads=4)  # 3 blocked ticks, and the answers
    executor.add_node(node)
    try:
        executor.spin()
    except Exception:  # rclpy's spin may raise once shut down from a callback
        return


if __name__ == "__main__":
    main()
