"""Prints, as JSON, what a node sees of its parameters and names given
--ros-args (argv[1]: a params file). Run under real rclpy and under HPRM's:
the outputs must be equal."""

import json
import sys

import rclpy
from rclpy.node import Node

rclpy.init(args=["probe", "--ros-args", "--params-file", sys.argv[1], "-p", "gain:=2",
                 "-p", "name:=hello", "-r", "image:=image_raw", "-r", "__ns:=/robot1"])  # fmt: skip
node = Node("cam")
values = {
    "rate": node.declare_parameter("rate", 30.0).value,
    "gain": node.declare_parameter("gain", 1).value,
    "shared": node.declare_parameter("shared", 0).value,
    "frame.id": node.declare_parameter("frame.id", "").value,
    "name": node.declare_parameter("name", "").value,
    "unset": node.declare_parameter("unset", "x").value,
    "rate_type": node.get_parameter("rate").type_.value,
}
names = {
    "ns": node.get_namespace(),
    "image": node.resolve_topic_name("image"),
    "private": node.resolve_topic_name("~/debug"),
    "abs": node.resolve_topic_name("/abs"),
}
print(json.dumps({"values": values, "names": names}, sort_keys=True))
node.destroy_node()
rclpy.shutdown()
