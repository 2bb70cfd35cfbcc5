"""Prints, as JSON, the QoS a node's publisher and subscription get from parameter
overrides (QoSOverridingOptions; argv[1]: a params file with qos_overrides), the
parameters declared for them, and the refusals. Run under real rclpy and under HPRM's:
the outputs must be equal."""

import json
import sys

import rclpy
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSPolicyKind, QoSProfile
from rclpy.qos_overriding_options import (
    InvalidQosOverridesError,
    QosCallbackResult,
    QoSOverridingOptions,
)
from std_msgs.msg import String

rclpy.init(args=["probe", "--ros-args", "--params-file", sys.argv[1]])
node = Node("talker")
pub = node.create_publisher(
    String, "chatter", 10, qos_overriding_options=QoSOverridingOptions.with_default_policies()
)
every = [QoSPolicyKind.DURABILITY, QoSPolicyKind.DEADLINE, QoSPolicyKind.LIVELINESS,
         QoSPolicyKind.RELIABILITY, QoSPolicyKind.HISTORY, QoSPolicyKind.LIFESPAN,
         QoSPolicyKind.DEPTH, QoSPolicyKind.LIVELINESS_LEASE_DURATION,
         QoSPolicyKind.AVOID_ROS_NAMESPACE_CONVENTIONS]  # fmt: skip
sub = node.create_subscription(
    String, "chatter", print, QoSProfile(depth=4),
    qos_overriding_options=QoSOverridingOptions(every, entity_id="all"),
)  # fmt: skip


def shallow(qos):
    ok = qos.depth <= 5
    assert QosCallbackResult is SetParametersResult  # ros2/demos' qos_overrides_talker uses it
    return QosCallbackResult(successful=ok, reason="" if ok else "too deep")


refused = ""
try:
    node.create_publisher(String, "other", 1, qos_overriding_options=QoSOverridingOptions(
        [QoSPolicyKind.DEPTH], callback=shallow))  # fmt: skip
except InvalidQosOverridesError as exc:
    refused = type(exc).__name__


def profile(qos):
    return [qos.depth, qos.history.name, qos.reliability.name, qos.durability.name,
            qos.deadline.nanoseconds, qos.lifespan.nanoseconds,
            qos.avoid_ros_namespace_conventions]  # fmt: skip


declared = node.get_parameters_by_prefix("qos_overrides")
name = "qos_overrides./chatter.publisher.depth"
print(json.dumps({
    "pub": profile(pub.qos_profile), "sub": profile(sub.qos_profile),
    "declared": {k: v.value for k, v in sorted(declared.items())},
    "read_only": node.describe_parameter(name).read_only,
    "set": node.set_parameters([Parameter(name, value=1)])[0].reason,
    "refused": refused,
}, sort_keys=True))  # fmt: skip
node.destroy_node()
rclpy.shutdown()
