"""A plain rclpy lifecycle node that takes itself through its transitions: its
lifecycle publisher and counting timer come from on_configure and go in on_cleanup;
its own (unmanaged) script timer deactivates, cleans up, configures, activates,
tries an activation it no longer has, and shuts down (unless its parameter
``scripted`` is false: then lifecycle_manager.py drives it through its services). With
``manual`` true its main configures and activates it before spin (under rclpy no one
else would; HPRM does that itself as the node joins). Prints each callback and
publish, the same under rclpy and ported."""

import contextlib

import rclpy
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from std_msgs.msg import Int32

OK = TransitionCallbackReturn.SUCCESS


class LifecycleTalker(LifecycleNode):
    def __init__(self):
        super().__init__("lc_talker")
        self.count = 0
        self.step = 0
        if self.declare_parameter("scripted", True).value:
            self.create_timer(0.1, self.script)

    def on_configure(self, state):
        print("on_configure from", state.label, flush=True)
        self.pub = self.create_lifecycle_publisher(Int32, "lc_counts", 10)
        self.timer = self.create_timer(0.03, self.tick)
        return OK

    def on_activate(self, state):
        print("on_activate from", state.label, flush=True)
        return super().on_activate(state)

    def on_deactivate(self, state):
        print("on_deactivate from", state.label, flush=True)
        return super().on_deactivate(state)

    def on_cleanup(self, state):
        print("on_cleanup from", state.label, flush=True)
        self.destroy_timer(self.timer)
        self.destroy_lifecycle_publisher(self.pub)
        return OK

    def on_shutdown(self, state):
        print("on_shutdown from", state.label, flush=True)
        return OK

    def tick(self):
        self.count += 1
        self.pub.publish(Int32(data=self.count))
        print("PUB", "sent" if self.pub.is_activated else "dropped", flush=True)

    def script(self):
        self.step += 1
        steps = {2: "deactivate", 3: "cleanup", 4: "configure", 5: "activate", 6: "activate",
                 7: "shutdown"}  # fmt: skip
        if self.step not in steps:
            return
        try:
            result = getattr(self, "trigger_" + steps[self.step])()
            print("TRIGGER", steps[self.step], result.name, flush=True)
        except RuntimeError as e:  # rcl's RCLError: a transition the state does not have
            print("TRIGGER", steps[self.step], type(e).__name__, flush=True)
        if self.step == 7:
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    node = LifecycleTalker()
    if node.declare_parameter("manual", False).value:
        print("TRIGGER configure", node.trigger_configure().name, flush=True)
        print("TRIGGER activate", node.trigger_activate().name, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        rclpy.spin(node)


if __name__ == "__main__":
    main()
