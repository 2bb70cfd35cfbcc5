"""Prints, as JSON, the names nodes end with under this process's remapping rules
(-r [node:]from:=to on the command line, and a node's own cli_args). Run under real
rclpy and under HPRM's: the outputs must be equal."""

import json
import sys

import rclpy
from rclpy.node import Node
from std_msgs.msg import String

rclpy.init(args=sys.argv)
seen = []
OWN = ["--ros-args", "-r", "chatter:=own", "-r", "__ns:=/mine"]  # the node's own rules
for name, own in (("talker", []), ("listener", []), ("local", OWN)):
    node = Node(name, cli_args=own)
    pub = node.create_publisher(String, "chatter", 10)
    seen.append([node.get_name(), node.get_namespace(), pub.topic_name,
                 node.resolve_topic_name("~/status")])  # fmt: skip
    node.destroy_node()
print(json.dumps(seen))
rclpy.shutdown()
