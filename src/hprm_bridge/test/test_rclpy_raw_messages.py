"""Raw subscriptions and publishing serialized bytes (rclpy's raw=True, publish(bytes)):
a relay that never decodes, ported and under real rclpy; the bytes are rclpy's CDR."""

import re
from pathlib import Path

import pytest

from hprm_bridge import messages
from hprm_bridge.raw_message import RawMessage
from hprm_bridge.rclpy.serialization import serialize_message
from hprm_bridge.rclpy.subscription import raw_bytes

RELAY = Path(__file__).parent / "nodes" / "raw_relay.py"
SAYS = [line for n in (1, 2, 3) for line in (f"RAW bytes hello {n} cdr-as-rclpy True",
                                             f"RELAYED hello {n}")] + ["STOP"]  # fmt: skip


def _lines(out):
    return re.findall(r"^(?:\[raw_relay\] )?((?:RAW|RELAYED|STOP).*)$", out, re.M)


def test_a_raw_relay_forwards_bytes_it_never_decodes(ported_run):
    assert _lines(ported_run(RELAY)) == SAYS


@pytest.mark.ros2
def test_the_raw_relay_says_the_same_under_real_rclpy(rclpy_until_stop):
    assert _lines("\n".join(rclpy_until_stop([RELAY]))) == SAYS


def test_a_raw_subscription_gets_the_gateways_bytes_as_they_came():
    """From ROS 2 (a RawMessage through the gateway) the CDR as DDS carried it, not
    decoded and encoded again; from a federate, rclpy's serialization of the message."""
    msg = messages.message_class("std_msgs/msg/String")(data="hi")
    cdr = serialize_message(msg)
    padded = cdr + b"\x00"  # DDS may carry alignment padding: passed on as it came
    assert raw_bytes(RawMessage("std_msgs/msg/String", padded)) == padded
    assert raw_bytes(msg) == cdr


def test_a_publisher_refuses_a_message_of_another_type_as_rclpy():
    """Before, it went to the subscribers, who got a String where they expected Int32."""
    from hprm_bridge.rclpy.node import Node

    node = Node("typed")
    pub = node.create_publisher(messages.message_class("std_msgs/msg/Int32"), "n", 10)
    for wrong in (messages.message_class("std_msgs/msg/String")(data="x"), 5):
        with pytest.raises(TypeError, match=r"Expected <class 'std_msgs\.msg\.Int32'>, got"):
            pub.publish(wrong)
    pub.publish(serialize_message(messages.message_class("std_msgs/msg/Int32")(data=5)))
    assert len(pub._queue) == 1  # serialized bytes are taken, as rclpy takes them
