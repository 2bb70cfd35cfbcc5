"""A plain rclpy node whose QoS deadlines are made after its spin started: it publishes
/beat at its first six ticks (every 50 ms) and then goes quiet. Its subscription "early"
(made in __init__, deadline 100 ms) is destroyed and made again ("again", the same
profile) at the fourth tick, as a lifecycle node's cleanup and configure would; at the
second tick it makes a subscription "late" (deadline 100 ms too). It prints each message
heard and each deadline missed, with the time since its first tick, until "again" and
"late" have each missed three. The same under rclpy and ported, but for the times, which
the wall clock sets under rclpy. With the argument ``multi``, spun by a
MultiThreadedExecutor."""

import contextlib
import sys

import rclpy
from rclpy.duration import Duration
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.qos_event import SubscriptionEventCallbacks
from std_msgs.msg import Int32

QOS = QoSProfile(depth=10, deadline=Duration(seconds=0.1))


class DeadlineLate(Node):
    def __init__(self):
        super().__init__("deadline_late")
        self.first = None
        self.missed = {}
        self.pub = self.create_publisher(Int32, "beat", QOS)
        self.early = self.subscribe("early")
        self.ticks = 0
        self.create_timer(0.05, self.tick)

    def subscribe(self, name):
        def heard(msg):
            print(f"HEARD {name} {msg.data} at {self.ms()}", flush=True)

        events = SubscriptionEventCallbacks(deadline=lambda info: self.on_missed(name, info))
        return self.create_subscription(Int32, "beat", heard, QOS, event_callbacks=events)

    def ms(self):
        return (self.get_clock().now() - self.first).nanoseconds // 1_000_000

    def tick(self):
        self.ticks += 1
        if self.first is None:
            self.first = self.get_clock().now()
        if self.ticks == 2:
            self.late = self.subscribe("late")
        if self.ticks == 4:
            self.destroy_subscription(self.early)
            self.early = self.subscribe("again")
        if self.ticks <= 6:
            self.pub.publish(Int32(data=self.ticks))

    def on_missed(self, name, info):
        self.missed[name] = info.total_count
        print(f"MISSED {name} {info.total_count} +{info.total_count_change} at {self.ms()}",
              flush=True)  # fmt: skip
        if min(self.missed.get("again", 0), self.missed.get("late", 0)) >= 3:
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    multi = sys.argv[1:] == ["multi"]  # its callbacks on threads (ported: as tasks)
    executor = MultiThreadedExecutor() if multi else SingleThreadedExecutor()
    executor.add_node(DeadlineLate())
    with contextlib.suppress(KeyboardInterrupt):
        executor.spin()


if __name__ == "__main__":
    main()
