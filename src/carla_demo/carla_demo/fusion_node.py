"""fusion: the policy's action and the detections of one frame -> the control.

Plain rclpy. Waits for both of a frame (paired by stamp), applies
`carla_demo.fusion_rules.fuse`, publishes the control, and logs each change of reason
("braking: stop sign", "policy") rather than every frame.
"""

from rclpy.node import Node
from sensor_msgs.msg import JointState, PointCloud2

from carla_demo import messages
from carla_demo.frame_sync import FrameSync
from carla_demo.fusion_rules import fuse
from carla_demo.spin import spin_node
from carla_demo.timing import Timing
from carla_demo.world import CAMERA_SHAPE


class Fusion(Node):
    def __init__(self):
        super().__init__("fusion")
        self.pub = self.create_publisher(JointState, "control", 1)
        self.sync = FrameSync(("action", "detections"), self.combine)
        self.create_subscription(
            JointState, "agent/action", lambda m: self.sync.add("action", m), 1
        )
        self.create_subscription(
            PointCloud2, "detector/detections", lambda m: self.sync.add("detections", m), 1
        )
        self.reason = "policy"
        self.timing = Timing("fusion")

    def combine(self, action, detections):
        policy_action = tuple(messages.values(action, messages.CONTROL_NAMES))
        found = messages.detections(detections)
        stamp = messages.stamp_ns(action)
        with self.timing.measure(stamp):
            decision = fuse(policy_action, found, CAMERA_SHAPE)
        controls = (decision.throttle, decision.steer, decision.brake)
        self.pub.publish(messages.values_msg(messages.CONTROL_NAMES, controls, stamp))
        if decision.reason != self.reason:  # after the control is on its way
            self.reason = decision.reason
            self.get_logger().info(
                "policy" if self.reason == "policy" else f"braking: {self.reason}"
            )


def main(args=None):
    spin_node(Fusion, args)


if __name__ == "__main__":
    main()
