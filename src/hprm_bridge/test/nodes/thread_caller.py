"""A synchronous client as rclpy's docs suggest one (no HPRM import): rclpy.spin runs
the node on a thread of its own while the main calls the service with client.call and
waits for each answer. Prints the answers, then STOP."""

import threading

import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.node import Node


def main():
    rclpy.init()
    node = Node("thread_caller")
    client = node.create_client(AddTwoInts, "add_two_ints")
    spinner = threading.Thread(target=rclpy.spin, args=(node,), daemon=True)
    spinner.start()
    while not client.wait_for_service(timeout_sec=1.0):
        node.get_logger().info("service not available, waiting again...")
    for n in (1, 2):
        response = client.call(AddTwoInts.Request(a=n, b=100))
        print(f"THREAD {n} + 100 = {response.sum}", flush=True)
    print("STOP", flush=True)
    rclpy.shutdown()
    spinner.join(timeout=5)


if __name__ == "__main__":
    main()
