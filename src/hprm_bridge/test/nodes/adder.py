"""A plain rclpy service node (no HPRM import): /add_two_ints adds, and says so."""

import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.node import Node


class Adder(Node):
    def __init__(self):
        super().__init__("adder")
        self.create_service(AddTwoInts, "add_two_ints", self.add)

    def add(self, request, response):
        response.sum = request.a + request.b
        print(f"ADD {request.a} + {request.b}", flush=True)
        return response


def main():
    rclpy.init()
    node = Adder()
    try:
        rclpy.spin(node)
    finally:
        node.destroy_node()
        rclpy.shutdown()


if __name__ == "__main__":
    main()
