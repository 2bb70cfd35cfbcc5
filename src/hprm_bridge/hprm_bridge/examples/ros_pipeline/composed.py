"""The four nodes in one process, spun by one executor (ROS 2's composition): under
HPRM one federate, the image handed from node to node inside it; under rclpy one
process whose nodes still talk through DDS. Parameters as the single node files'
(``--ros-args -p width:=1600 ...`` reaches every node)."""

import signal

import rclpy
from rclpy.executors import SingleThreadedExecutor

from hprm_bridge.examples.ros_pipeline.camera import Camera
from hprm_bridge.examples.ros_pipeline.controller import Controller, interrupt_once
from hprm_bridge.examples.ros_pipeline.detector import Detector
from hprm_bridge.examples.ros_pipeline.planner import Planner


def main(args=None):
    signal.signal(signal.SIGINT, interrupt_once)  # before rclpy.init, which chains to it
    rclpy.init(args=args)
    nodes = [Controller(), Planner(), Detector(), Camera()]  # subscribers first
    executor = SingleThreadedExecutor()
    for node in nodes:
        executor.add_node(node)
    try:
        executor.spin()
    except KeyboardInterrupt:
        pass
    finally:
        print(f"controller: sent {nodes[0].sent} commands", flush=True)
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
