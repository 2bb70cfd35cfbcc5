"""A plain rclpy lifecycle node whose on_configure subscribes to /beat with a 100 ms
QoS deadline (on_cleanup destroys that subscription). Its unmanaged timers: one
publishes /beat every 50 ms at its ticks 1-3 and 15-17; the other, every 100 ms,
deactivates it at 0.5 s, cleans it up at 0.6 s, configures it again at 0.7 s (a new
subscription with its deadline, made after the start), activates it at 0.8 s and says
STOP at 1.1 s. Its main configures and activates it before spin. Prints each
transition, message and miss, the same under rclpy and ported."""

import contextlib

import rclpy
from rclpy.duration import Duration
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.qos import QoSProfile
from rclpy.qos_event import SubscriptionEventCallbacks
from std_msgs.msg import Int32

OK = TransitionCallbackReturn.SUCCESS
QOS = QoSProfile(depth=10, deadline=Duration(seconds=0.1))
SCRIPT = {5: "deactivate", 6: "cleanup", 7: "configure", 8: "activate"}


def say(*words):
    print(*words, flush=True)


class LifecycleDeadline(LifecycleNode):
    def __init__(self):
        super().__init__("lc_deadline")
        self.pub = self.create_publisher(Int32, "beat", QOS)
        self.beats = self.steps = 0
        self.create_timer(0.05, self.beat)
        self.create_timer(0.1, self.script)

    def on_configure(self, state):
        say("on_configure from", state.label)
        events = SubscriptionEventCallbacks(deadline=lambda e: say("MISSED", e.total_count))
        self.sub = self.create_subscription(Int32, "beat", lambda m: say("HEARD", m.data), QOS,
                                            event_callbacks=events)  # fmt: skip
        return OK

    def on_activate(self, state):
        say("on_activate from", state.label)
        return super().on_activate(state)

    def on_deactivate(self, state):
        say("on_deactivate from", state.label)
        return super().on_deactivate(state)

    def on_cleanup(self, state):
        say("on_cleanup from", state.label)
        self.destroy_subscription(self.sub)
        return OK

    def beat(self):
        self.beats += 1
        if self.beats <= 3 or 15 <= self.beats <= 17:
            self.pub.publish(Int32(data=self.beats))

    def script(self):
        self.steps += 1
        if self.steps in SCRIPT:
            getattr(self, f"trigger_{SCRIPT[self.steps]}")()
        elif self.steps == 11:
            say("STOP")
            raise SystemExit


def main():
    rclpy.init()
    node = LifecycleDeadline()
    node.trigger_configure()
    node.trigger_activate()
    with contextlib.suppress(SystemExit, KeyboardInterrupt):
        rclpy.spin(node)


if __name__ == "__main__":
    main()
