"""A node that asks the ROS 2 graph (no HPRM import): in its constructor, then at its
first timer tick (parameter period, default 0.05 s), prints what count_publishers,
count_subscribers, the publisher's get_subscription_count, get_topic_names_and_types
and get_node_names answer. It subscribes /chatter and publishes /probe, which it also
subscribes itself."""

import contextlib
import json

import rclpy
from rclpy.node import Node
from std_msgs.msg import Int32, String


class GraphProbe(Node):
    def __init__(self):
        super().__init__("graph_probe")
        self.create_subscription(String, "chatter", lambda m: None, 10)
        self.pub = self.create_publisher(Int32, "probe", 10)
        self.create_subscription(Int32, "probe", lambda m: None, 10)
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
        }
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
