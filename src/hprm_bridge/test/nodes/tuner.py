"""A plain rclpy node with parameters: prints its gain at every tick."""

import contextlib

import rclpy
from rcl_interfaces.msg import IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.node import Node


class Tuner(Node):
    def __init__(self):
        super().__init__("tuner")
        self.declare_parameter(
            "gain",
            3,
            ParameterDescriptor(integer_range=[IntegerRange(from_value=0, to_value=10, step=1)]),
        )
        self.declare_parameter("label", "front")
        self.declare_parameter("pid.kp", 0.5)
        self.declare_parameter("fixed", 1, ParameterDescriptor(read_only=True))
        self.add_on_set_parameters_callback(self.check)
        self.create_timer(0.1, self.tick)

    def check(self, params):
        for p in params:
            if p.name == "label" and p.value == "forbidden":
                return SetParametersResult(successful=False, reason="label refused by the node")
        return SetParametersResult(successful=True)

    def tick(self):
        print(
            f"GAIN {self.get_parameter('gain').value} LABEL {self.get_parameter('label').value}",
            flush=True,
        )


def main():
    rclpy.init()
    node = Tuner()
    with contextlib.suppress(KeyboardInterrupt):
        rclpy.spin(node)


if __name__ == "__main__":
    main()
