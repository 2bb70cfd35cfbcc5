"""Prints, as JSON, how a node's parameters behave past plain declare/get/set: a node that
allows undeclared parameters and declares its overrides, parameters declared with a type
and no value, by name only, or with no value, and the declaration errors. Run under real
rclpy and under HPRM's: the outputs must be equal."""

import json
import warnings

import rclpy
from rcl_interfaces.msg import (
    IntegerRange,
    ParameterDescriptor,
    ParameterValue,
    SetParametersResult,
)
from rclpy.node import Node
from rclpy.parameter import Parameter, parameter_value_to_python

rclpy.init(args=["probe", "--ros-args", "-p", "gain:=2", "-p", "label:=front",
                 "-p", "speed:=3", "-p", "tags:=[a,b]"])  # fmt: skip


def show(r):
    if isinstance(r, Parameter):
        listed = isinstance(r.value, (list, tuple)) or type(r.value).__name__ == "array"
        return ["param", r.name, r.type_.value, list(r.value) if listed else r.value]
    if isinstance(r, Parameter.Type):
        return ["type", r.value]
    if isinstance(r, SetParametersResult):
        return ["result", r.successful, r.reason]
    if isinstance(r, ParameterDescriptor):
        return ["descriptor", r.name, r.type, r.dynamic_typing, r.read_only]
    if isinstance(r, (list, tuple)):
        return [show(x) for x in r]
    return r


def attempt(call):
    try:
        return show(call())
    except Exception as exc:  # the error's type and words are what a node sees
        # (rclpy's undeclared-set message lists an exhausted generator, and Python's own
        # errors are worded by each: their type is compared, not their words)
        own = type(exc).__module__.endswith("rclpy.exceptions") and "undeclared" not in str(exc)
        return [type(exc).__name__, str(exc) if own else ""]


seen = {}


def ranged(lo, hi):
    return ParameterDescriptor(type=2, integer_range=[IntegerRange(from_value=lo, to_value=hi,
                                                                   step=1)])  # fmt: skip


def value(call):
    """A ParameterValue as [type, integer value], or the error as attempt() shows it."""
    got = attempt(call)
    return [got.type, got.integer_value] if hasattr(got, "integer_value") else got


# A node that takes any parameter and declares what it is given.
calls = []


def record(params):
    calls.append([p.name for p in params])
    return SetParametersResult(successful=True)


node = Node("open", allow_undeclared_parameters=True,
            automatically_declare_parameters_from_overrides=True)  # fmt: skip
node.add_on_set_parameters_callback(record)
seen["open"] = {
    "declared": sorted(node.get_parameters_by_prefix("")),
    "given": attempt(lambda: node.get_parameters(["gain", "label", "speed", "tags"])),
    "missing": attempt(lambda: node.get_parameter("missing")),
    "missing_or": attempt(lambda: node.get_parameter_or("missing", Parameter("x", value=1))),
    "types": attempt(lambda: node.get_parameter_types(["gain", "missing", "label"])),
    "describe": attempt(lambda: node.describe_parameters(["missing", "gain"])),
    "set_new": attempt(lambda: node.set_parameters([Parameter("fresh", value=1)])),
    "new_value": attempt(lambda: node.get_parameter("fresh")),
    "new_descriptor": attempt(lambda: node.describe_parameter("fresh")),
    "retype_new": attempt(lambda: node.set_parameters([Parameter("fresh", value="text")])),
    "retype_given": attempt(lambda: node.set_parameters([Parameter("gain", value="text")])),
    "atomic_new": attempt(
        lambda: node.set_parameters_atomically(
            [Parameter("a", value=1.5), Parameter("b", value=True)]
        )
    ),
    "unset": attempt(lambda: node.set_parameters([Parameter("fresh")])),
    "has_unset": node.has_parameter("fresh"),
    "again": attempt(lambda: node.declare_parameter("gain", 5)),
    "by_prefix": sorted(node.get_parameters_by_prefix("")),
}
seen["open"]["calls"] = calls

