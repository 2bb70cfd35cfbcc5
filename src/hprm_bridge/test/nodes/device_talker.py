"""A driver's main, as teleop_twist_keyboard's: it blocks on its device and publishes
what it reads, never spinning its node or sleeping; closing the device, it publishes a
last word and ends. No HPRM import.

Parameters: readings (default 5), wait (seconds the device takes per reading, 0.1)."""

import select

import rclpy
from std_msgs.msg import String


def read_device(wait: float) -> None:
    select.select([], [], [], wait)  # blocked in a read, as on a serial port or stdin


def main():
    rclpy.init()
    node = rclpy.create_node("device_talker")
    readings = node.declare_parameter("readings", 5).value
    wait = node.declare_parameter("wait", 0.1).value
    pub = node.create_publisher(String, "chatter", 10)
    try:
        for n in range(readings):
            read_device(wait)
            pub.publish(String(data=f"reading {n}"))
            print(f"SENT {n}", flush=True)
    finally:
        pub.publish(String(data="device closed"))
        print("CLOSED", flush=True)
        print("STOP", flush=True)


if __name__ == "__main__":
    main()
