"""Small messages from ROS 2 cross the gateway still in their CDR bytes.

Why: for a message of a few kilobytes, decoding it at the gateway, pickling the decoded
object for the federate that reads it and unpickling it there costs more than the message's
trip itself, and it sits on the latency path of every message: on a small machine the
decode alone took about a tenth of a millisecond of a cold round trip (``hprm bench
bridge``). The gateway forwards such a message as a :class:`RawMessage`; the ported node's
subscription decodes it once, where it would have unpickled it, so the node's callback gets
the same message class either way.

Large messages are decoded at the gateway (:func:`forwarded`): their arrays then travel to
the federates by shared-memory reference (``hprm_core.object_store``) instead of being
copied inside the CDR bytes. The size that separates the two is the data plane's own
threshold for shared memory.

Example::

    >>> from hprm_bridge.wire import default_registry
    >>> reg = default_registry()
    >>> cdr = bytes(reg.encode(reg.new("std_msgs/msg/String", data="hi"), "std_msgs/msg/String"))
    >>> forwarded("std_msgs/msg/String", cdr)
    RawMessage('std_msgs/msg/String', 12 bytes)
    >>> materialize(forwarded("std_msgs/msg/String", cdr))
    std_msgs.msg.String(data='hi')
"""

from __future__ import annotations

from typing import Any

from hprm_bridge import messages
from hprm_bridge.wire import default_registry
from hprm_core.serialization import DEFAULT_THRESHOLD

__all__ = ["RawMessage", "decode", "forwarded", "materialize"]

RAW_MAX = DEFAULT_THRESHOLD  # bytes of CDR forwarded undecoded; larger ones are decoded


class RawMessage:
    """A ROS 2 message of type ``ros_type`` as its serialized CDR bytes."""

    __slots__ = ("data", "ros_type")

    def __init__(self, ros_type: str, data: bytes) -> None:
        self.ros_type = ros_type
        self.data = data

    def __reduce__(self) -> tuple[Any, ...]:
        return (RawMessage, (self.ros_type, self.data))

    def __repr__(self) -> str:
        return f"RawMessage({self.ros_type!r}, {len(self.data)} bytes)"


def decode(ros_type: str, data: bytes | memoryview) -> Any:
    """The message (this package's class for ``ros_type``); raises
    :class:`~hprm_bridge.wire.errors.MalformedSampleError` on bytes that are not one."""
    return messages.adopt(default_registry().decode(data, ros_type))


def forwarded(ros_type: str, data: bytes | memoryview) -> Any:
    """What the gateway sends into the federation for CDR ``data`` from ROS 2: the bytes
    themselves when small, else the decoded message (may raise as :func:`decode`)."""
    if len(data) <= RAW_MAX:
        return RawMessage(ros_type, bytes(data))
    return decode(ros_type, data)


def materialize(value: Any) -> Any:
    """``value`` as its subscriber sees it: decoded if it is a :class:`RawMessage`."""
    if type(value) is RawMessage:
        return decode(value.ros_type, value.data)
    return value
