"""A Fibonacci action client that waits (no HPRM import): rclpy.spin runs the node on a
thread of its own while the main sends a goal with the blocking ActionClient.send_goal,
which returns the result's response. Prints the result, then STOP."""

import threading

import rclpy
from example_interfaces.action import Fibonacci
from rclpy.action import ActionClient
from rclpy.node import Node


def main():
    rclpy.init()
    node = Node("sync_fibonacci_client")
    client = ActionClient(node, Fibonacci, "fibonacci")
    spinner = threading.Thread(target=rclpy.spin, args=(node,), daemon=True)
    spinner.start()
    client.wait_for_server()
    response = client.send_goal(Fibonacci.Goal(order=4))
    print(f"RESULT status {response.status} sequence {list(response.result.sequence)}", flush=True)
    print("STOP", flush=True)
    rclpy.shutdown()
    spinner.join(timeout=5)


if __name__ == "__main__":
    main()
