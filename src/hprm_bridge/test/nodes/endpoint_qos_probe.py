"""Creates publishers and subscriptions with several QoS profiles and prints, as JSON,
what get_publishers_info_by_topic and get_subscriptions_info_by_topic say of them
(each info as rclpy prints it, less its gid, which differs from run to run under
rclpy); then how names resolve and which exception a name ROS 2 refuses raises. Run
under real rclpy and under HPRM's: the outputs must be equal. It does not spin; it
sleeps a second before it asks, for rclpy's graph, which learns even a node's own
endpoints by DDS discovery."""

import json
import time

import rclpy
from rclpy import exceptions
from rclpy.duration import Duration
from rclpy.qos import (
    HistoryPolicy,
    LivelinessPolicy,
    QoSProfile,
    qos_profile_sensor_data,
    qos_profile_system_default,
)
from std_msgs.msg import String
from std_srvs.srv import Trigger

KINDS = ["NameValidationException", "InvalidTopicNameException", "InvalidServiceNameException",
         "InvalidNodeNameException", "InvalidNamespaceException"]  # fmt: skip

PROFILES = {
    "system_default": qos_profile_system_default,
    "sensor_data": qos_profile_sensor_data,
    "keep_all": QoSProfile(history=HistoryPolicy.KEEP_ALL),
    "depth_zero": QoSProfile(depth=0),
    "manual": QoSProfile(
        depth=4,
        liveliness=LivelinessPolicy.MANUAL_BY_TOPIC,
        liveliness_lease_duration=Duration(seconds=3),
        lifespan=Duration(nanoseconds=5),
    ),
}


def _refusal(call, *args, **kwargs):
    """Which of rclpy's exceptions (and ValueError) the call raised."""
    try:
        call(*args, **kwargs)
    except Exception as exc:  # the kind of failure is what is compared
        kinds = [k for k in KINDS if isinstance(exc, getattr(exceptions, k))]
        return kinds or ("ValueError" if isinstance(exc, ValueError) else type(exc).__name__)
    return "not refused"


def main():
    rclpy.init()
    node = rclpy.create_node("qos_probe", namespace="/robot")
    for topic, qos in PROFILES.items():
        node.create_publisher(String, topic, qos)
        node.create_subscription(String, f"/robot/{topic}", lambda m: None, qos)
    time.sleep(1.0)
    out = {}
    for topic in PROFILES:
        infos = node.get_publishers_info_by_topic(topic)
        infos += node.get_subscriptions_info_by_topic(f"/robot/{topic}")
        out[topic] = [[line for line in str(i).splitlines() if not line.startswith("GID")]
                      for i in infos]  # fmt: skip
    out["nobody"] = len(node.get_publishers_info_by_topic("/nobody"))
    out["dds_name"] = len(node.get_subscriptions_info_by_topic("rt/robot/keep_all", True))
    out["resolved"] = [node.resolve_topic_name(n) for n in ("{node}/x", "~", "{ns}/y", "z")]
    out["refused"] = {
        "info": _refusal(node.get_publishers_info_by_topic, "bad topic"),
        "publisher": _refusal(node.create_publisher, String, "bad topic", 1),
        "digit": _refusal(node.create_subscription, String, "a/1b", print, 1),
        "slash": _refusal(node.create_publisher, String, "a//b", 1),
        "tilde": _refusal(node.create_publisher, String, "a~b", 1),
        "service": _refusal(node.create_service, Trigger, "bad srv", print),
        "client": _refusal(node.create_client, Trigger, "srv/"),
        "node": _refusal(rclpy.create_node, "bad-name"),
        "namespace": _refusal(rclpy.create_node, "n", namespace="/bad ns"),
    }
    print(json.dumps(out, indent=1))
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
