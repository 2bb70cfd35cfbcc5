"""A node's parameters: declared values, their descriptors, the set callbacks.

The rules are rclpy's (Humble), because node code relies on them: a value
given from outside (``--params-file``, ``-p``, ``parameter_overrides``)
replaces the default at declaration, if its type agrees; a parameter keeps
its declared type unless its descriptor allows ``dynamic_typing``;
``read_only``, ``integer_range`` and ``floating_point_range`` are checked on
every set; callbacks added with ``add_on_set_parameters_callback`` (newest
first) may refuse a change with a reason; setting an undeclared parameter
raises. :class:`~hprm_bridge.rclpy.node.Node` delegates to this object.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from hprm_bridge import messages
from hprm_bridge.rclpy.exceptions import (
    InvalidParameterTypeException,
    ParameterAlreadyDeclaredException,
    ParameterNotDeclaredException,
)
from hprm_bridge.rclpy.parameter import Parameter

_REL_TOL = 1e-6  # rclpy's Node.PARAM_REL_TOL


def _result(successful: bool, reason: str = "") -> Any:
    cls = messages.message_class("rcl_interfaces/msg/SetParametersResult")
    return cls(successful=successful, reason=reason)


def _descriptor(**fields: Any) -> Any:
    return messages.message_class("rcl_interfaces/msg/ParameterDescriptor")(**fields)


def _type_name(t: Any) -> str:
    return f"Type.{Parameter.Type(t).name}"  # as rclpy's (Enum) Parameter.Type prints


class NodeParameters:
    def __init__(self, node_name: str, overrides: dict[str, Any]) -> None:
        self._node = node_name
        self._overrides = overrides
        self.values: dict[str, Parameter] = {}
        self.descriptors: dict[str, Any] = {}
        self.callbacks: list[Callable[[list[Parameter]], Any]] = []
        # told of every change once made, as (new, changed, deleted): what rclpy
        # publishes on /parameter_events (the node's, when it has node services)
        self.on_change: Callable[[list[Parameter], list[Parameter], list[Parameter]], None] = (
            lambda new, changed, deleted: None
        )

    # -- declaring -------------------------------------------------------------------

    def declare(self, name: str, value: Any, descriptor: Any, ignore_override: bool) -> Parameter:
        if name in self.values:
            raise ParameterAlreadyDeclaredException([name])
        if isinstance(value, Parameter.Type):  # declare_parameter(name, Parameter.Type.X)
            value = None
        descriptor = descriptor if descriptor is not None else _descriptor()
        descriptor.name = name
        if name in self._overrides and not ignore_override:
            given = self._overrides[name]
            if value is not None and given is not None and not descriptor.dynamic_typing:
                want, got = (Parameter.Type.from_parameter_value(v) for v in (value, given))
                if want == Parameter.Type.DOUBLE and got == Parameter.Type.INTEGER:
                    given = float(given)  # a YAML 2 for a float parameter, as rcl reads it
                elif want != got:
                    raise InvalidParameterTypeException(Parameter(name, value=given), want.name)
            value = given
        param = Parameter(name, value=value)
        if not descriptor.dynamic_typing:
            descriptor.type = int(param.type_)
        result = self._check(param, descriptor, check_read_only=False)
        if not result.successful:
            from hprm_bridge.rclpy.exceptions import InvalidParameterValueException

            raise InvalidParameterValueException(name, value, result.reason)
        self.values[name] = param
        self.descriptors[name] = descriptor
        self.on_change([param], [], [])
        return param

    def undeclare(self, name: str) -> None:
        if name not in self.values:
            raise ParameterNotDeclaredException([name])
        if self.descriptors[name].read_only:
            from hprm_bridge.rclpy.exceptions import ParameterImmutableException

            raise ParameterImmutableException(name)
        del self.values[name], self.descriptors[name]
        self.on_change([], [], [Parameter(name)])

    # -- reading ---------------------------------------------------------------------

    def get(self, name: str) -> Parameter:
        if name not in self.values:
            raise ParameterNotDeclaredException(name)
        return self.values[name]

    def describe(self, name: str) -> Any:
        if name not in self.descriptors:
            raise ParameterNotDeclaredException(name)
        return self.descriptors[name]

    # -- setting ---------------------------------------------------------------------

    def set_each(self, params: list[Parameter]) -> list[Any]:
        """``set_parameters``: one by one; an undeclared one raises, and
        those after it are not tried (those before stay set)."""
        results = []
        for p in params:
            self._require_declared([p])
            results.append(self.set_atomically([p]))
        return results

    def set_atomically(self, params: list[Parameter]) -> Any:
        """All or none: descriptors, then the callbacks (newest first)."""
        self._require_declared(params)
        for p in params:
            result = self._check(p, self.descriptors[p.name], check_read_only=True)
            if not result.successful:
                return result
        for callback in list(self.callbacks):
            result = callback(list(params))
            if not result.successful:
                return result
        changed, deleted = [], []
        for p in params:
            if p.type_ == Parameter.Type.NOT_SET:
                del self.values[p.name], self.descriptors[p.name]
                deleted.append(p)
            else:
                self.values[p.name] = p
                changed.append(p)
        self.on_change([], changed, deleted)
        return _result(True)

    def _require_declared(self, params: list[Parameter]) -> None:
        if not all(isinstance(p, Parameter) for p in params):
            raise TypeError(f"parameter must be instance of type '{Parameter!r}'")
        missing = [p.name for p in params if p.name not in self.values]
        if missing:
            raise ParameterNotDeclaredException(missing)

    def _check(self, p: Parameter, d: Any, check_read_only: bool) -> Any:
        if check_read_only and d.read_only:
            return _result(False, f"Trying to set a read-only parameter: {p.name}.")
        if d.dynamic_typing:
            d.type = int(p.type_)
        elif p.name in self.values and p.type_ == Parameter.Type.NOT_SET:
            return _result(False, "Static parameter cannot be undeclared")
        elif p.type_ != Parameter.Type.NOT_SET and int(p.type_) != d.type:
            return _result(
                False,
                f"Wrong parameter type, expected '{_type_name(d.type)}' "
                f"got '{_type_name(p.type_)}'",
            )
        if p.type_ == Parameter.Type.INTEGER and len(d.integer_range):
            return _in_range(p, d.integer_range[0], exact=True)
        if p.type_ == Parameter.Type.DOUBLE and len(d.floating_point_range):
            return _in_range(p, d.floating_point_range[0], exact=False)
        return _result(True)


def _in_range(p: Parameter, r: Any, *, exact: bool) -> Any:
    lo, hi = min(r.from_value, r.to_value), max(r.from_value, r.to_value)
    v = p.value
    at_edge = v in (lo, hi) if exact else any(
        math.isclose(v, e, rel_tol=_REL_TOL) for e in (lo, hi)
    )  # fmt: skip
    if at_edge:
        return _result(True)
    if not lo < v < hi:
        sep = ". " if exact else " "  # rclpy's two messages differ so
        return _result(
            False, f"Parameter {p.name} out of range{sep}Min: {lo}, Max: {hi}, value: {v}"
        )
    if r.step:
        if exact:
            ok = (v - lo) % r.step == 0
        else:
            ok = math.isclose(lo + round((v - lo) / r.step) * r.step, v, rel_tol=_REL_TOL)
        if not ok:
            what = "is not a valid step" if exact else "is not close enough to a valid step"
            return _result(
                False,
                f"The parameter value for {p.name} {what}. "
                f"Min: {lo}, max: {hi}, value: {v}, step: {r.step}",
            )
    return _result(True)
