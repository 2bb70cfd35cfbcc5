"""A plain rclpy node that publishes or subscribes /pair with a QoS profile chosen by
parameters, and prints the incompatible-QoS events it gets and what it hears: run as
role:=talker and role:=listener with profiles that DDS's requested-versus-offered rule
refuses, nothing is heard and each side gets one event naming the policy. Under rclpy
and ported alike.

Parameters: role (talker | listener), reliability and durability (rclpy's names, or
"default"), deadline_ms and lease_ms (0: infinite), liveliness (automatic |
manual_by_topic), quiet (true: no event callback; rclpy's default warning instead),
ticks (how many 50 ms ticks the listener lives, default 30). At its 10th tick the
talker prints how many subscriptions it is matched with."""

import contextlib

import rclpy
from rclpy.duration import Duration
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import (
    DurabilityPolicy,
    LivelinessPolicy,
    QoSProfile,
    ReliabilityPolicy,
    qos_policy_name_from_kind,
)
from rclpy.qos_event import PublisherEventCallbacks, SubscriptionEventCallbacks
from std_msgs.msg import Int32


class Pair(Node):
    def __init__(self, name="qos_pair"):
        super().__init__(name)
        p = {n: self.declare_parameter(n, v).value for n, v in (
            ("role", "talker"), ("reliability", "default"), ("durability", "default"),
            ("deadline_ms", 0), ("lease_ms", 0), ("liveliness", "automatic"),
            ("quiet", False), ("ticks", 30))}  # fmt: skip
        qos = QoSProfile(depth=10)
        if p["reliability"] != "default":
            qos.reliability = ReliabilityPolicy[p["reliability"].upper()]
        if p["durability"] != "default":
            qos.durability = DurabilityPolicy[p["durability"].upper()]
        if p["deadline_ms"]:
            qos.deadline = Duration(nanoseconds=p["deadline_ms"] * 1_000_000)
        if p["lease_ms"]:
            qos.liveliness_lease_duration = Duration(nanoseconds=p["lease_ms"] * 1_000_000)
        qos.liveliness = LivelinessPolicy[p["liveliness"].upper()]
        self.role, self.ticks, self.heard = p["role"], p["ticks"], []
        if self.role == "talker":
            events = PublisherEventCallbacks(incompatible_qos=self.event("offered"))
            self.pub = self.create_publisher(
                Int32, "pair", qos, event_callbacks=None if p["quiet"] else events
            )
        else:
            events = SubscriptionEventCallbacks(incompatible_qos=self.event("requested"))
            self.create_subscription(
                Int32, "pair", lambda m: self.heard.append(m.data), qos,
                event_callbacks=None if p["quiet"] else events,
            )  # fmt: skip
        self.n = 0
        self.create_timer(0.05, self.tick)

    def event(self, side):
        def on_event(info):
            name = qos_policy_name_from_kind(info.last_policy_kind)
            print(f"INCOMPATIBLE {side} total {info.total_count} +{info.total_count_change} "
                  f"{name}", flush=True)  # fmt: skip

        return on_event

    def tick(self):
        self.n += 1
        if self.role == "talker":
            self.pub.publish(Int32(data=self.n))
            if self.n == 10:  # discovery done under rclpy: matched subscriptions only
                print(f"MATCHED {self.pub.get_subscription_count()}", flush=True)
        elif self.n == self.ticks:
            print(f"HEARD {len(self.heard)} messages", flush=True)
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    node = Pair()
    with contextlib.suppress(ExternalShutdownException):
        rclpy.spin(node)


if __name__ == "__main__":
    main()
