"""Plain rclpy nodes: a listener that subscribes 1.25 s in to three topics a talker
publishes every 0.5 s (ticks 0 to 4, from 0.5 s): ``latched`` (transient-local, depth
10, lifespan 0.6 s: of what was published before, only tick 1's is young enough),
``plain`` (volatile: nothing from before; the listener drops that subscription once it
heard one message) and ``weak`` (best effort: the listener's reliable subscription and
the talker's publisher do not match, and both hear so). The talker prints how many
subscriptions its latched publisher has at each tick, and STOP at 3 s (the listener
alone: after the last message it hears).

``both`` (the default): the two nodes in one executor, as ros2/demos' ``lifespan``;
``talker`` or ``listener``: one of them alone (two processes). ``own``: a node that
subscribes to its own topic at its tick 2 (every 0.1 s), destroys its publisher after
publishing at tick 3 and creates it again at tick 4: it hears m2 to m5."""

import contextlib
import sys

import rclpy
from rclpy.duration import Duration
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.qos_event import PublisherEventCallbacks, SubscriptionEventCallbacks
from std_msgs.msg import String

LATCHED = QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     lifespan=Duration(seconds=0.6))  # fmt: skip
WEAK = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)


def say(*words):
    print(*words, flush=True)


class Talker(Node):
    def __init__(self):
        super().__init__("late_talker")
        told = PublisherEventCallbacks(
            incompatible_qos=lambda e: say("TALKER incompatible", e.total_count)
        )
        self.latched = self.create_publisher(String, "latched", LATCHED)
        self.plain = self.create_publisher(String, "plain", 10)
        self.weak = self.create_publisher(String, "weak", WEAK, event_callbacks=told)
        self.n = 0
        self.create_timer(0.5, self.tick)

    def tick(self):
        if self.n == 5:
            say("STOP")
            raise SystemExit
        say("COUNT", self.n, self.latched.get_subscription_count())
        for pub in (self.latched, self.plain, self.weak):
            pub.publish(String(data=f"{pub.topic_name} {self.n}"))
        self.n += 1


class Listener(Node):
    def __init__(self, alone=False):
        super().__init__("late_listener")
        self.alone = alone  # in a process of its own: it stops after the talker's last
        self.timer = self.create_timer(1.25, self.subscribe)
        self.plain = None

    def subscribe(self):
        self.timer.cancel()
        events = SubscriptionEventCallbacks(
            liveliness=lambda e: say("ALIVE", e.alive_count, e.alive_count_change),
            incompatible_qos=lambda e: say("LISTENER incompatible", e.total_count),
        )
        self.create_subscription(String, "latched", self.heard, LATCHED, event_callbacks=events)
        self.plain = self.create_subscription(String, "plain", self.heard, 10)
        self.create_subscription(String, "weak", self.heard, 10, event_callbacks=events)
        say("SUBSCRIBED")

    def heard(self, msg):
        say("HEARD", msg.data)
        if msg.data.startswith("/plain"):
            self.destroy_subscription(self.plain)
        if msg.data == "/latched 4" and self.alone:
            say("STOP")
            raise SystemExit


class Own(Node):
    def __init__(self):
        super().__init__("own")
        self.pub = self.create_publisher(String, "own", 10)
        self.n = 0
        self.create_timer(0.1, self.tick)

    def tick(self):
        self.n += 1
        if self.n == 2:
            self.create_subscription(String, "own", lambda m: say("HEARD", m.data), 10)
        if self.n == 4:
            self.pub = self.create_publisher(String, "own", 10)
        if self.n == 6:
            say("STOP")
            raise SystemExit
        self.pub.publish(String(data=f"m{self.n}"))
        if self.n == 3:
            self.destroy_publisher(self.pub)


def main():
    rclpy.init()
    role = sys.argv[1] if len(sys.argv) > 1 else "both"
    nodes = {"both": [Listener, Talker], "talker": [Talker],
             "listener": [lambda: Listener(alone=True)], "own": [Own]}[role]  # fmt: skip
    executor = SingleThreadedExecutor()
    for make in nodes:
        executor.add_node(make())
    with contextlib.suppress(SystemExit):
        executor.spin()


if __name__ == "__main__":
    main()
