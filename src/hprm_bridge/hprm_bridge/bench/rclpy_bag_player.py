"""A plain rclpy bag player, for ``hprm bench replay``'s ROS 2 rows.

What ``ros2 bag play --rate R`` does, for the Humble build used here, which has no rosbag2:
each message of the bag is published (as its recorded CDR bytes, no re-serialization) at
``start + (timestamp - first timestamp) / R`` by the wall clock, on a publisher of the
bag's type; playing starts once every topic the nodes subscribe to has a subscriber (the
discovery wait ``ros2 bag play`` users add by hand). A plain ROS 2 node file: it imports
rclpy and runs under a sourced Humble only.

    python rclpy_bag_player.py BAG --rate 1.0 --wait-for /camera/image_raw
"""

import argparse
import importlib
import time

import rclpy
from rclpy.node import Node
from rosbags.rosbag2 import Reader


def _message_class(ros_type):
    package, _, name = ros_type.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bag")
    p.add_argument("--rate", type=float, default=1.0)
    p.add_argument("--wait-for", action="append", default=[], metavar="TOPIC")
    args = p.parse_args()
    rclpy.init()
    node = Node("rosbag2_player")
    with Reader(args.bag) as reader:
        pubs = {c.topic: node.create_publisher(_message_class(c.msgtype), c.topic, 10)
                for c in reader.connections}  # fmt: skip
        deadline = time.monotonic() + 30
        while any(pubs[t].get_subscription_count() == 0 for t in args.wait_for):
            if time.monotonic() > deadline:
                raise SystemExit(f"no subscriber on {args.wait_for} after 30 s")
            time.sleep(0.05)
        time.sleep(0.5)  # matched is not yet ready to receive: let the readers settle
        start, first, played = time.monotonic(), None, 0
        for connection, stamp, raw in reader.messages():
            first = stamp if first is None else first
            delay = start + (stamp - first) / 1e9 / args.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            pubs[connection.topic].publish(bytes(raw))
            played += 1
    print(f"PLAYED {played} {time.monotonic() - start:.6f}", flush=True)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
