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
        with self.timing.measure(messages.stamp_ns(action)):
            self._combine(action, detections)

    def _combine(self, action, detections):
        decision = fuse(
            tuple(messages.values(action, messages.CONTROL_NAMES).tolist()),
            messages.detections(detections),
            CAMERA_SHAPE,
        )
        if decision.reason != self.reason:
            self.reason = decision.reason
            self.get_logger().info(
                "policy" if self.reason == "policy" else f"braking: {self.reason}"
            )
        controls = (decision.throttle, decision.steer, decision.brake)
        stamp = messages.stamp_ns(action)
        self.pub.publish(messages.values_msg(messages.CONTROL_NAMES, controls, stamp))


def main(args=None):
    spin_node(Fusion, args)


if __name__ == "__main__":
    main()
