"""A node that publishes in its constructor (a map, a first state), has a timer, and is
spun by its main after a load of ``load`` seconds (a model, say) spent blocked, not
sleeping; with ``step``, its main steps it with three ``spin_once`` instead.
No HPRM import.

Parameters: load (default 0.0), step (default false)."""

import contextlib
import select

import rclpy
from rclpy.node import Node
from std_msgs.msg import String


class ConstructorTalker(Node):
    def __init__(self):
        super().__init__("constructor_talker")
        self.pub = self.create_publisher(String, "chatter", 10)
        self.pub.publish(String(data="from the constructor"))
        self.ticks = 0
        self.create_timer(0.1, self.tick)

    def tick(self):
        self.ticks += 1
        self.pub.publish(String(data=f"tick {self.ticks}"))


def main():
    rclpy.init()
    node = ConstructorTalker()
    select.select([], [], [], node.declare_parameter("load", 0.0).value)
    if node.declare_parameter("step", False).value:
        for _ in range(3):
            rclpy.spin_once(node, timeout_sec=0.05)
        print(f"STEPPED to tick {node.ticks}", flush=True)
        return
    with contextlib.suppress(KeyboardInterrupt):
        rclpy.spin(node)
    print("SPIN RETURNED", flush=True)


if __name__ == "__main__":
    main()
