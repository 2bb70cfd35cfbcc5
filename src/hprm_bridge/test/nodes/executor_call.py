"""one_call.py's client driven through an executor, as larger node files do it
(no HPRM import): add_node, executor.spin_until_future_complete with a timeout,
get_nodes, remove_node."""

import sys

import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node


def main():
    rclpy.init()
    node = Node("executor_call")
    executor = SingleThreadedExecutor()
    added = [executor.add_node(node), executor.add_node(node)]  # the second: already there
    client = node.create_client(AddTwoInts, "add_two_ints")
    while not client.wait_for_service(timeout_sec=1.0):
        node.get_logger().info("service not available, waiting again...")
    a, b = (int(x) for x in sys.argv[1:3]) if len(sys.argv) > 2 else (2, 3)
    future = client.call_async(AddTwoInts.Request(a=a, b=b))
    executor.spin_until_future_complete(future, timeout_sec=30.0)
    nodes = [n.get_name() for n in executor.get_nodes()]
    linked = node.executor is executor
    executor.remove_node(node)
    own = [e for e in node.get_node_names_and_namespaces_with_enclaves() if e[0] == node.get_name()]
    print(f"RESULT {a} + {b} = {future.result().sum} added {added} nodes {nodes} "
          f"then {executor.get_nodes()} linked {linked} {node.executor is executor} enclaves {own} "
          f"group {type(node.default_callback_group).__name__}", flush=True)  # fmt: skip
    executor.shutdown()
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
