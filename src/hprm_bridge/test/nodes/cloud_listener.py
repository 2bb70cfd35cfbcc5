"""Reads the clouds of /points with sensor_msgs_py and prints what it found (the first
three points, the first four rings where the cloud has a ring field). No HPRM import."""

import rclpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from sensor_msgs_py import point_cloud2


class CloudListener(Node):
    def __init__(self):
        super().__init__("cloud_listener")
        self.create_subscription(PointCloud2, "points", self.heard, 10)

    def heard(self, cloud):
        xyz = point_cloud2.read_points_numpy(cloud, ["x", "y", "z"], skip_nans=True)
        names = [f.name for f in cloud.fields]
        ring = (
            [p.ring for p in point_cloud2.read_points_list(cloud, ["ring"])]
            if "ring" in names
            else []
        )
        print(f"CLOUD {cloud.header.frame_id} {len(xyz)} points, the first {xyz[:3].tolist()} "
              f"rings {ring[:4]}", flush=True)  # fmt: skip


def main():
    rclpy.init()
    rclpy.spin(CloudListener())


if __name__ == "__main__":
    main()
