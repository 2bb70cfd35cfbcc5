"""Controller node: a proportional steer towards the goal on /cmd_vel.

Prints one line per command, ``CMD <camera stamp ns> <linear.x> <angular.z>
<latency ns>``, the latency being the system clock now minus the camera's
stamp (what a ROS 2 user measures)."""

import math
import signal
import time

import rclpy
from geometry_msgs.msg import PoseStamped, Twist
from rclpy.node import Node


class Controller(Node):
    def __init__(self):
        super().__init__("controller")
        self.k_linear = self.declare_parameter("k_linear", 0.2).value
        self.k_angular = self.declare_parameter("k_angular", 1.5).value
        self.max_speed = self.declare_parameter("max_speed", 1.0).value
        self.pub = self.create_publisher(Twist, "cmd_vel", 10)
        self.create_subscription(PoseStamped, "goal", self.steer, 10)
        self.sent = 0

    def steer(self, goal: PoseStamped):
        p, q = goal.pose.position, goal.pose.orientation
        yaw = 2.0 * math.atan2(q.z, q.w)
        cmd = Twist()
        cmd.linear.x = min(self.k_linear * math.hypot(p.x, p.y), self.max_speed)
        cmd.angular.z = self.k_angular * yaw
        self.pub.publish(cmd)
        self.sent += 1
        stamp = goal.header.stamp.sec * 1_000_000_000 + goal.header.stamp.nanosec
        print(
            f"CMD {stamp} {cmd.linear.x:.6f} {cmd.angular.z:.6f} {time.time_ns() - stamp}",
            flush=True,
        )


def interrupt_once(signum, frame):
    """Ctrl-C reaches a launched node twice (the terminal's, then ros2 launch's):
    the first ends spin, any later one must not break the clean-up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(args=None):
    signal.signal(signal.SIGINT, interrupt_once)  # before rclpy.init, which chains to it
    rclpy.init(args=args)
    node = Controller()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        print(f"controller: sent {node.sent} commands", flush=True)
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
