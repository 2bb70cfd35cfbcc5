"""A main loop of ``executor.spin_once()`` whose node stops from a guard condition's
callback, triggered by a timer (the shape of ros2/examples' trigger_guard_condition;
no HPRM import). Prints each step and how many spin_once calls it took."""

import rclpy
from rclpy.executors import SingleThreadedExecutor


def main():
    rclpy.init()
    node = rclpy.create_node("guard_stopper")
    executor = SingleThreadedExecutor()
    executor.add_node(node)

    def stop():
        print("GUARD: shutting down", flush=True)
        rclpy.shutdown()

    guard = node.create_guard_condition(stop)

    def tick():
        print("TIMER: triggering the guard", flush=True)
        guard.trigger()

    node.create_timer(0.2, tick)
    spins = 0
    while rclpy.ok():
        executor.spin_once()
        spins += 1
        print(f"SPUN {spins}", flush=True)
    print(f"END after {spins} spin_once", flush=True)
    print("STOP", flush=True)


if __name__ == "__main__":
    main()
