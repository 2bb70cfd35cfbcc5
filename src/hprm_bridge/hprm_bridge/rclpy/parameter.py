"""``rclpy.parameter.Parameter`` and where a node's parameter values come from.

Values are looked up, as in rclpy, from (later wins): the declared default,
``--params-file`` YAML files (the node's section, ``/**`` for all nodes),
``-p name:=value`` arguments (a YAML value), and ``Node(...,
parameter_overrides=[...])``.
"""

from __future__ import annotations

import enum
from typing import Any

import yaml


class Parameter:
    class Type(enum.IntEnum):
        NOT_SET = 0
        BOOL = 1
        INTEGER = 2
        DOUBLE = 3
        STRING = 4
        BYTE_ARRAY = 5
        BOOL_ARRAY = 6
        INTEGER_ARRAY = 7
        DOUBLE_ARRAY = 8
        STRING_ARRAY = 9

        @classmethod
        def from_parameter_value(cls, value: Any) -> Parameter.Type:
            if value is None:
                return cls.NOT_SET
            for t, kind in ((bool, cls.BOOL), (int, cls.INTEGER), (float, cls.DOUBLE),
                            (str, cls.STRING), (bytes, cls.BYTE_ARRAY)):  # fmt: skip
                if type(value) is t:
                    return kind
            if isinstance(value, (list, tuple)):
                for t, kind in ((bool, cls.BOOL_ARRAY), (int, cls.INTEGER_ARRAY),
                                (float, cls.DOUBLE_ARRAY), (str, cls.STRING_ARRAY)):  # fmt: skip
                    if value and all(type(v) is t for v in value):
                        return kind
            raise TypeError(f"not a parameter value: {value!r}")

    def __init__(self, name: str, type_: Parameter.Type | None = None, value: Any = None):
        if type_ is None:
            type_ = Parameter.Type.from_parameter_value(value)
        self._name, self._type, self._value = name, Parameter.Type(type_), value

    @property
    def name(self) -> str:
        return self._name

    @property
    def type_(self) -> Parameter.Type:
        return self._type

    @property
    def value(self) -> Any:
        return self._value

    def __repr__(self) -> str:
        return f"Parameter({self._name!r}, {self._type.name}, {self._value!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Parameter) and (self._name, self._type, self._value) == (
            other._name,
            other._type,
            other._value,
        )

    __hash__ = None  # type: ignore[assignment]


def params_from_file(path: str, node_fqn: str) -> dict[str, Any]:
    """A node's parameters in a ROS 2 params YAML file, flattened with dots:
    the ``/**`` section, then the node's own, by fully qualified name (a key
    without a leading ``/`` is from the root: ``cam`` is ``/cam``, as rcl reads it)."""
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a params file maps node names to {{ros__parameters: ...}}")
    found: dict[str, Any] = {}
    for wanted in ("/**", node_fqn):
        for key, section in data.items():
            if ("/" + str(key).lstrip("/")) == wanted and isinstance(section, dict):
                found.update(_flatten(section.get("ros__parameters", {})))
    return found


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in tree.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out
