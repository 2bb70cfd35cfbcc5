"""Plain rclpy nodes whose liveliness events follow a script: a talker with two
publishers on /live (``a``: MANUAL_BY_TOPIC, lease 500 ms; ``b``: automatic) and a
listener with a liveliness callback. Every 100 ms tick of the talker does one step:

tick 1 ``a`` publishes; (its lease runs out at 0.6 s: lost) tick 10 ``a`` asserts its
liveliness (after the loss: nothing changes); tick 15 ``b`` publishes; tick 20 ``a``
publishes (alive again); tick 22 ``a`` is destroyed; ``b`` leaves: the listener
destroys the talker node at its tick 25 (``both``, the two nodes in one executor, as
ros2/demos' ``liveliness``) or the talker destroys ``b`` (``talker``, its own process).
The listener ticks from its first event and prints STOP at its tick 30.

Prints LOST (talker), LIVELINESS and HEARD (listener). The ticks start once ``a`` is
matched, so that under rclpy across processes DDS discovery comes first."""

import contextlib
import sys

import rclpy
from rclpy.duration import Duration
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import LivelinessPolicy, QoSProfile
from rclpy.qos_event import PublisherEventCallbacks, SubscriptionEventCallbacks
from std_msgs.msg import String

MANUAL = QoSProfile(depth=10, liveliness=LivelinessPolicy.MANUAL_BY_TOPIC,
                    liveliness_lease_duration=Duration(seconds=0.5))  # fmt: skip


class Talker(Node):
    def __init__(self, destroys_b):
        super().__init__("live_talker")
        lost = PublisherEventCallbacks(liveliness=self.lost)
        self.a = self.create_publisher(String, "live", MANUAL, event_callbacks=lost)
        self.b = self.create_publisher(String, "live", 10)
        self.destroys_b, self.n = destroys_b, 0
        self.create_timer(0.1, self.tick)

    def lost(self, info):
        print(f"LOST {info.total_count} +{info.total_count_change}", flush=True)

    def tick(self):
        if self.n == 0 and self.a.get_subscription_count() == 0:
            self.a.assert_liveliness()  # its lease runs from its creation under DDS
            return  # not matched yet (rclpy across processes)
        self.n += 1
        if self.n in (1, 20):
            self.a.publish(String(data=f"a{self.n}"))
        elif self.n == 10:
            self.a.assert_liveliness()
        elif self.n == 15:
            self.b.publish(String(data="b15"))
        elif self.n == 22:
            self.destroy_publisher(self.a)
        elif self.n == 25 and self.destroys_b:
            self.destroy_publisher(self.b)


class Listener(Node):
    def __init__(self, talker=None, executor=None):
        super().__init__("live_listener")
        events = SubscriptionEventCallbacks(liveliness=self.changed)
        self.create_subscription(String, "live", self.heard, 10, event_callbacks=events)
        self.talker, self.executor_, self.n, self.matched = talker, executor, 0, False
        self.create_timer(0.1, self.tick)

    def changed(self, e):
        self.matched = True
        print(f"LIVELINESS alive {e.alive_count} not_alive {e.not_alive_count} "
              f"{e.alive_count_change:+d} {e.not_alive_count_change:+d}", flush=True)  # fmt: skip

    def heard(self, msg):
        print(f"HEARD {msg.data}", flush=True)

    def tick(self):
        if not self.matched:
            return  # counts from its first event (under rclpy: DDS discovery)
        self.n += 1
        if self.n == 25 and self.talker is not None:  # as ros2/demos' liveliness
            self.executor_.remove_node(self.talker)
            self.talker.destroy_node()
        if self.n == 30:
            print("STOP", flush=True)
            raise SystemExit


def main():
    rclpy.init()
    role = sys.argv[1] if len(sys.argv) > 1 else "both"
    executor = SingleThreadedExecutor()
    if role == "both":
        talker = Talker(destroys_b=False)
        nodes = [Listener(talker, executor), talker]
    else:
        nodes = [Talker(destroys_b=True) if role == "talker" else Listener()]
    for node in nodes:
        executor.add_node(node)
    with contextlib.suppress(SystemExit):
        executor.spin()


if __name__ == "__main__":
    main()
