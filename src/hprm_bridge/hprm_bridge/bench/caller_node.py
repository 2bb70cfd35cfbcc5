"""An rclpy client for ``hprm bench services``: calls /bench/add ``calls`` times,
one every ``1/rate`` s from a timer, and prints each call's round trip by the
system's monotonic clock (``call_async`` to its done-callback) as ``RTT n ns``;
exits after the last answer. No HPRM import: the same file runs under real rclpy
(where calls start once the server is matched) and ported."""

import contextlib
import time

import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.node import Node


class Caller(Node):
    def __init__(self):
        super().__init__("caller")
        self.calls = self.declare_parameter("calls", 100).value
        rate = self.declare_parameter("rate", 50.0).value
        self.client = self.create_client(AddTwoInts, "bench/add")
        self.sent = self.answered = 0
        self.timer = self.create_timer(1.0 / rate, self.call)

    def call(self):
        if self.sent == self.calls:
            self.timer.cancel()
            return
        if not self.client.service_is_ready():
            return  # rclpy would drop a call no server has matched yet
        self.sent += 1
        n, start = self.sent, time.monotonic_ns()
        future = self.client.call_async(AddTwoInts.Request(a=n, b=n))
        future.add_done_callback(lambda f: self.done(f, n, start))

    def done(self, future, n, start):
        took = time.monotonic_ns() - start
        if future.result().sum != 2 * n:
            raise RuntimeError(f"call {n}: {future.result().sum} != {2 * n}")
        print(f"RTT {n} {took}", flush=True)
        self.answered += 1
        if self.answered == self.calls:
            raise SystemExit(0)


def main():
    rclpy.init()
    with contextlib.suppress(KeyboardInterrupt, SystemExit):
        rclpy.spin(Caller())


if __name__ == "__main__":
    main()
