"""A node that, 0.1 s in, subscribes with a QoS deadline to /latched, which another
federate publishes (late_subscriber.py's talker) and nobody declared: HPRM refuses it
(rclpy would not). It prints the refusal's type, then makes one deadline subscription
per spare timer on topics of its own, which fit only if the refused one left its timer
free, and says STOP."""

import contextlib

import rclpy
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.qos_event import SubscriptionEventCallbacks
from std_msgs.msg import String

QOS = QoSProfile(depth=10, deadline=Duration(seconds=0.5))
SPARE_TIMERS = 4  # hprm_bridge.rclpy.late_entities.SPARE_TIMERS


class Refused(Node):
    def __init__(self):
        super().__init__("late_refused")
        self.timer = self.create_timer(0.1, self.tick)

    def subscribe(self, topic):
        events = SubscriptionEventCallbacks(deadline=print)
        return self.create_subscription(String, topic, print, QOS, event_callbacks=events)

    def tick(self):
        self.timer.cancel()
        try:
            self.subscribe("/latched")
        except Exception as exc:  # HPRM's UnsupportedError: not in rclpy
            print("REFUSED", type(exc).__name__, flush=True)
        made = [self.subscribe(f"/own{k}") for k in range(SPARE_TIMERS)]
        print("SPARES", len(made), flush=True)
        print("STOP", flush=True)
        raise SystemExit


def main():
    rclpy.init()
    with contextlib.suppress(SystemExit):
        rclpy.spin(Refused())


if __name__ == "__main__":
    main()
