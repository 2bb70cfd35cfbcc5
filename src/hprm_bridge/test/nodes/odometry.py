"""An odometry-style node in the usual idioms (no HPRM import): declare_parameters with a
descriptor, a set-parameters callback, QoS profiles and the sensor-data preset, a
Trigger service, stamps from the clock and their age as a Duration, numpy into a fixed
covariance array, sequences and a MultiArray layout. It publishes to itself and prints
what it hears (POSE lines: the integrated pose, which depends on the clock), then STOP."""

import math

import numpy as np
import rclpy
from geometry_msgs.msg import (
    PoseStamped,
    PoseWithCovarianceStamped,
    Quaternion,
    Twist,
)
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, SetParametersResult
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
    qos_profile_sensor_data,
)
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header, MultiArrayDimension
from std_srvs.srv import Trigger


def yaw_to_quat(yaw):
    q = Quaternion()
    q.z = math.sin(yaw / 2.0)
    q.w = math.cos(yaw / 2.0)
    return q


class Odom(Node):
    def __init__(self):
        super().__init__("odom")
        self.declare_parameters(
            namespace="",
            parameters=[
                ("wheel_base", 0.5),
                (
                    "rate",
                    20.0,
                    ParameterDescriptor(
                        floating_point_range=[FloatingPointRange(from_value=1.0, to_value=100.0)]
                    ),
                ),
                ("frame_id", "odom"),
                ("joints", ["left", "right"]),
            ],
        )
        self.add_on_set_parameters_callback(self.on_params)
        qos = QoSProfile(
            depth=10,
            reliability=ReliabilityPolicy.BEST_EFFORT,
            durability=DurabilityPolicy.VOLATILE,
            history=HistoryPolicy.KEEP_LAST,
        )
        self.pose_pub = self.create_publisher(PoseStamped, "pose", qos)
        self.cov_pub = self.create_publisher(PoseWithCovarianceStamped, "pose_cov", 10)
        self.js_pub = self.create_publisher(JointState, "joint_states", qos_profile_sensor_data)
        self.arr_pub = self.create_publisher(Float64MultiArray, "arr", 10)
        self.cmd_pub = self.create_publisher(Twist, "cmd_vel", 10)
        self.create_subscription(Twist, "cmd_vel", self.on_cmd, 10)
        self.create_subscription(PoseWithCovarianceStamped, "pose_cov", self.on_cov, 10)
        self.create_subscription(JointState, "joint_states", self.on_js, qos_profile_sensor_data)
        self.create_subscription(Float64MultiArray, "arr", self.on_arr, 10)
        self.srv = self.create_service(Trigger, "reset", self.on_reset)
        self.x = self.y = self.th = 0.0
        self.last = None
        self.ticks = 0
        self.create_timer(1.0 / self.get_parameter("rate").value, self.tick)

    def on_params(self, params):
        for p in params:
            print(f"PARAM {p.name} -> {p.value}", flush=True)
        return SetParametersResult(successful=True)

    def on_reset(self, req, resp):
        self.x = self.y = self.th = 0.0
        resp.success = True
        resp.message = "reset"
        return resp

    def tick(self):
        self.ticks += 1
        t = Twist()
        t.linear.x = 1.0
        t.angular.z = 0.5
        self.cmd_pub.publish(t)
        if self.ticks == 5:
            self.set_parameters([rclpy.parameter.Parameter("wheel_base", value=0.7)])
        if self.ticks >= 8:
            print("STOP", flush=True)
            rclpy.shutdown()

    def on_cmd(self, msg):
        now = self.get_clock().now()
        if self.last is not None:
            dt = (now - self.last).nanoseconds * 1e-9
            self.th += msg.angular.z * dt
            self.x += msg.linear.x * math.cos(self.th) * dt
            self.y += msg.linear.x * math.sin(self.th) * dt
        self.last = now
        p = PoseStamped()
        p.header = Header(
            stamp=now.to_msg(),
            frame_id=self.get_parameter("frame_id").get_parameter_value().string_value,
        )
        p.pose.position.x, p.pose.position.y = self.x, self.y
        p.pose.orientation = yaw_to_quat(self.th)
        self.pose_pub.publish(p)
        c = PoseWithCovarianceStamped()
        c.header = p.header
        c.pose.pose = p.pose
        cov = np.zeros(36)
        cov[0] = cov[7] = 0.01
        c.pose.covariance = cov
        self.cov_pub.publish(c)
        js = JointState()
        js.header.stamp = now.to_msg()
        js.name = list(self.get_parameter("joints").value)
        js.position = [self.x, self.y]
        js.velocity = [1.0, 2.0]
        self.js_pub.publish(js)
        a = Float64MultiArray()
        a.layout.dim.append(MultiArrayDimension(label="xy", size=2, stride=2))
        a.data = [self.x, self.y]
        self.arr_pub.publish(a)

    def on_cov(self, msg):
        stamp = Time.from_msg(msg.header.stamp)
        age = self.get_clock().now() - stamp
        print(
            f"COV {msg.header.frame_id} {msg.pose.covariance[0]:.3f} "
            f"{len(msg.pose.covariance)} age_ok {age <= Duration(seconds=1.0)}",
            flush=True,
        )

    def on_js(self, msg):
        print(f"JS {list(msg.name)} {len(msg.position)} {list(msg.velocity)}", flush=True)
        print(f"POSE {[round(v, 4) for v in msg.position]}", flush=True)

    def on_arr(self, msg):
        print(f"ARR {msg.layout.dim[0].label} {msg.layout.dim[0].size} {len(msg.data)}", flush=True)


def main():
    rclpy.init()
    node = Odom()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, Exception):  # rclpy's spin may raise once shut down
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
