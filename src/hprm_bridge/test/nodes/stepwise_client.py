"""An action client whose main waits for one future after another with
``spin_until_future_complete`` (the shape of ros2/examples' ``client_not_composable``;
no HPRM import): the goal's acceptance, then its result, then a future that never
completes, with a timeout. Prints what each wait gave."""

import rclpy
from example_interfaces.action import Fibonacci
from rclpy.action import ActionClient
from rclpy.task import Future


def main():
    rclpy.init()
    node = rclpy.create_node("stepwise_client")
    client = ActionClient(node, Fibonacci, "fibonacci")
    client.wait_for_server()
    sent = client.send_goal_async(Fibonacci.Goal(order=3))
    rclpy.spin_until_future_complete(node, sent)
    handle = sent.result()
    print(f"ACCEPTED {handle.accepted}", flush=True)
    result = handle.get_result_async()
    rclpy.spin_until_future_complete(node, result)
    print(f"RESULT {result.result().status} {list(result.result().result.sequence)}", flush=True)
    before = node.get_clock().now()
    rclpy.spin_until_future_complete(node, Future(), timeout_sec=0.25)
    waited = (node.get_clock().now() - before).nanoseconds / 1e6
    print(f"TIMED OUT after {'about ' if waited != 250 else ''}250 ms", flush=True)
    print("STOP", flush=True)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
