"""Two plain rclpy nodes in one executor, one process (qos_pair.py's talker and
listener): the talker publishes best-effort, the listener subscribes reliably, so DDS
never matches them: each prints its incompatible-QoS event and the listener hears
nothing. Under rclpy and ported (one federate) alike."""

import sys
from pathlib import Path

import rclpy
from rclpy.executors import SingleThreadedExecutor

sys.path.insert(0, str(Path(__file__).parent))
from qos_pair import Pair


def main():
    settings = ["reliability:=best_effort", "listener:role:=listener",
                "listener:reliability:=reliable"]  # fmt: skip
    rclpy.init(args=[*sys.argv, "--ros-args", *(a for s in settings for a in ("-p", s))])
    executor = SingleThreadedExecutor()
    talker = Pair()
    listener = Pair(name="listener")
    executor.add_node(talker)
    executor.add_node(listener)
    executor.spin()


if __name__ == "__main__":
    main()
