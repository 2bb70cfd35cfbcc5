"""Messages from ROS 2 through the gateway: small ones stay CDR until the ported node
reads them, large ones are decoded at the gateway so that their arrays can travel by
shared-memory reference (hprm_bridge.raw_message). Real CDR from the type registry."""

import array
import pickle

import numpy as np
import pytest

from hprm_bridge import messages
from hprm_bridge.raw_message import RAW_MAX, RawMessage, decode, forwarded, materialize
from hprm_bridge.wire import default_registry
from hprm_bridge.wire.errors import MalformedSampleError

IMAGE = "sensor_msgs/msg/Image"


def _image_cdr(nbytes: int) -> bytes:
    reg = default_registry()
    msg = reg.new(IMAGE, height=1, width=nbytes, step=nbytes, encoding="mono8",
                  data=np.arange(nbytes, dtype=np.uint8))  # fmt: skip
    msg.header.frame_id = "cam"
    return bytes(reg.encode(msg, IMAGE))


def test_a_small_message_crosses_as_its_bytes_and_decodes_where_it_is_read():
    cdr = _image_cdr(1000)
    value = forwarded(IMAGE, cdr)
    assert type(value) is RawMessage and value.data == cdr
    copy = pickle.loads(pickle.dumps(value, protocol=5))  # as it travels to the federate
    msg = materialize(copy)
    assert type(msg) is messages.message_class(IMAGE)
    assert msg.header.frame_id == "cam" and msg.width == 1000
    np.testing.assert_array_equal(msg.data, np.arange(1000, dtype=np.uint8))
    assert msg == decode(IMAGE, cdr)


def test_a_large_message_is_decoded_at_the_gateway():
    cdr = _image_cdr(RAW_MAX + 1)
    assert len(cdr) > RAW_MAX
    msg = forwarded(IMAGE, cdr)
    assert type(msg) is messages.message_class(IMAGE)  # its data array goes by shared memory
    assert isinstance(msg.data, np.ndarray) and msg.data.nbytes == RAW_MAX + 1
    assert materialize(msg) is msg


def test_malformed_bytes_fail_where_they_are_decoded():
    bad = b"\x00\x01\x00\x00" + (3).to_bytes(4, "little") + b"\xff\xfe\x00"  # not UTF-8
    value = forwarded("std_msgs/msg/String", bad)  # small: not decoded at the gateway
    with pytest.raises(MalformedSampleError):
        materialize(value)
    with pytest.raises(MalformedSampleError):
        forwarded(IMAGE, _image_cdr(RAW_MAX + 1)[: RAW_MAX + 1])  # large and truncated


def test_small_arrays_from_ros2_are_the_nodes_own_as_in_rclpy():
    """A decoded array is a read-only view of the CDR bytes; a node's callback
    may append to a received sequence (rclpy's are ``array.array``) or write
    into a fixed array, so small ones are copied out, as unpickling does."""
    reg = default_registry()
    joints = reg.new("sensor_msgs/msg/JointState", name=["a"], position=np.array([1.0, 2.0]))
    msg = decode(
        "sensor_msgs/msg/JointState", bytes(reg.encode(joints, "sensor_msgs/msg/JointState"))
    )
    msg.position.append(3.0)
    assert isinstance(msg.position, array.array) and list(msg.position) == [1.0, 2.0, 3.0]
    imu = decode(
        "sensor_msgs/msg/Imu",
        bytes(reg.encode(reg.new("sensor_msgs/msg/Imu"), "sensor_msgs/msg/Imu")),
    )
    imu.orientation_covariance[0] = 1.0  # numpy, as rclpy's fixed arrays, and writable
    assert imu.orientation_covariance.dtype == np.float64 and imu.orientation_covariance[0] == 1.0
    big = decode(IMAGE, _image_cdr(4096))
    assert isinstance(big.data, np.ndarray) and not big.data.flags.writeable  # no copy
