"""Guard conditions (no HPRM import): one triggered before the spin, then twice in a
timer's first tick; another triggered by a worker thread the second tick starts; the
third tick destroys the first and triggers it again. Prints each call with its time.

Parameter: threaded (spin with a MultiThreadedExecutor: callbacks run as tasks)."""

import threading

import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node


class GuardWaker(Node):
    def __init__(self):
        super().__init__("guard_waker")
        self.calls = 0
        self.guard = self.create_guard_condition(self.called)
        self.from_thread = self.create_guard_condition(
            lambda: print(f"THREAD GUARD at {self.now()}", flush=True)
        )
        self.ticks = 0
        self.create_timer(0.1, self.tick)

    def now(self):
        return self.get_clock().now().nanoseconds

    def called(self):
        self.calls += 1
        print(f"GUARD call {self.calls} at {self.now()}", flush=True)

    def tick(self):
        self.ticks += 1
        print(f"TICK {self.ticks} at {self.now()}", flush=True)
        if self.ticks == 1:
            self.guard.trigger()
            self.guard.trigger()  # a flag: one call
        elif self.ticks == 2:
            threading.Thread(target=self.from_thread.trigger).start()
        elif self.ticks == 3:
            print(f"DESTROYED {self.destroy_guard_condition(self.guard)}", flush=True)
            try:
                self.guard.trigger()
            except Exception as exc:
                print(f"TRIGGER AFTER DESTROY {type(exc).__name__}", flush=True)
            print(f"GUARDS {len(list(self.guards))}", flush=True)
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    node = GuardWaker()
    node.guard.trigger()  # before the spin: called at the first wait
    threaded = node.declare_parameter("threaded", False).value
    rclpy.spin(node, MultiThreadedExecutor() if threaded else None)


if __name__ == "__main__":
    main()