# A node without those options: the same overrides, declared by the node's own code.
plain = Node("plain")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # declaring by name only warns (deprecated)
    seen["plain"] = {
        "has_given": plain.has_parameter("gain"),
        "type_missing": attempt(lambda: plain.get_parameter_type("missing")),
        "describe_missing": attempt(lambda: plain.describe_parameter("missing")),
        "typed": attempt(lambda: plain.declare_parameter("typed", Parameter.Type.INTEGER)),
        "typed_get": attempt(lambda: plain.get_parameter("typed")),
        "typed_or": attempt(lambda: plain.get_parameter_or("typed")),
        "typed_type": attempt(lambda: plain.get_parameter_type("typed")),
        "typed_wrong": attempt(lambda: plain.set_parameters([Parameter("typed", value="x")])),
        "typed_set": attempt(lambda: plain.set_parameters([Parameter("typed", value=4)])),
        "typed_now": attempt(lambda: plain.get_parameter("typed")),
        "typed_given": attempt(lambda: plain.declare_parameter("gain", Parameter.Type.INTEGER)),
        "int_for_float": attempt(lambda: plain.declare_parameter("speed", 1.0)),
        "name_only": attempt(lambda: plain.declare_parameter("loose")),
        "name_only_set": attempt(lambda: plain.set_parameters([Parameter("loose", value=5)])),
        "name_only_descriptor": attempt(lambda: plain.describe_parameter("loose")),
        "no_value": attempt(lambda: plain.declare_parameter("empty", None, ParameterDescriptor())),
        "no_value_get": attempt(lambda: plain.get_parameter("empty")),
        "no_value_set": attempt(lambda: plain.set_parameters([Parameter("empty", value=5)])),
        "no_value_given": attempt(
            lambda: plain.declare_parameter("label", None, ParameterDescriptor())
        ),
        "many": attempt(
            lambda: plain.declare_parameters("ns", [("a", 1), ("b", Parameter.Type.STRING), ("c",)])
        ),
        "not_set_type": attempt(lambda: plain.declare_parameter("bad", Parameter.Type.NOT_SET)),
        "typed_dynamic": attempt(
            lambda: plain.declare_parameter(
                "bad", Parameter.Type.INTEGER, ParameterDescriptor(dynamic_typing=True)
            )
        ),
        "empty_name": attempt(lambda: plain.declare_parameter("", 1)),
        "long_tuple": attempt(lambda: plain.declare_parameters("", [("x", 1, None, 2)])),
        "name_not_str": attempt(lambda: plain.declare_parameters("", [(3, 1)])),
        "not_descriptor": attempt(lambda: plain.declare_parameters("", [("x", 1, "d")])),
        "undeclare_typed": attempt(lambda: plain.set_parameters([Parameter("typed")])),
        "descriptor_keep": value(lambda: plain.set_descriptor("typed", ranged(0, 10))),
        "descriptor_alt": value(
            lambda: plain.set_descriptor(
                "typed", ranged(5, 10), ParameterValue(type=2, integer_value=7)
            )
        ),
        "descriptor_refused": value(
            lambda: plain.set_descriptor(
                "typed", ranged(20, 30), ParameterValue(type=2, integer_value=1)
            )
        ),
        "descriptor_untyped": value(
            lambda: plain.set_descriptor("typed", ParameterDescriptor(read_only=True))
        ),
        "descriptor_read_only": value(lambda: plain.set_descriptor("typed", ranged(0, 10))),
        "descriptor_undeclared": value(lambda: plain.set_descriptor("nope", ranged(0, 1))),
        "descriptor_now": attempt(lambda: plain.describe_parameter("typed")),
        "declared": sorted(plain.get_parameters_by_prefix("")),
    }

# Parameters as messages: what parameter clients and set-callbacks handle.
ids = Parameter("ids", value=[1, 2])
msg = ids.to_parameter_msg()
back = Parameter.from_parameter_msg(msg)
seen["messages"] = {
    "tutorial": node.get_parameter("label").get_parameter_value().string_value,
    "value_type": node.get_parameter("gain").get_parameter_value().type,
    "msg": [msg.name, msg.value.type, list(msg.value.integer_array_value)],
    "back": [show(back), type(back.value).__name__],
    "bytes": [
        list(Parameter("b", value=[b"\x01", b"\x02"]).get_parameter_value().byte_array_value)
        == [b"\x01", b"\x02"]
    ],
    "to_python": [
        type(v).__name__
        for v in (
            parameter_value_to_python(ParameterValue(type=8, double_array_value=[0.5])),
            parameter_value_to_python(ParameterValue(type=9, string_array_value=["a"])),
            parameter_value_to_python(ParameterValue()),
        )
    ],
    "checks": [
        Parameter.Type.DOUBLE.check(1.0),
        Parameter.Type.DOUBLE.check(1),
        Parameter.Type.INTEGER_ARRAY.check([1, 2]),
        Parameter.Type.NOT_SET.check(None),
    ],
    "disagree": attempt(lambda: Parameter("rate", Parameter.Type.DOUBLE, 1)),
    "mixed": attempt(lambda: Parameter("mixed", value=[1, "a"])),
    "not_a_type": attempt(lambda: Parameter("x", 3, 1)),
}
print(json.dumps(seen, sort_keys=True))
node.destroy_node()
plain.destroy_node()
rclpy.shutdown()
