"""Exceptions of the wire client, one per failure a caller may want to handle."""

from __future__ import annotations


class WireError(Exception):
    """Base class of every error raised by :mod:`hprm_bridge.wire`."""


class UnknownTypeError(WireError, LookupError):
    """A message type is in neither the ROS 2 Humble store nor any ``.msg`` search path."""


class MsgParseError(WireError, ValueError):
    """A ``.msg`` file exists but cannot be parsed (the path and parser message say where)."""


class MalformedSampleError(WireError, ValueError):
    """Bytes that are not a valid CDR encoding of the expected ROS message type."""
