"""sim: steps the world in lockstep with the fused control and measures each frame's latency.

The loop of the HPRM paper's CARLA experiment: publish the observation of frame i, wait for
the control of frame i, apply it, step the world (0.04 s of simulated time, 25 Hz), publish
frame i+1. The figure is the paper's ``carla[i+1].start - carla[i].end``: from the moment
the observation of frame i is ready (before its messages are built and published) to the
moment the control of frame i reaches this node, i.e. everything the middleware and the
models add, nothing of the world's own step.

Plain rclpy: run it unchanged under ROS 2 or under HPRM. Where a publisher lends shared
memory (HPRM's ``borrow_loaned_array``; rclpy has no loans), the world renders the camera
and bird's-eye view into it and the messages cross without a copy; elsewhere it renders into
an ``array.array`` that the messages take as it is (`world.byte_array`).

Parameters: ``frames`` (measured, default 400), ``warmup`` (100, not measured), ``seed``,
``carla_host``/``carla_port`` (empty: the embedded world), ``transport`` (``topic``,
``shm`` for the ros2-shm baseline, ``bytes`` for the paper's ros2 baseline: each image
message serialized into a ``byte[]``, `messages.bytes_msg`), ``report`` (a JSON file to
write the per-frame figures to), ``resend_period`` (seconds between re-sends of the first
frame while no control came back: ROS 2 discovery may not have matched every subscriber yet).
"""

import json
import time

from rclpy.node import Node
from sensor_msgs.msg import JointState

from carla_demo import messages
from carla_demo.shm_transport import ShmWriter
from carla_demo.spin import spin_node
from carla_demo.world import MEASUREMENT_NAMES, Control, byte_array, open_world


class Sim(Node):
    def __init__(self):
        super().__init__("sim")
        self.frames = self.declare_parameter("frames", 400).value
        self.warmup = self.declare_parameter("warmup", 100).value
        seed = self.declare_parameter("seed", 0).value
        host = self.declare_parameter("carla_host", "").value
        port = self.declare_parameter("carla_port", 2000).value
        transport = self.declare_parameter("transport", "topic").value
        self.report = self.declare_parameter("report", "").value
        resend = self.declare_parameter("resend_period", 1.0).value
        if self.frames < 1 or self.warmup < 0:
            raise ValueError(f"frames must be >= 1 and warmup >= 0, got {self.frames} and "
                             f"{self.warmup}")  # fmt: skip
        image_type = messages.image_type(transport)
        self.shm = ShmWriter() if transport == "shm" else None
        self.wrap = messages.bytes_msg if transport == "bytes" else None
        self.camera_pub = self.create_publisher(image_type, "camera/image", 1)
        # a loan holds an Image's pixels: only where the topics carry Images with pixels
        loan = getattr(self.camera_pub, "borrow_loaned_array", None)
        loan = loan if transport == "topic" else None
        self.loaned = loan is not None
        self.world = open_world(
            carla_host=host or None, carla_port=port, seed=seed, alloc=loan or byte_array
        )
        self.birdview_pub = self.create_publisher(image_type, "birdview", 1)
        self.measurements_pub = self.create_publisher(JointState, "measurements", 1)
        self.create_subscription(JointState, "control", self.on_control, 1)
        self.obs = None
        self.sent_at = 0
        self.rows = []
        self.resend_timer = self.create_timer(resend, self.send_first)

    def send_first(self):
        """Frame 0, re-sent until its control comes back (then this timer is cancelled)."""
        if self.obs is None:
            self.obs = self.world.reset()
            self.get_logger().info(f"world ready, {self.warmup} warm-up + {self.frames} frames")
        self.publish(self.obs)

    def publish(self, obs):
        # The frame's clock starts here, before its messages are built and published: as
        # the paper's carla[i].end, it counts what sending costs (a copy of the pixels into
        # the message, serialization), which is the middleware's share.
        self.sent_at = time.monotonic_ns()
        ns = obs.sim_time_ns
        if self.shm is None:
            camera = messages.image_msg(
                obs.camera, obs.camera.shape, "rgb8", ns, "camera", self.loaned
            )
            bev_pixels = obs.birdview
        else:
            camera = messages.image_msg(
                None, obs.camera.shape, "rgb8", ns, self.shm.write("camera", obs.camera)
            )
            bev_pixels = None
        bev_shape = (obs.birdview.shape[0] * obs.birdview.shape[1], obs.birdview.shape[2])
        bev_id = "birdview" if self.shm is None else self.shm.write("birdview", obs.birdview)
        birdview = messages.image_msg(bev_pixels, bev_shape, "mono8", ns, bev_id, self.loaned)
        if self.wrap is not None:
            camera, birdview = self.wrap(camera), self.wrap(birdview)
        self.camera_pub.publish(camera)
        self.birdview_pub.publish(birdview)
        self.measurements_pub.publish(messages.values_msg(MEASUREMENT_NAMES, obs.measurements, ns))

    def on_control(self, msg):
        arrived = time.monotonic_ns()
        if self.obs is None or messages.stamp_ns(msg) != self.obs.sim_time_ns:
            return  # the control of an earlier copy of frame 0
        self.resend_timer.cancel()
        throttle, steer, brake = messages.values(msg, messages.CONTROL_NAMES)
        self.rows.append(
            {
                "frame": self.obs.frame,
                "stamp_ns": self.obs.sim_time_ns,
                "sent_ns": self.sent_at,
                "latency_ns": arrived - self.sent_at,
                "control": [throttle, steer, brake],
            }
        )
        if len(self.rows) == self.warmup + self.frames:
            self.finish()
            return
        self.obs = self.world.step(Control(throttle, steer, brake))
        self.publish(self.obs)

    def finish(self):
        measured = self.rows[self.warmup :]
        median = sorted(r["latency_ns"] for r in measured)[len(measured) // 2] / 1e6
        self.get_logger().info(f"done: {len(measured)} frames, median latency {median:.2f} ms")
        if self.report:
            with open(self.report, "w") as f:
                json.dump({"warmup": self.warmup, "frames": self.rows}, f)
        # The way out of spin from a callback (rclpy.shutdown() here deadlocks Humble's
        # executor); under HPRM it stops the whole federation.
        raise SystemExit(0)

    def destroy_node(self):
        self.world.close()
        if self.shm is not None:
            self.shm.close()
        return super().destroy_node()


def main(args=None):
    spin_node(Sim, args)


if __name__ == "__main__":
    main()
