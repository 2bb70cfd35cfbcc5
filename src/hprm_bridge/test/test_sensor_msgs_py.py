"""sensor_msgs_py.point_cloud2 in a ported node (hprm_bridge.sensor_msgs_py): Humble's
names, signatures and results (an organized cloud's (width, height) included), and the
federation's own messages; a lidar-like talker and listener use it unchanged."""

import re
from pathlib import Path

import numpy as np
import pytest

from hprm_bridge import messages
from hprm_bridge.sensor_msgs_py import point_cloud2

NODES = Path(__file__).parent / "nodes"
Header = messages.message_class("std_msgs/msg/Header")
PointField = messages.message_class("sensor_msgs/msg/PointField")
PointCloud2 = messages.message_class("sensor_msgs/msg/PointCloud2")
XYZ = np.array([[1.0, 2.0, 3.0], [4.0, np.nan, 6.0], [7.0, 8.0, 9.0]], dtype=np.float32)


def test_a_cloud_built_is_the_federations_message_and_reads_back():
    cloud = point_cloud2.create_cloud_xyz32(Header(frame_id="lidar"), XYZ)
    assert isinstance(cloud, PointCloud2) and isinstance(cloud.fields[0], PointField)
    assert (cloud.height, cloud.width, cloud.point_step, cloud.row_step) == (1, 3, 12, 36)
    assert bytes(cloud.data) == XYZ.tobytes() and not cloud.is_dense
    assert np.array_equal(point_cloud2.read_points_numpy(cloud), XYZ, equal_nan=True)
    assert point_cloud2.read_points_numpy(cloud, skip_nans=True).tolist() == [
        [1.0, 2.0, 3.0], [7.0, 8.0, 9.0]]  # fmt: skip
    assert point_cloud2.read_points_numpy(cloud, ["z"], uvs=[2]).tolist() == [[9.0]]
    first = point_cloud2.read_points_list(cloud)[0]
    assert (first.x, first.y, first.z) == (1.0, 2.0, 3.0) and first._fields == ("x", "y", "z")


def test_an_organized_cloud_is_width_by_height_as_in_humble():
    grid = np.arange(18, dtype=np.float32).reshape(2, 3, 3)  # 2 wide, 3 high, xyz
    cloud = point_cloud2.create_cloud_xyz32(Header(), grid)
    assert (cloud.width, cloud.height, cloud.row_step) == (2, 3, 24)
    back = point_cloud2.read_points(cloud, reshape_organized_cloud=True)
    assert back.shape == (2, 3) and back["z"].tolist() == grid[..., 2].tolist()
    assert point_cloud2.read_points(cloud).shape == (6,)  # unorganized unless asked


def test_mixed_field_types_read_structured_and_refuse_a_plain_array():
    fields = [PointField(name="x", offset=0, datatype=PointField.FLOAT32, count=1),
              PointField(name="ring", offset=4, datatype=PointField.UINT16, count=1)]  # fmt: skip
    dtype = point_cloud2.dtype_from_fields(fields)
    assert dtype.names == ("x", "ring") and dtype["ring"] == np.uint16
    cloud = point_cloud2.create_cloud(Header(), fields, [(1.5, 7), (2.5, 8)])
    assert point_cloud2.read_points(cloud)["ring"].tolist() == [7, 8]
    with pytest.raises(ValueError, match="use read_points"):
        point_cloud2.read_points_numpy(cloud)
    with pytest.raises(ValueError, match="not in the fields"):
        point_cloud2.read_points(cloud, ["intensity"])


def test_a_structured_array_of_other_fields_is_refused():
    wrong = np.zeros(2, dtype=[("a", np.float64)])
    with pytest.raises(ValueError, match="do not match"):
        point_cloud2.create_cloud_xyz32(Header(), wrong)


def test_ported_nodes_import_sensor_msgs_py_and_pass_clouds(ported_run):
    out = ported_run(NODES / "cloud_talker.py", NODES / "cloud_listener.py")
    clouds = re.findall(r"^\[cloud_listener\] CLOUD (.*)$", out, re.M)
    assert clouds == [
        f"lidar 3 points, the first [[0.0, 0.0, 0.5], [{2.0 * n}, 0.0, -0.5], "
        f"[{3.0 * n}, 0.0, 1.0]] rings [0, 1, 2, 3]"
        for n in (1, 2, 3)
    ], out
