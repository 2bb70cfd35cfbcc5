"""A node that asks the ROS 2 graph (no HPRM import): in its constructor, then at its
first timer tick (parameter period, default 0.05 s), prints what count_publishers,
count_subscribers, the publisher's get_subscription_count, get_topic_names_and_types
and get_node_names answer, then the service queries and those by node, the endpoints
of /chatter and /probe (get_publishers_info_by_topic, get_subscriptions_info_by_topic:
node, type, QoS), and whether its client and action client find a server. It
subscribes /chatter and publishes /probe (transient local, with a deadline), which it
also subscribes itself (sensor data QoS); it serves ~/reset, calls /add_two_ints
(which nobody serves) and is a client of the action /fibonacci.
ROS 2's own topics of every node (/rosout, /parameter_events) are left out of what
it prints; its parameter services are not."""

import contextlib
import json

import rclpy
from example_interfaces.action import Fibonacci
from example_interfaces.srv import AddTwoInts
from rclpy.action import (
    ActionClient,
    get_action_client_names_and_types_by_node,
    get_action_names_and_types,
)
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, qos_profile_sensor_data
from std_msgs.msg import Int32, String
from std_srvs.srv import Trigger

ROS_OWN = ("/rosout", "/parameter_events")


def _mine(names_and_types):
    """Leave out what every rclpy node has."""
    return [[n, t] for n, t in names_and_types if not n.endswith(ROS_OWN)]


def _endpoint(info):
    q = info.qos_profile
    return [info.endpoint_type.name, info.node_namespace, info.node_name, info.topic_type,
            len(info.endpoint_gid), q.history.name, q.depth, q.reliability.name,
            q.durability.name, q.liveliness.name, str(q.lifespan), str(q.deadline),
            str(q.liveliness_lease_duration)]  # fmt: skip


class GraphProbe(Node):
    def __init__(self):
        super().__init__("graph_probe")
        self.create_subscription(String, "chatter", lambda m: None, 10)
        latched = QoSProfile(depth=3, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             deadline=Duration(seconds=2))  # fmt: skip
        self.pub = self.create_publisher(Int32, "probe", latched)
        self.create_subscription(Int32, "probe", lambda m: None, qos_profile_sensor_data)
        self.create_service(Trigger, "~/reset", lambda request, response: response)
        self.adder = self.create_client(AddTwoInts, "/add_two_ints")
        self.fibonacci = ActionClient(self, Fibonacci, "fibonacci")
        self.report("BUILT")
        self.create_timer(self.declare_parameter("period", 0.05).value, self.tick)

    def report(self, when):
        answers = {
            "chatter_publishers": self.count_publishers("chatter"),
            "chatter_subscribers": self.count_subscribers("/chatter"),
            "probe_subscribers": self.pub.get_subscription_count(),
            "topics": [
                [name, types]
                for name, types in self.get_topic_names_and_types()
                if name in ("/chatter", "/probe")
            ],
            "nodes": sorted(self.get_node_names()),
            "hidden_topics": [n for n, _ in self.get_topic_names_and_types() if n.startswith("/_")],
            "services": _mine(self.get_service_names_and_types()),
            "served_by_me": _mine(self.get_service_names_and_types_by_node("graph_probe", "/")),
            "called_by_me": self.get_client_names_and_types_by_node("graph_probe", "/"),
            "actions": get_action_names_and_types(self),
            "my_action_clients": get_action_client_names_and_types_by_node(
                self, "graph_probe", "/"
            ),
            "my_subscriptions": _mine(
                self.get_subscriber_names_and_types_by_node("graph_probe", "/")
            ),
        }
        answers["endpoints"] = sorted(
            _endpoint(info)
            for topic in ("chatter", "/probe")
            for info in self.get_publishers_info_by_topic(topic)
            + self.get_subscriptions_info_by_topic(topic)
        )
        answers["ready"] = [self.adder.service_is_ready(), self.fibonacci.server_is_ready()]
        answers["dds_named"] = len(self.get_publishers_info_by_topic("rt/probe", no_mangle=True))
        try:
            talker = self.get_publisher_names_and_types_by_node("talker", "/")
            answers["talker_publishes"] = _mine(talker)
        except RuntimeError as e:  # rclpy's NodeNameNonExistentError
            answers["talker_publishes"] = type(e).__name__
        print(f"{when} {json.dumps(answers, sort_keys=True)}", flush=True)

    def tick(self):
        self.report("RUNNING")
        raise SystemExit(0)


def main():
    rclpy.init()
    node = GraphProbe()
    with contextlib.suppress(SystemExit):  # the tick's: done
        rclpy.spin(node)
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
