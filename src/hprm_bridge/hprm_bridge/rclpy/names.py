"""ROS 2 names as rclpy checks and expands them: ``rclpy.validate_topic_name``,
``rclpy.validate_full_topic_name``, ``rclpy.validate_node_name``,
``rclpy.validate_namespace`` and ``rclpy.expand_topic_name`` are this module (the
porting import hook maps those module names here: one concept, one file).

Each check returns True or raises rclpy's exception for the kind of name (a
``NameValidationException``, a ``ValueError``), naming the first offending character.
The rules are rcl's and rmw's (:mod:`hprm_bridge.wire.naming` holds them for the wire
client too): a topic name as written may hold ``~`` (first) and ``{substitutions}``
(rcl lets ``//`` pass there: expansion refuses it); a full one is absolute, tokens of
``[A-Za-z0-9_]`` that do not start with a digit, no ``//``, no trailing ``/``.

>>> expand_topic_name("~/status", "camera", "/robot1")
'/robot1/camera/status'
>>> validate_topic_name("odom/{node}")
True
"""

from __future__ import annotations

import re

from hprm_bridge.rclpy.exceptions import (
    InvalidNamespaceException,
    InvalidNodeNameException,
    InvalidServiceNameException,
    InvalidTopicNameException,
)
from hprm_bridge.wire import naming

TOPIC_SEPARATOR_STRING = "/"

_ALLOWED = re.compile(r"[A-Za-z0-9_/~{}]")


def _relative_problem(name: str) -> tuple[str, int] | None:
    """What rcl refuses in a topic name as written (before expansion), and where."""
    if not name:
        return "must not be empty", 0
    if name.endswith("/"):
        return "must not end with a forward slash", len(name) - 1
    inside = None  # index of the open '{'
    for i, c in enumerate(name):
        if not _ALLOWED.match(c):
            return ("must not contain characters other than alphanumerics, '_', '~', '{', "
                    "or '}'", i)  # fmt: skip
        if c == "{":
            if inside is not None:
                return "must not contain nested substitutions", i
            inside = i
        elif c == "}":
            if inside is None:
                return "has a '}' without a '{'", i
            if i == inside + 1 or name[inside + 1].isdigit():
                return "substitution must be a name that does not start with a number", inside
            inside = None
        elif inside is not None and not (c.isalnum() or c == "_"):
            return "substitution must hold only alphanumerics and '_'", i
        elif c == "~" and i != 0:
            return "'~' must only be at the start of the name", i
    if inside is not None:
        return "has a '{' without a '}'", inside
    start = 0
    for token in name.split("/"):
        if token and token[0].isdigit():
            return "tokens must not start with a number", start
        start += len(token) + 1
    return None


def validate_topic_name(name: str, *, is_service: bool = False) -> bool:
    """Whether ``name`` is a topic (or service) name ROS 2 takes, as written."""
    problem = _relative_problem(name)
    if problem is not None:
        refused = InvalidServiceNameException if is_service else InvalidTopicNameException
        raise refused(name, f"topic name {problem[0]}", problem[1])
    return True


def validate_full_topic_name(name: str, *, is_service: bool = False) -> bool:
    """Whether ``name`` is a fully qualified topic (or service) name."""
    refused = InvalidServiceNameException if is_service else InvalidTopicNameException
    problem = _relative_problem(name)
    if problem is None and not name.startswith("/"):
        problem = ("must be absolute, it must lead with a '/'", 0)
    for c in ("~", "{", "//"):
        if problem is None and c in name:
            problem = ("must not contain '~', '{', '}' or repeated '/'", name.index(c))
    if problem is not None:
        raise refused(name, f"topic name {problem[0]}", problem[1])
    return True


def validate_node_name(node_name: str) -> bool:
    try:
        naming.validate_node_name(node_name)
    except naming.InvalidNameError:
        bad = next((i for i, c in enumerate(node_name) if not (c.isalnum() or c == "_")), 0)
        raise InvalidNodeNameException(
            node_name,
            "node name must not be empty, start with a number, or hold characters other "
            "than alphanumerics and '_'",
            bad,
        ) from None
    return True


def validate_namespace(namespace: str) -> bool:
    """Whether ``namespace`` is an absolute namespace (``/`` included)."""
    problem = None if namespace.startswith("/") else ("must be absolute", 0)
    if problem is None and namespace != "/":
        problem = _relative_problem(namespace)
        if problem is None and ("~" in namespace or "{" in namespace):
            problem = ("must not contain '~', '{' or '}'", 0)
    if problem is not None:
        raise InvalidNamespaceException(namespace, f"namespace {problem[0]}", problem[1])
    return True


def expand_topic_name(topic_name: str, node_name: str, node_namespace: str) -> str:
    """``topic_name`` fully qualified for that node: ``~`` its own name, a relative
    name under its namespace, ``{node}``/``{ns}``/``{namespace}`` substituted. A name,
    node name or namespace it cannot expand is a plain ``ValueError``, as rclpy's."""
    try:
        validate_node_name(node_name)
        if node_namespace:
            validate_namespace(node_namespace)
        validate_topic_name(topic_name)
        return naming.expand_topic_name(topic_name, node_name, node_namespace)
    except (naming.InvalidNameError, ValueError) as exc:
        raise ValueError(f"cannot expand topic name {topic_name!r}: {exc}") from None
