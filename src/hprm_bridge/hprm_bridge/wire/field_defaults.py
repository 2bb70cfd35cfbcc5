"""Default values written in message definitions (``float64 w 1``), as rosidl gives them
to a message made without that field.

rclpy's generated classes start every field at its definition's default, or at zero where
it has none; node code relies on it: a ``Pose()`` is the identity, its orientation's
``w`` 1. The store of built-in Humble types this package decodes with (rosbags') keeps
no defaults, so they are read here from the ``.msg`` text where a definition comes from
one, and known for the built-in types (:data:`HUMBLE`).

The rules are rosidl's (``rosidl_adapter``): ``true``/``false`` (or 1/0) for a bool, a
number for a number, a string quoted or as written, ``[a, b]`` for an array.

>>> parse('float64 x 0\\nfloat64 w 1  # identity\\nstring mode "auto"\\nint32[] ids [1, 2]')
{'x': 0.0, 'w': 1.0, 'mode': 'auto', 'ids': [1, 2]}
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from typing import Any

# The defaults among Humble's built-in interfaces (those the store holds without text;
# checked against the .msg files of a Humble install: the only non-zero ones).
HUMBLE: dict[str, dict[str, Any]] = {"geometry_msgs/msg/Quaternion": {"w": 1.0}}

_FIELD = re.compile(r"^\s*(?P<type>[A-Za-z0-9_/]+(?:<=\d+)?(?:\[[^\]]*\])?)\s+"
                    r"(?P<name>[A-Za-z][A-Za-z0-9_]*)\s+(?P<rest>.*)$")  # fmt: skip
_INTS = {"byte", "char", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
         "uint64"}  # fmt: skip


def parse(text: str) -> dict[str, Any]:
    """Field name -> default value, for the fields of ``text`` (one ``.msg`` definition
    or a section of a ``.srv``/``.action``) that have one."""
    found: dict[str, Any] = {}
    for line in text.splitlines():
        m = _FIELD.match(line)
        if m is None or m["rest"].startswith(("=", "#")):
            continue  # a constant, a field without a default, or not a field
        value = _code(m["rest"]).strip()
        if value:
            found[m["name"]] = _value(m["type"], value, m["name"])
    return found


def _unquoted(text: str, wanted: str) -> Iterator[int]:
    """Where ``text`` has one of the characters ``wanted`` outside quotes."""
    quote = None
    for i, c in enumerate(text):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in wanted:
            yield i


def _code(rest: str) -> str:
    """``rest`` without its comment: a ``#`` outside quotes starts one."""
    return rest[: next(_unquoted(rest, "#"), len(rest))]


def _value(typ: str, text: str, name: str) -> Any:
    base = typ.split("[")[0].split("<")[0]
    if "[" in typ:
        if not (text.startswith("[") and text.endswith("]")):
            raise ValueError(f"default of array field {name!r} is not a [list]: {text!r}")
        items = _split(text[1:-1])
        return [_scalar(base, item, name) for item in items]
    return _scalar(base, text, name)


def _split(inner: str) -> list[str]:
    """The items of an array default, commas inside quotes kept."""
    cuts = [-1, *_unquoted(inner, ","), len(inner)]
    items = [inner[a + 1 : b].strip() for a, b in itertools.pairwise(cuts)]
    return [] if items == [""] else items


def _scalar(base: str, text: str, name: str) -> Any:
    if base == "bool":
        word = text.lower()
        if word in ("true", "1"):
            return True
        if word in ("false", "0"):
            return False
        raise ValueError(f"default of bool field {name!r} is {text!r}, not true or false")
    if base in _INTS:
        return int(text, 0)
    if base in ("float32", "float64"):
        return float(text)
    if base in ("string", "wstring"):
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            return ast.literal_eval(text)
        return text
    raise ValueError(f"field {name!r} of type {base} cannot have a default")
