"""The Foxy-era ROS 2 tutorial's service client (no HPRM import): calls
/add_two_ints once with the two numbers on its command line, then polls the
future in a spin_once loop, prints the result and exits."""

import sys

import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.node import Node


class MinimalClientAsync(Node):
    def __init__(self):
        super().__init__("polling_client")
        self.cli = self.create_client(AddTwoInts, "add_two_ints")
        while not self.cli.wait_for_service(timeout_sec=1.0):
            self.get_logger().info("service not available, waiting again...")
        self.req = AddTwoInts.Request()

    def send_request(self):
        self.req.a, self.req.b = (int(x) for x in sys.argv[1:3]) if len(sys.argv) > 2 else (2, 3)
        self.future = self.cli.call_async(self.req)


def main():
    rclpy.init()
    client = MinimalClientAsync()
    client.send_request()
    spins = 0
    while rclpy.ok():
        rclpy.spin_once(client)
        spins += 1
        if client.future.done():
            response = client.future.result()
            print(
                f"RESULT {client.req.a} + {client.req.b} = {response.sum} after {spins} "
                f"spin_once at {client.get_clock().now().nanoseconds}",
                flush=True,
            )
            break
    client.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
