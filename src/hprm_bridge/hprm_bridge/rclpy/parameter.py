"""``rclpy.parameter.Parameter`` and where a node's parameter values come from.

Values are looked up, as in rclpy, from (later wins): the declared default,
``--params-file`` YAML files (the node's section, ``/**`` for all nodes),
``-p name:=value`` arguments (a YAML value), and ``Node(...,
parameter_overrides=[...])``.
"""

from __future__ import annotations

import array
import enum
from typing import Any

PARAMETER_SEPARATOR_STRING = "."

# ParameterValue's field for each type (rcl_interfaces/msg/ParameterType's numbers)
_FIELDS = {1: "bool_value", 2: "integer_value", 3: "double_value", 4: "string_value",
           5: "byte_array_value", 6: "bool_array_value", 7: "integer_array_value",
           8: "double_array_value", 9: "string_array_value"}  # fmt: skip
_ARRAY_CODES = {7: "q", 8: "d"}  # rclpy keeps these two in array.array


class Parameter:
    """A named value of one of ROS 2's ten parameter types.

    >>> p = Parameter("gain", value=2.5)
    >>> p.type_.name, p.get_parameter_value().double_value
    ('DOUBLE', 2.5)
    >>> Parameter.from_parameter_msg(p.to_parameter_msg()) == p
    True
    """

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
            if isinstance(value, (list, tuple, array.array)):
                for t, kind in ((bytes, cls.BYTE_ARRAY), (bool, cls.BOOL_ARRAY),
                                (int, cls.INTEGER_ARRAY), (float, cls.DOUBLE_ARRAY),
                                (str, cls.STRING_ARRAY)):  # fmt: skip
                    if len(value) and all(type(v) is t for v in value):
                        return kind
            raise TypeError(f"not a parameter value: {value!r}")

        def check(self, value: Any) -> bool:
            """Whether ``value`` is one of this type (rclpy's test when a Parameter is
            made with both)."""
            if self == Parameter.Type.NOT_SET:
                return value is None
            if self == Parameter.Type.BYTE_ARRAY and isinstance(value, bytes):
                return True  # HPRM's: bytes for a byte array (rclpy: a list of 1-byte bytes)
            scalar = {1: bool, 2: int, 3: float, 4: str}.get(int(self))
            if scalar is not None:
                return isinstance(value, scalar) and (scalar is bool or type(value) is not bool)
            item = {5: bytes, 6: bool, 7: int, 8: float, 9: str}[int(self)]
            kinds = (list, tuple, array.array) if int(self) in _ARRAY_CODES else (list, tuple)
            return isinstance(value, kinds) and all(isinstance(v, item) for v in value)

    def __init__(self, name: str, type_: Parameter.Type | None = None, value: Any = None):
        if type_ is None:
            type_ = Parameter.Type.from_parameter_value(value)
        if not isinstance(type_, Parameter.Type):
            raise TypeError(f"a parameter's type is a Parameter.Type, not {type_!r}")
        if not type_.check(value):
            raise ValueError(f"parameter {name!r}: {value!r} is not a value of type {type_.name}")
        self._name, self._type, self._value = name, type_, value

    @classmethod
    def from_parameter_msg(cls, msg: Any) -> Parameter:
        """The parameter an ``rcl_interfaces/msg/Parameter`` carries (what a
        ``set_parameters`` call or a ``/parameter_events`` message holds)."""
        kind = Parameter.Type(int(msg.value.type))
        value = parameter_value_to_python(msg.value)
        if kind in _ARRAY_CODES:  # as rclpy holds them: the message's array.array
            value = array.array(_ARRAY_CODES[kind], value)
        return cls(msg.name, kind, value)

    @property
    def name(self) -> str:
        return self._name

    @property
    def type_(self) -> Parameter.Type:
        return self._type

    @property
    def value(self) -> Any:
        return self._value

    def get_parameter_value(self) -> Any:
        """The ``rcl_interfaces/msg/ParameterValue`` of this parameter (rclpy's tutorial
        reads ``node.get_parameter("p").get_parameter_value().string_value``)."""
        from hprm_bridge import messages

        msg = messages.message_class("rcl_interfaces/msg/ParameterValue")(type=int(self._type))
        if self._type != Parameter.Type.NOT_SET:
            value = self._value
            if self._type == Parameter.Type.BYTE_ARRAY:
                value = [bytes([b]) if isinstance(b, int) else b for b in value]
            setattr(
                msg, _FIELDS[int(self._type)], list(value) if isinstance(value, tuple) else value
            )
        return msg

    def to_parameter_msg(self) -> Any:
        """This parameter as an ``rcl_interfaces/msg/Parameter``."""
        from hprm_bridge import messages

        cls = messages.message_class("rcl_interfaces/msg/Parameter")
        return cls(name=self._name, value=self.get_parameter_value())

    def __repr__(self) -> str:
        return f"Parameter({self._name!r}, {self._type.name}, {self._value!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Parameter) and (self._name, self._type, self._value) == (
            other._name,
            other._type,
            other._value,
        )

    __hash__ = None  # type: ignore[assignment]


def parameter_value_to_python(value: Any) -> Any:
    """The Python value an ``rcl_interfaces/msg/ParameterValue`` holds, as rclpy gives it:
    None for NOT_SET, a list for an array (a message decoded off the wire may hold numpy
    arrays: made plain here)."""
    kind = int(value.type)
    if kind == 0:
        return None
    if kind not in _FIELDS:
        raise RuntimeError(f"unexpected parameter type {kind}")
    got = getattr(value, _FIELDS[kind])
    if kind < 5:
        return got.item() if hasattr(got, "item") else got
    items = [v.item() if hasattr(v, "item") else v for v in got]
    return [bytes([b]) if isinstance(b, int) else b for b in items] if kind == 5 else items
