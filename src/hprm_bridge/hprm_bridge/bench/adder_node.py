"""An rclpy server for ``hprm bench services``: /bench/add answers a + b. No HPRM
import: the same file runs under real rclpy and ported."""

import contextlib

import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.node import Node


def add(request, response):
    response.sum = request.a + request.b
    return response


def main():
    rclpy.init()
    node = Node("adder")
    node.create_service(AddTwoInts, "bench/add", add)
    with contextlib.suppress(KeyboardInterrupt, SystemExit):
        rclpy.spin(node)


if __name__ == "__main__":
    main()
