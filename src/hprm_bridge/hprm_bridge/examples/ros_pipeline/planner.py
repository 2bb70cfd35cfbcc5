"""Planner node: a goal pose towards the detection, in the robot's frame."""

import math
import signal

import rclpy
from geometry_msgs.msg import PointStamped, PoseStamped
from rclpy.node import Node


class Planner(Node):
    def __init__(self):
        super().__init__("planner")
        self.image_width = self.declare_parameter("image_width", 640).value
        self.fov = math.radians(self.declare_parameter("fov_deg", 90.0).value)
        self.pub = self.create_publisher(PoseStamped, "goal", 10)
        self.create_subscription(PointStamped, "detections", self.plan, 10)
        self.seen = 0

    def plan(self, det: PointStamped):
        goal = PoseStamped()
        goal.header = det.header
        goal.header.frame_id = "base_link"
        if det.point.z > 0.0:
            half = self.image_width / 2.0
            bearing = -(det.point.x - half) / half * self.fov / 2.0
            distance = 2.0 + 1000.0 / det.point.z  # a bigger square is nearer
            goal.pose.position.x = distance * math.cos(bearing)
            goal.pose.position.y = distance * math.sin(bearing)
            goal.pose.orientation.z = math.sin(bearing / 2.0)
            goal.pose.orientation.w = math.cos(bearing / 2.0)
        else:
            goal.pose.orientation.w = 1.0  # nothing seen: stay
        self.pub.publish(goal)
        self.seen += 1


def interrupt_once(signum, frame):
    """Ctrl-C reaches a launched node twice (the terminal's, then ros2 launch's):
    the first ends spin, any later one must not break the clean-up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(args=None):
    signal.signal(signal.SIGINT, interrupt_once)  # before rclpy.init, which chains to it
    rclpy.init(args=args)
    node = Planner()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        print(f"planner: received {node.seen} detections", flush=True)
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
