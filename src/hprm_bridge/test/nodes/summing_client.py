"""A plain rclpy node calling /add_two_ints from a timer: every ``period`` s
(parameter, 0.01 by default) it asks for n + 10 n and prints each sum when it
comes, with the time it took by the node's clock (its done-callback, as rclpy
nodes do it)."""

import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.node import Node


class SummingClient(Node):
    def __init__(self):
        super().__init__("summing_client")
        self.client = self.create_client(AddTwoInts, "add_two_ints")
        self.create_timer(self.declare_parameter("period", 0.01).value, self.tick)
        self.n = 0

    def tick(self):
        if not self.client.service_is_ready():
            return
        self.n += 1
        sent = self.get_clock().now().nanoseconds
        future = self.client.call_async(AddTwoInts.Request(a=self.n, b=10 * self.n))
        future.add_done_callback(lambda f, n=self.n: self.answered(n, sent, f))

    def answered(self, n, sent, future):
        took = self.get_clock().now().nanoseconds - sent
        print(f"SUM {n} {future.result().sum} after {took} ns", flush=True)


def main():
    rclpy.init()
    node = SummingClient()
    try:
        rclpy.spin(node)
    finally:
        node.destroy_node()
        rclpy.shutdown()


if __name__ == "__main__":
    main()
