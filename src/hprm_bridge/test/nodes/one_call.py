"""The ROS 2 tutorial's service client (no HPRM import): waits for
/add_two_ints, calls it once with the two numbers on its command line, prints
the result and exits."""

import sys

import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.node import Node


def main():
    rclpy.init()
    node = Node("one_call")
    client = node.create_client(AddTwoInts, "add_two_ints")
    while not client.wait_for_service(timeout_sec=1.0):
        node.get_logger().info("service not available, waiting again...")
    a, b = (int(x) for x in sys.argv[1:3]) if len(sys.argv) > 2 else (2, 3)
    future = client.call_async(AddTwoInts.Request(a=a, b=b))
    rclpy.spin_until_future_complete(node, future)
    print(f"RESULT {a} + {b} = {future.result().sum}", flush=True)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
