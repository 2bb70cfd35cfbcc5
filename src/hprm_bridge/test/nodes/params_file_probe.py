"""Prints, as JSON, the parameters nodes of several names and namespaces take from this
process's command line (--params-file and -p, in the order given), each node declaring
its overrides. Run under real rclpy and under HPRM's: the outputs must be equal."""

import json
import sys

import rclpy
from rclpy.node import Node

rclpy.init(args=sys.argv)
seen = {}
for name, namespace in (("talker", "/robot1"), ("talker", "/"), ("listener", "/robot1"),
                        ("talker", "/a/b"), ("camera", "/robot1/front")):  # fmt: skip
    node = Node(name, namespace=namespace,
                automatically_declare_parameters_from_overrides=True)  # fmt: skip
    given = node.get_parameters_by_prefix("")
    seen[node.get_fully_qualified_name()] = {
        n: p.value for n, p in given.items() if n != "use_sim_time"
    }
    node.destroy_node()
print(json.dumps(seen, sort_keys=True))
rclpy.shutdown()
