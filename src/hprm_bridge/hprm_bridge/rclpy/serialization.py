"""``rclpy.serialization``: a message as the CDR bytes ROS 2 puts on the wire, and back.

The same bytes rclpy's ``serialize_message`` gives (rosbag2's ``cdr`` storage
format too), from the wire client's codec (:mod:`hprm_bridge.wire.cdr`), so a
ported node that writes or reads serialized messages itself (a recorder, a
node forwarding them over its own link) keeps working::

    >>> from std_msgs.msg import String   # doctest: +SKIP
    >>> deserialize_message(serialize_message(String(data="hi")), String)   # doctest: +SKIP
    std_msgs.msg.String(data='hi')
"""

from __future__ import annotations

from typing import Any

from hprm_bridge import raw_message
from hprm_bridge.wire import default_registry
from hprm_bridge.wire.naming import normalize_type_name
from hprm_core.trigger import type_name

__all__ = ["deserialize_message", "serialize_message"]


def serialize_message(message: Any) -> bytes:
    """The message's XCDR1 bytes, header included, unpadded (as ``rmw_serialize``)."""
    ros_type = normalize_type_name(type_name(type(message)))
    return bytes(default_registry().encode(message, ros_type, pad=False))


def deserialize_message(serialized_message: bytes, message_type: Any) -> Any:
    """A message of ``message_type`` (its class) from its CDR bytes; raises
    :class:`~hprm_bridge.wire.errors.MalformedSampleError` on bytes that are not one."""
    return raw_message.decode(normalize_type_name(type_name(message_type)), serialized_message)
