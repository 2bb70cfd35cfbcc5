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


def main(args=None):
    rclpy.init(args=args)
    node = Planner()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        # ros2 launch passes Ctrl-C on as a second SIGINT: let the clean-up below finish
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    finally:
        print(f"planner: received {node.seen} detections", flush=True)
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
