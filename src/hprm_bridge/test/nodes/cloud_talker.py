"""Publishes three small point clouds built with sensor_msgs_py (a lidar driver's way),
then stops the federation. No HPRM import."""

import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2, PointField
from sensor_msgs_py import point_cloud2
from std_msgs.msg import Header

FIELDS = [
    PointField(name="x", offset=0, datatype=PointField.FLOAT32, count=1),
    PointField(name="y", offset=4, datatype=PointField.FLOAT32, count=1),
    PointField(name="z", offset=8, datatype=PointField.FLOAT32, count=1),
    PointField(name="ring", offset=12, datatype=PointField.UINT16, count=1),
]


class CloudTalker(Node):
    def __init__(self):
        super().__init__("cloud_talker")
        self.pub = self.create_publisher(PointCloud2, "points", 10)
        self.n = 0
        self.create_timer(0.1, self.scan)

    def scan(self):
        self.n += 1
        points = np.zeros(4, dtype=point_cloud2.dtype_from_fields(FIELDS))
        points["x"] = np.arange(4) * self.n
        points["z"] = [0.5, np.nan, -0.5, 1.0]
        points["ring"] = [0, 1, 2, 3]
        self.pub.publish(point_cloud2.create_cloud(Header(frame_id="lidar"), FIELDS, points))
        if self.n == 3:
            raise SystemExit


def main():
    rclpy.init()
    rclpy.spin(CloudTalker())


if __name__ == "__main__":
    main()
