"""The demo's data on standard ROS 2 messages, identical for every backend and variant.

Only ``sensor_msgs`` and ``std_msgs`` types, so that plain ROS 2 tools (``ros2 topic echo``,
rviz, ``ros2 bag``) read every topic and no interface package needs building:

========================  ==========================  =====================================
topic                     type                        content
========================  ==========================  =====================================
``camera/image``          sensor_msgs/Image rgb8      the 960x600 camera frame
``birdview``              sensor_msgs/Image mono8     the 15x192x192 masks, planes stacked
                                                      (height 15*192): no transpose needed
``measurements``          sensor_msgs/JointState      the 6 named inputs of the policy
``agent/action``          sensor_msgs/JointState      throttle, steer, brake (the policy's)
``detector/detections``   sensor_msgs/PointCloud2     one point per detection, float32
                                                      fields x1 y1 x2 y2 score class_id
``control``               sensor_msgs/JointState      throttle, steer, brake (the fused)
========================  ==========================  =====================================

Every message carries the frame's simulation time as ``header.stamp``: it is how nodes
pair the messages of one frame (`carla_demo.frame_sync`), whatever order they arrive in.
In the ``ros2-shm`` variant the images travel in shared memory and their messages carry no
pixels, only ``header.frame_id = "shm:NAME"`` (`carla_demo.shm_transport`).
"""

from __future__ import annotations

import array
from typing import Any

import numpy as np
from sensor_msgs.msg import Image, JointState, PointCloud2, PointField

CONTROL_NAMES = ("throttle", "steer", "brake")
DETECTION_FIELDS = ("x1", "y1", "x2", "y2", "score", "class_id")
_FLOAT32 = 7  # sensor_msgs/PointField.FLOAT32
# The detections' layout, the same in every message: made once, not six PointFields per frame
# (each message gets its own list of these; a node that edits a field's PointField in place
# would edit them all, which no node does)
_DETECTION_LAYOUT = tuple(
    PointField(name=n, offset=4 * i, datatype=_FLOAT32, count=1)
    for i, n in enumerate(DETECTION_FIELDS)
)


def stamp_ns(msg: Any) -> int:
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def _stamp(msg: Any, ns: int, frame_id: str) -> None:
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, 1_000_000_000)
    msg.header.frame_id = frame_id


def image_msg(
    pixels: np.ndarray | None,
    shape: tuple[int, ...],
    encoding: str,
    ns: int,
    frame_id: str,
    loaned: bool = False,
) -> Image:
    """An Image of `shape` (rows, columns[, channels]); `pixels` None for a shared-memory
    reference (`frame_id` then names the segment). `loaned`: `pixels` is a publisher's
    loan (``borrow_loaned_array``, HPRM's), which its message class takes as it is."""
    msg = Image()
    _stamp(msg, ns, frame_id)
    msg.height, msg.width = shape[0], shape[1]
    msg.encoding = encoding
    msg.step = shape[1] * (shape[2] if len(shape) > 2 else 1)
    if pixels is not None:
        # An array.array is taken as it is by rclpy's setter (no per-element check) and as
        # a numpy view by HPRM's: no copy when the world rendered into one (byte_array);
        # else one memcpy (frombytes; array.array("B", view) would iterate the pixels one
        # by one: ~100 ms for this camera)
        data = pixels.reshape(-1) if loaned else _byte_array_of(pixels)
        if data is None:
            data = array.array("B")
            data.frombytes(np.ascontiguousarray(pixels, np.uint8).reshape(-1).data)
        msg.data = data
    return msg


def _byte_array_of(pixels: np.ndarray) -> array.array | None:
    """The ``array.array`` whose whole memory `pixels` is (`world.byte_array`), or None."""
    base = pixels.base
    while isinstance(base, np.ndarray):
        base = base.base
    data = base.obj if isinstance(base, memoryview) else None
    if (
        isinstance(data, array.array)
        and data.typecode == "B"
        and pixels.dtype == np.uint8
        and pixels.flags.c_contiguous
        and pixels.nbytes == len(data)
        and pixels.__array_interface__["data"][0] == data.buffer_info()[0]
    ):
        return data
    return None


def image_array(msg: Image, channels: int) -> np.ndarray:
    return np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, channels)


def values_msg(names: tuple[str, ...], values: Any, ns: int, frame_id: str = "") -> JointState:
    msg = JointState()
    _stamp(msg, ns, frame_id)
    msg.name = list(names)
    msg.position = [float(v) for v in values]
    return msg


def values(msg: JointState, names: tuple[str, ...]) -> list[float]:
    """The message's values in the order of `names` (a message may name them in any order),
    as Python floats: the fusion and the sim read three of them on the frame's critical path,
    where a numpy array of three, made and turned back into a list, cost 20 us cold."""
    by_name = dict(zip(msg.name, msg.position, strict=False))
    try:
        return [float(by_name[n]) for n in names]
    except KeyError as exc:
        raise ValueError(f"{msg.name} lacks {exc.args[0]!r}") from None


def detections_msg(detections: np.ndarray, ns: int) -> PointCloud2:
    rows = np.ascontiguousarray(detections, np.float32).reshape(-1, len(DETECTION_FIELDS))
    msg = PointCloud2()
    _stamp(msg, ns, "camera")
    msg.height, msg.width = 1, len(rows)
    msg.fields = list(_DETECTION_LAYOUT)
    msg.point_step = 4 * len(DETECTION_FIELDS)
    msg.row_step = msg.point_step * len(rows)
    msg.is_dense = True
    msg.data = array.array("B", rows.tobytes())
    return msg


def detections(msg: PointCloud2) -> np.ndarray:
    names = tuple(f.name for f in msg.fields)
    if names != DETECTION_FIELDS or msg.point_step != 4 * len(DETECTION_FIELDS):
        raise ValueError(f"not a detections cloud: fields {names}")
    return np.frombuffer(msg.data, np.float32).reshape(-1, len(DETECTION_FIELDS))
