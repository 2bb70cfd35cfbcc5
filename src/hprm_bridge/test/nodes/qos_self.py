"""A plain rclpy node whose own best-effort publisher and reliable subscription share a
topic, beside a reliable publisher of its own: DDS matches the subscription with the
latter only, so the node hears only its messages, both ends of the refused pair print
their incompatible-QoS event, and each publisher counts its matched subscriptions.
Under rclpy and ported alike. Prints at its 6th 100 ms tick, then STOP."""

import contextlib

import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_policy_name_from_kind
from rclpy.qos_event import PublisherEventCallbacks, SubscriptionEventCallbacks
from std_msgs.msg import Int32


def event(side):
    def on_event(info):
        name = qos_policy_name_from_kind(info.last_policy_kind)
        print(f"INCOMPATIBLE {side} total {info.total_count} +{info.total_count_change} {name}",
              flush=True)  # fmt: skip

    return on_event


def main():
    rclpy.init()
    node = rclpy.create_node("qos_self")
    heard = []
    node.create_subscription(
        Int32, "own", lambda m: heard.append(m.data), QoSProfile(depth=10),
        event_callbacks=SubscriptionEventCallbacks(incompatible_qos=event("requested")),
    )  # fmt: skip
    lax = node.create_publisher(
        Int32, "own", QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT),
        event_callbacks=PublisherEventCallbacks(incompatible_qos=event("offered")),
    )  # fmt: skip
    strict = node.create_publisher(Int32, "own", 10)
    ticks = [0]

    def tick():
        ticks[0] += 1
        if ticks[0] <= 5:
            lax.publish(Int32(data=ticks[0]))
            strict.publish(Int32(data=100 + ticks[0]))
            return
        print(f"HEARD {heard}", flush=True)
        print(f"MATCHED {lax.get_subscription_count()} {strict.get_subscription_count()}",
              flush=True)  # fmt: skip
        print("STOP", flush=True)
        raise SystemExit

    node.create_timer(0.1, tick)
    with contextlib.suppress(SystemExit):
        rclpy.spin(node)


if __name__ == "__main__":
    main()
