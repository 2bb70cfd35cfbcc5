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
pixels, only ``header.frame_id = "shm:NAME"`` (`carla_demo.shm_transport`). In ``ros2-bytes``
(the HPRM paper's own ROS 2 baseline) each image message travels serialized inside a
``std_msgs/ByteMultiArray`` on the same topic (`bytes_msg`).
"""

from __future__ import annotations

import array
from typing import Any

import numpy as np
from sensor_msgs.msg import Image, JointState, PointCloud2, PointField
from std_msgs.msg import ByteMultiArray

CONTROL_NAMES = ("throttle", "steer", "brake")
# How the images travel: the ``transport`` parameter of the nodes that send or read them
TRANSPORTS = ("topic", "shm", "bytes")
DETECTION_FIELDS = ("x1", "y1", "x2", "y2", "score", "class_id")
_FLOAT32 = 7  # sensor_msgs/PointField.FLOAT32
# The detections' layout, the same in every message: made once, not six PointFields per frame
# (each message gets its own list of these; a node that edits a field's PointField in place
# would edit them all, which no node does)
_DETECTION_LAYOUT = tuple(
    PointField(name=n, offset=4 * i, datatype=_FLOAT32, count=1)
    for i, n in enumerate(DETECTION_FIELDS)
)


def image_type(transport: str) -> type:
    """The type of the image topics' messages under `transport` (one of `TRANSPORTS`)."""
    if transport not in TRANSPORTS:
        raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, not {transport!r}")
    return ByteMultiArray if transport == "bytes" else Image


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


def bytes_msg(msg: Any) -> ByteMultiArray:
    """`msg` serialized into a ``byte[]`` field: how the HPRM paper's ROS 2 baseline sent each
    observation (pickled into a ``byte[] data`` message), the layout behind its 275 ms frames.
    rclpy keeps a ``byte[]`` as a list of one-byte ``bytes``, checked and converted one by one
    at each end: that, not the serializer, is what it costs. The list is made in C here (no
    Python loop over the bytes), the fastest form rclpy's setter takes. Serialized by rclpy,
    not pickled: unpickling what a DDS peer sends would run its code."""
    from rclpy.serialization import serialize_message  # here: the other helpers need no rclpy

    out = ByteMultiArray()
    out.data = memoryview(serialize_message(msg)).cast("c").tolist()
    return out


def from_bytes_msg(msg: ByteMultiArray, msg_type: type) -> Any:
    """The message of `msg_type` that `bytes_msg` put into `msg`."""
    from rclpy.serialization import deserialize_message

    return deserialize_message(b"".join(msg.data), msg_type)


def image_callback(transport: str, callback: Any) -> Any:
    """`callback` as an image topic's subscription callback under `transport`: under
    ``bytes`` each message is unwrapped into its Image first (`from_bytes_msg`)."""
    if transport != "bytes":
        return callback
    return lambda msg: callback(from_bytes_msg(msg, Image))
