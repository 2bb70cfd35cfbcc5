"""A plain rclpy node with a QoS deadline of 100 ms on its /beat publisher and on its
own subscription to it: it publishes at its first three ticks (every 50 ms), then
goes quiet, and prints each message heard and each deadline missed (the subscription's
requested, the publisher's offered) with the time since its first message, until each
side has missed three. The same under rclpy and ported, but for the times, which the
wall clock sets under rclpy."""

import contextlib

import rclpy
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.qos_event import PublisherEventCallbacks, SubscriptionEventCallbacks
from std_msgs.msg import Int32

QOS = QoSProfile(depth=10, deadline=Duration(seconds=0.1))


class DeadlineWatcher(Node):
    def __init__(self):
        super().__init__("deadline_watcher")
        self.first = None
        self.missed = {"requested": 0, "offered": 0}
        self.create_subscription(
            Int32, "beat", self.heard, QOS,
            event_callbacks=SubscriptionEventCallbacks(deadline=self.on_missed("requested")),
        )  # fmt: skip
        self.pub = self.create_publisher(
            Int32, "beat", QOS,
            event_callbacks=PublisherEventCallbacks(deadline=self.on_missed("offered")),
        )  # fmt: skip
        self.ticks = 0
        self.create_timer(0.05, self.tick)

    def ms(self):
        return (self.get_clock().now() - self.first).nanoseconds // 1_000_000

    def tick(self):
        self.ticks += 1
        if self.ticks <= 3:
            self.pub.publish(Int32(data=self.ticks))

    def heard(self, msg):
        if self.first is None:
            self.first = self.get_clock().now()
        print(f"HEARD {msg.data} at {self.ms()}", flush=True)

    def on_missed(self, side):
        def missed(info):
            self.missed[side] = info.total_count
            print(f"MISSED {side} {info.total_count} +{info.total_count_change} at {self.ms()}",
                  flush=True)  # fmt: skip
            if min(self.missed.values()) >= 3:
                print("STOP", flush=True)
                rclpy.shutdown()

        return missed


def main():
    rclpy.init()
    with contextlib.suppress(KeyboardInterrupt):
        rclpy.spin(DeadlineWatcher())


if __name__ == "__main__":
    main()
