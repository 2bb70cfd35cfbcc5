"""A node whose callbacks are coroutines (no HPRM import), as rclpy runs them: a timer's
``async def`` callback awaits a service call (``await client.call_async(...)``, which
rclpy's single-threaded executor allows, the client in a callback group of its own),
publishes the answer, and a subscription's async callback awaits another call for each.
Prints each answer, then STOP."""

import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import Int32


class AsyncCaller(Node):
    def __init__(self):
        super().__init__("async_caller")
        self.client = self.create_client(AddTwoInts, "add_two_ints",
                                         callback_group=ReentrantCallbackGroup())  # fmt: skip
        while not self.client.wait_for_service(timeout_sec=1.0):
            self.get_logger().info("service not available, waiting again...")
        self.pub = self.create_publisher(Int32, "sums", 10)
        self.create_subscription(Int32, "sums", self.on_sum, 10)
        self.timer = self.create_timer(0.1, self.tick)
        self.n = 0

    async def tick(self):
        self.n += 1
        n = self.n
        response = await self.client.call_async(AddTwoInts.Request(a=n, b=20))
        print(f"ASYNC {n} + 20 = {response.sum}", flush=True)
        self.pub.publish(Int32(data=response.sum))
        if n == 3:
            self.timer.cancel()

    async def on_sum(self, msg):
        response = await self.client.call_async(AddTwoInts.Request(a=msg.data, b=1000))
        print(f"HEARD {msg.data} -> {response.sum}", flush=True)
        if msg.data == 23:
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    node = AsyncCaller()
    try:
        rclpy.spin(node)
    except Exception:  # rclpy's spin may raise once shut down from a callback
        return


if __name__ == "__main__":
    main()
