"""Prints, as JSON, what a node sees of its timers: a 200 ms timer whose period is
changed to 100 ms at its third call (the usual answer to a rate parameter being set), read
from its own callback and from a 140 ms watcher's; then STOP. Under rclpy in wall-clock
time, under HPRM in logical time."""

import contextlib
import json

import rclpy
from rclpy.node import Node

MS = 1_000_000


class TimerProbe(Node):
    def __init__(self):
        super().__init__("timer_probe")
        self.main = self.create_timer(0.2, self.tick)
        self.watcher = self.create_timer(0.14, self.watch)
        self.start = None
        self.seen = {"before": [self.main.timer_period_ns, self.main.is_canceled()],
                     "calls": [], "watched": []}  # fmt: skip

    def elapsed_ms(self):
        now = self.get_clock().now().nanoseconds
        self.start = now if self.start is None else self.start
        return (now - self.start) / MS

    def tick(self):
        m = self.main
        self.seen["calls"].append({
            "clock_ms": self.elapsed_ms(), "since_ms": m.time_since_last_call() / MS,
            "until_ms": m.time_until_next_call() / MS, "ready": m.is_ready(),
            "period_ms": m.timer_period_ns / MS,
        })  # fmt: skip
        if len(self.seen["calls"]) == 3:
            m.timer_period_ns = 100 * MS
        if len(self.seen["calls"]) == 7:
            m.cancel()
            self.seen["cancelled"] = [m.is_canceled(), m.time_until_next_call()]
            print(json.dumps(self.seen), flush=True)
            print("STOP", flush=True)
            rclpy.shutdown()

    def watch(self):
        if self.start is None:
            return  # before the main timer's first call: no common origin yet
        m = self.main
        self.seen["watched"].append({
            "clock_ms": self.elapsed_ms(), "since_ms": m.time_since_last_call() / MS,
            "until_ms": m.time_until_next_call() / MS,
        })  # fmt: skip


def main():
    rclpy.init()
    node = TimerProbe()
    with contextlib.suppress(Exception):  # rclpy's spin may raise once shut down
        rclpy.spin(node)


if __name__ == "__main__":
    main()
