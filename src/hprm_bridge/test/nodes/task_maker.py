"""Executor tasks (no HPRM import): a coroutine made a task before the spin waits for a
future the second tick completes; the first tick makes a task of a plain function
with arguments, whose result the second tick reads. Prints each step with its time.

Parameter: fail (the first tick's task raises instead: it ends the spin)."""

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.task import Future


class TaskMaker(Node):
    def __init__(self):
        super().__init__("task_maker")
        self.fail = self.declare_parameter("fail", False).value
        self.ticks = 0
        self.waited = Future()
        self.create_timer(0.1, self.tick)

    def now(self):
        return self.get_clock().now().nanoseconds

    async def first(self):
        print(f"TASK first at {self.now()}", flush=True)
        value = await self.waited
        print(f"TASK first got {value} at {self.now()}", flush=True)
        return value * 2

    def work(self, n, *, scale):
        print(f"TASK work {n} at {self.now()}", flush=True)
        if self.fail:
            raise ValueError(f"work {n} failed")
        return n * scale

    def tick(self):
        self.ticks += 1
        print(f"TICK {self.ticks} at {self.now()}", flush=True)
        if self.ticks == 1:
            self.made = self.executor.create_task(self.work, 1, scale=10)
            print(f"MADE done {self.made.done()}", flush=True)
        elif self.ticks == 2:
            print(f"RESULT work {self.made.result()}", flush=True)
            self.waited.set_result(21)
        elif self.ticks == 3:
            print(f"RESULT first {self.first_task.result()}", flush=True)
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    executor = SingleThreadedExecutor()
    node = TaskMaker()
    executor.add_node(node)
    node.first_task = executor.create_task(node.first())
    executor.spin()


if __name__ == "__main__":
    main()
