"""Prints, as JSON, what a node sees of its parameters and names given
--ros-args (argv[1]: a params file). Run under real rclpy and under HPRM's:
the outputs must be equal."""

import json
import sys

import rclpy
from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    SetParametersResult,
)
from rclpy.exceptions import (
    InvalidParameterTypeException,
    ParameterAlreadyDeclaredException,
    ParameterNotDeclaredException,
)
from rclpy.node import Node
from rclpy.parameter import Parameter

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

# Setting: descriptors (read-only, ranges, dynamic typing), callbacks, errors.
node.declare_parameter("locked", 5, ParameterDescriptor(read_only=True))
node.declare_parameter(
    "level", 4, ParameterDescriptor(integer_range=[IntegerRange(from_value=0, to_value=10, step=2)])
)
node.declare_parameter(
    "ratio", 0.5, ParameterDescriptor(floating_point_range=[FloatingPointRange(
        from_value=0.0, to_value=1.0, step=0.25)])
)  # fmt: skip
node.declare_parameter("anything", 1, ParameterDescriptor(dynamic_typing=True))
calls = []


def guard(params):
    calls.append(["guard", [p.name for p in params]])
    ok = all(p.name != "gain" or p.value < 100 for p in params)
    return SetParametersResult(successful=ok, reason="" if ok else "gain too high")


def audit(params):
    calls.append(["audit", [p.name for p in params]])
    return SetParametersResult(successful=True)


node.add_on_set_parameters_callback(guard)
node.add_on_set_parameters_callback(audit)
tries = [("gain", 5), ("gain", 500), ("locked", 6), ("level", 11), ("level", 7), ("level", 10),
         ("ratio", 0.75), ("ratio", 0.6), ("rate", "fast"), ("anything", "text")]  # fmt: skip
results = [node.set_parameters([Parameter(n, value=v)])[0] for n, v in tries]
atomic = node.set_parameters_atomically([Parameter("gain", value=7), Parameter("level", value=50)])
node.remove_on_set_parameters_callback(audit)
node.set_parameters([Parameter("gain", value=8)])
errors = {}
for label, call in [
    ("undeclared", lambda: node.set_parameters([Parameter("nope", value=1)])),
    ("again", lambda: node.declare_parameter("gain", 1)),
    ("get", lambda: node.get_parameter("nope")),
    ("type", lambda: Node("cam").declare_parameter("shared", "text")),
]:
    try:
        call()
    except (ParameterNotDeclaredException, ParameterAlreadyDeclaredException,
            InvalidParameterTypeException) as exc:  # fmt: skip
        # (rclpy names no parameter in the first: it lists an exhausted generator)
        errors[label] = [type(exc).__name__, str(exc) if label != "undeclared" else ""]
setting = {
    "results": [[r.successful, r.reason] for r in results],
    "atomic": [atomic.successful, atomic.reason],
    "now": {n: node.get_parameter(n).value for n in ("gain", "level", "ratio", "anything")},
    "calls": calls,
    "errors": errors,
    "locked_read_only": node.describe_parameter("locked").read_only,
    "level_type": node.describe_parameter("level").type,
}
print(json.dumps({"values": values, "names": names, "setting": setting}, sort_keys=True))
node.destroy_node()
rclpy.shutdown()
