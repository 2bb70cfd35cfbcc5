"""A plain rclpy node whose timers are made in a callback, at its first tick (0.1 s):
``a`` every 40 ms, ``b`` every 50 ms (at its second call it cancels ``a``), and ``c``,
a one-shot of 10 ms that cancels itself and resets ``b`` (running: its next call one
period from then, as rcl's reset). At its third tick (0.3 s) the node resets ``a``;
at its fourth it says STOP. Each call prints its name and the time since the start (its
first tick less 100 ms); the wall clock sets those under rclpy."""

import contextlib

import rclpy
from rclpy.node import Node


class LateTimers(Node):
    def __init__(self):
        super().__init__("late_timers")
        self.ticks = 0
        self.first = None
        self.b_calls = 0
        self.create_timer(0.1, self.tick)

    def ms(self):
        return 100 + (self.get_clock().now() - self.first).nanoseconds // 1_000_000

    def say(self, name):
        print(f"FIRE {name} at {self.ms()}", flush=True)

    def tick(self):
        self.ticks += 1
        if self.ticks == 1:
            self.first = self.get_clock().now()
            self.a = self.create_timer(0.04, lambda: self.say("a"))
            self.b = self.create_timer(0.05, self.on_b)
            self.c = self.create_timer(0.01, self.on_c)
        elif self.ticks == 3:
            self.a.reset()
        elif self.ticks == 4:
            print("STOP", flush=True)
            raise SystemExit

    def on_b(self):
        self.b_calls += 1
        self.say("b")
        if self.b_calls == 2:
            self.a.cancel()

    def on_c(self):
        self.say("c")
        self.c.cancel()
        self.b.reset()


def main():
    rclpy.init()
    with contextlib.suppress(SystemExit, KeyboardInterrupt):
        rclpy.spin(LateTimers())


if __name__ == "__main__":
    main()
