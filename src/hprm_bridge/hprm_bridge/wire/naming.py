"""ROS 2 names and their DDS spelling.

ROS 2 maps its names onto DDS with fixed conventions; a plain ROS 2 node only
sees our endpoints if we spell them exactly the same way:

* Topic names: a fully qualified ROS name ``/ns/topic`` becomes the DDS topic
  ``rt/ns/topic`` (prefix ``rt`` for "ROS topic", then the name *with* its
  leading slash, so no separator is added). Sources: the ROS 2 design article
  "Topic and Service name mapping to DDS" (design.ros2.org,
  articles/topic_and_service_names.html, section "ROS Specific Namespace
  Prefix"), and ``make_fqtopic(ROS_TOPIC_PREFIX, topic_name, ...)`` with
  ``ROS_TOPIC_PREFIX = "rt"`` in rmw_cyclonedds_cpp ``src/rmw_node.cpp``
  (humble branch).
* Name validity and expansion (relative names, ``~``, namespaces): the same
  design article, section "Fully Qualified Names", as implemented by
  ``rcl_expand_topic_name`` and ``rmw_validate_full_topic_name`` /
  ``rmw_validate_node_name`` / ``rmw_validate_namespace`` (rmw
  ``src/validate_*.c``): tokens of ``[A-Za-z0-9_]`` not starting with a digit,
  no ``//``, no trailing ``/``.
* Type names: ``pkg/msg/Type`` becomes ``pkg::msg::dds_::Type_``, as emitted by
  rosidl_typesupport_introspection / rmw_cyclonedds_cpp
  ``create_type_name()`` (``src/TypeSupport.hpp``: namespace, then ``::dds_::``,
  then the type name with a trailing underscore) and by
  rosidl_generator_dds_idl for Fast DDS.
"""

from __future__ import annotations

import re

TOPIC_PREFIX = "rt"
"""DDS topic prefix of ROS 2 topics (rmw_cyclonedds ``ROS_TOPIC_PREFIX``)."""

_TOKEN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NODE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MAX_NODE_NAME = 255
_MAX_TOPIC = 255 - len(TOPIC_PREFIX)
_SUBSTITUTION = re.compile(r"\{([^{}]*)\}")
_SUBSTITUTIONS = ("node", "ns", "namespace")


class InvalidNameError(ValueError):
    """A ROS 2 node, namespace, topic or type name that ROS 2 would reject."""


def validate_node_name(name: str) -> str:
    """Check a node name the way ``rmw_validate_node_name`` does; return it."""
    if not name or len(name) > _MAX_NODE_NAME or not _NODE_NAME.match(name):
        raise InvalidNameError(
            f"invalid node name {name!r}: must be 1-{_MAX_NODE_NAME} characters of "
            "[A-Za-z0-9_] and not start with a digit"
        )
    return name


def normalize_namespace(namespace: str) -> str:
    """Return an absolute namespace (``''`` and ``'/'`` mean root; ``'a'`` -> ``'/a'``)."""
    if namespace in ("", "/"):
        return "/"
    ns = namespace if namespace.startswith("/") else "/" + namespace
    _check_tokens(ns, "namespace")
    return ns


def _check_tokens(fqn: str, what: str) -> None:
    if not fqn.startswith("/") or (len(fqn) > 1 and fqn.endswith("/")) or "//" in fqn:
        raise InvalidNameError(f"invalid {what} {fqn!r}: must be absolute, no '//' or trailing '/'")
    for tok in fqn[1:].split("/") if fqn != "/" else []:
        if not _TOKEN.match(tok):
            raise InvalidNameError(
                f"invalid {what} {fqn!r}: token {tok!r} must be [A-Za-z0-9_] and not start "
                "with a digit"
            )


def expand_topic_name(name: str, node_name: str, namespace: str) -> str:
    """Fully qualify ``name`` for a node, as ``rcl_expand_topic_name`` does.

    ``/abs`` stays, ``rel`` becomes ``<namespace>/rel``, ``~`` and ``~/x`` expand
    to the node's own name, the substitutions ``{node}``, ``{ns}`` and
    ``{namespace}`` to the node's name and namespace.
    """
    ns = normalize_namespace(namespace)
    node_fqn = (ns.rstrip("/") or "") + "/" + node_name
    if not name:
        raise InvalidNameError("invalid topic name '': must not be empty")
    if "~" in name[1:]:
        raise InvalidNameError(
            f"invalid topic name {name!r}: '~' may only be its first character, before a '/'"
        )
    for sub in _SUBSTITUTION.findall(name):
        if sub not in _SUBSTITUTIONS:
            raise InvalidNameError(
                f"invalid topic name {name!r}: unknown substitution {{{sub}}} (known: "
                "{node}, {ns}, {namespace})"
            )
    values = {"node": node_name, "ns": ns, "namespace": ns}
    name = _SUBSTITUTION.sub(lambda m: values[m.group(1)], name)
    if name.startswith("//"):  # "{ns}/x" in the root namespace
        name = name[1:]
    if name == "~":
        fqn = node_fqn
    elif name.startswith("~/"):
        fqn = node_fqn + name[1:]
    elif name.startswith("/"):
        fqn = name
    else:
        fqn = (ns.rstrip("/") or "") + "/" + name
    _check_tokens(fqn, "topic name")
    if fqn == "/":
        raise InvalidNameError("invalid topic name '/'")
    if len(fqn) > _MAX_TOPIC:
        raise InvalidNameError(f"topic name {fqn!r} longer than {_MAX_TOPIC} characters")
    return fqn


def dds_topic_name(fq_topic: str) -> str:
    """DDS topic of a fully qualified ROS topic: ``/chatter`` -> ``rt/chatter``."""
    if not fq_topic.startswith("/"):
        raise InvalidNameError(f"topic {fq_topic!r} is not fully qualified")
    return TOPIC_PREFIX + fq_topic


def ros_topic_name(dds_topic: str) -> str | None:
    """Inverse of :func:`dds_topic_name`; ``None`` for non-ROS DDS topics."""
    if dds_topic.startswith(TOPIC_PREFIX + "/"):
        return dds_topic[len(TOPIC_PREFIX) :]
    return None


def normalize_type_name(ros_type: str) -> str:
    """Canonical ``pkg/msg/Type``; accepts ``pkg/Type`` and ``pkg::msg::Type``."""
    parts = [p for p in re.split(r"/|::", ros_type) if p]
    if len(parts) == 2:
        parts = [parts[0], "msg", parts[1]]
    if len(parts) != 3 or not all(_TOKEN.match(p) for p in parts):
        raise InvalidNameError(f"invalid message type name {ros_type!r}: expected 'pkg/msg/Type'")
    return "/".join(parts)


def dds_type_name(ros_type: str) -> str:
    """DDS type of a ROS type: ``std_msgs/msg/String`` -> ``std_msgs::msg::dds_::String_``."""
    pkg, sub, name = normalize_type_name(ros_type).split("/")
    return f"{pkg}::{sub}::dds_::{name}_"


def ros_type_name(dds_type: str) -> str | None:
    """Inverse of :func:`dds_type_name`; ``None`` when not a ROS 2 type name."""
    parts = dds_type.split("::")
    if len(parts) != 4 or parts[2] != "dds_" or not parts[3].endswith("_"):
        return None
    return f"{parts[0]}/{parts[1]}/{parts[3][:-1]}"
