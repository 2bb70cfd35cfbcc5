"""agent: the Roach PPO policy, bird's-eye view + measurements -> throttle, steer, brake.

Plain rclpy. Parameters: ``weights`` (a carla-roach checkpoint; empty: seeded random weights,
with an error-level log line saying so), ``seed``, ``transport`` (the sim's: ``bytes`` unwraps
each bird's-eye view from its ``byte[]``).
"""

import warnings

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState

from carla_demo import messages
from carla_demo.frame_sync import FrameSync
from carla_demo.policy import BIRDVIEW_SHAPE, RoachPolicy
from carla_demo.shm_transport import PREFIX, ShmReader
from carla_demo.spin import spin_node
from carla_demo.timing import Timing
from carla_demo.weights import RandomWeightsWarning
from carla_demo.world import MEASUREMENT_NAMES


class Agent(Node):
    def __init__(self):
        super().__init__("agent")
        weights = self.declare_parameter("weights", "").value
        seed = self.declare_parameter("seed", 0).value
        transport = self.declare_parameter("transport", "topic").value
        image_type = messages.image_type(transport)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RandomWeightsWarning)
            self.policy = RoachPolicy(weights or None, seed=seed)
        for w in caught:
            self.get_logger().error(str(w.message))
        self.shm = ShmReader()
        self.timing = Timing("agent")
        self.pub = self.create_publisher(JointState, "agent/action", 1)
        self.sync = FrameSync(("birdview", "measurements"), self.act)
        birdview = messages.image_callback(transport, lambda m: self.sync.add("birdview", m))
        self.create_subscription(image_type, "birdview", birdview, 1)
        self.create_subscription(
            JointState, "measurements", lambda m: self.sync.add("measurements", m), 1
        )

    def act(self, birdview, measurements):
        if birdview.header.frame_id.startswith(PREFIX):
            masks = self.shm.read(birdview.header.frame_id, BIRDVIEW_SHAPE)
        else:
            masks = messages.image_array(birdview, 1).reshape(BIRDVIEW_SHAPE)
        values = np.array(messages.values(measurements, MEASUREMENT_NAMES))
        stamp = messages.stamp_ns(birdview)
        with self.timing.measure(stamp):
            action = self.policy(masks, values)
        self.pub.publish(messages.values_msg(messages.CONTROL_NAMES, action, stamp))


def main(args=None):
    spin_node(Agent, args)


if __name__ == "__main__":
    main()
