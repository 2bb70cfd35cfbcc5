"""``sensor_msgs_py.point_cloud2``: PointCloud2 messages to and from numpy arrays.

Lidar and depth nodes read their clouds with ``read_points`` and build them with
``create_cloud`` (ros2/examples' ``pointcloud_publisher``). The conversions are the
PyPI package ``pointcloud2``'s (sensor_msgs_py's algorithm for code without ROS 2);
this module gives them sensor_msgs_py's names and signatures, and builds the
federation's own ``sensor_msgs/msg/PointCloud2`` and ``PointField`` messages, so a
node file runs unchanged under ``ros2 run`` and ported.

Example (a node's callback, as under rclpy)::

    from sensor_msgs_py import point_cloud2

    xyz = point_cloud2.read_points_numpy(cloud, field_names=["x", "y", "z"], skip_nans=True)
    cloud = point_cloud2.create_cloud_xyz32(header, xyz[xyz[:, 2] > 0.1])
"""

from __future__ import annotations

import array
import collections
from collections.abc import Iterable
from typing import Any

import numpy as np
import pointcloud2
from numpy.lib.recfunctions import structured_to_unstructured

from hprm_bridge import messages

__all__ = [
    "create_cloud",
    "create_cloud_xyz32",
    "dtype_from_fields",
    "read_points",
    "read_points_list",
    "read_points_numpy",
]


def dtype_from_fields(fields: Iterable[Any], point_step: int | None = None) -> np.dtype:
    """The structured dtype of a point, from the cloud's ``PointField`` list."""
    return pointcloud2.dtype_from_fields(list(fields), point_step=point_step)


def read_points(
    cloud: Any,
    field_names: list[str] | None = None,
    skip_nans: bool = False,
    uvs: Iterable[int] | np.ndarray | None = None,
    reshape_organized_cloud: bool = False,
) -> np.ndarray:
    """The cloud's points as a structured array; with ``reshape_organized_cloud``, an
    organized cloud's as a 2-D one of shape ``(width, height)``, Humble's (later
    distributions give ``(height, width)``)."""
    points = pointcloud2.read_points(
        cloud,
        list(field_names) if field_names is not None else None,
        skip_nans=skip_nans,
        uvs=uvs,
    )
    if reshape_organized_cloud and cloud.height > 1:
        points = points.reshape(cloud.width, cloud.height)
    return points


def read_points_numpy(
    cloud: Any,
    field_names: list[str] | None = None,
    skip_nans: bool = False,
    uvs: Iterable[int] | np.ndarray | None = None,
    reshape_organized_cloud: bool = False,
) -> np.ndarray:
    """The cloud's points as a plain 2-D array, a column per field; every field read
    must have one datatype (else use :func:`read_points`)."""
    points = read_points(cloud, field_names, skip_nans, uvs, reshape_organized_cloud)
    kinds = {points.dtype.fields[name][0] for name in points.dtype.names or ()}
    if len(kinds) > 1:
        found = ", ".join(sorted(map(str, kinds)))
        raise ValueError(
            f"read_points_numpy: the fields read have several datatypes ({found}); use "
            "read_points for a structured array"
        )
    return structured_to_unstructured(points)


def read_points_list(
    cloud: Any,
    field_names: list[str] | None = None,
    skip_nans: bool = False,
    uvs: Iterable[int] | np.ndarray | None = None,
) -> list[Any]:
    """The cloud's points as a list of named tuples (``Point(x=..., y=..., z=...)``) of
    Python numbers: slow, for small clouds."""
    points = read_points(cloud, field_names, skip_nans, uvs)
    point = collections.namedtuple("Point", points.dtype.names or ())  # type: ignore[misc]
    return [point._make(p) for p in points.tolist()]


def create_cloud(header: Any, fields: Iterable[Any], points: Any) -> Any:
    """A ``PointCloud2`` message of ``points``: a structured array of the fields' dtype, a
    2-D array with a column per field, or an iterable of tuples (height 1); or organized,
    a 2-D structured array (or 3-D plain one) of shape ``(width, height)``, as Humble's
    sensor_msgs_py takes it (its data in that array's order)."""
    built = pointcloud2.create_cloud(header, list(fields), points)
    height, width = built.height, built.width
    if height > 1:  # the library reads (height, width)
        height, width = width, height
    point_field = messages.message_class("sensor_msgs/msg/PointField")
    data = array.array("B")
    data.frombytes(built.data)
    return messages.message_class("sensor_msgs/msg/PointCloud2")(
        header=header,
        height=height,
        width=width,
        fields=[
            point_field(name=f.name, offset=f.offset, datatype=f.datatype, count=f.count)
            for f in built.fields
        ],
        is_bigendian=built.is_bigendian,
        point_step=built.point_step,
        row_step=built.point_step * width,
        data=data,
        is_dense=built.is_dense,
    )


def create_cloud_xyz32(header: Any, points: Any) -> Any:
    """A ``PointCloud2`` message of ``x, y, z`` float32 points (an N x 3 array or an
    iterable of triples)."""
    point_field = messages.message_class("sensor_msgs/msg/PointField")
    fields = [
        point_field(name=name, offset=4 * i, datatype=point_field.FLOAT32, count=1)
        for i, name in enumerate("xyz")
    ]
    return create_cloud(header, fields, points)
