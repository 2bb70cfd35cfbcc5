"""A node made and stepped with spin_once by a thread of the node file's own, while the
main only waits for that thread (ros2/demos' topic_monitor: its main keeps the display).
No HPRM import."""

import threading
import time

import rclpy
from std_msgs.msg import String


def step(heard):
    node = rclpy.create_node("thread_stepper")
    node.create_subscription(String, "chatter", lambda m: heard.append(m.data), 10)
    while rclpy.ok() and len(heard) < 6:
        rclpy.spin_once(node, timeout_sec=0.05)
    print(f"HEARD {heard[:6]}", flush=True)


def main():
    rclpy.init()
    heard = []
    stepper = threading.Thread(target=step, args=(heard,))
    stepper.start()
    while stepper.is_alive():
        time.sleep(0.05)
    print("STOP", flush=True)


if __name__ == "__main__":
    main()
