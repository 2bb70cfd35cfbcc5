"""rclpy.serialization in a ported node: the CDR bytes rclpy's serialize_message
gives (compared with real rclpy's in test_rclpy_arguments' probe), and back."""

import numpy as np
import pytest

from hprm_bridge import messages
from hprm_bridge.rclpy.serialization import deserialize_message, serialize_message
from hprm_bridge.wire.errors import MalformedSampleError


def test_a_message_serializes_unpadded_and_comes_back_equal():
    String = messages.message_class("std_msgs/msg/String")
    raw = serialize_message(String(data="hi"))
    # header, string length 3 (with its NUL), "hi\0"; no padding to 4 (rmw_serialize pads none)
    assert raw == b"\x00\x01\x00\x00" + (3).to_bytes(4, "little") + b"hi\x00"
    assert deserialize_message(raw, String) == String(data="hi")
    Image = messages.message_class("sensor_msgs/msg/Image")
    image = Image(height=2, width=2, encoding="mono8", step=2, data=np.arange(4, dtype=np.uint8))
    back = deserialize_message(serialize_message(image), Image)
    assert type(back) is Image and back == image


def test_bytes_that_are_not_the_type_fail_clearly():
    String = messages.message_class("std_msgs/msg/String")
    with pytest.raises(MalformedSampleError, match="std_msgs/msg/String"):
        deserialize_message(b"\x00\x01\x00\x00\xff\xff\xff\x7f", String)  # a 2 GB string
    with pytest.raises(MalformedSampleError, match="unsupported encapsulation"):
        deserialize_message(b"junk", String)
