"""A node's parameters: declared values, their descriptors, the set callbacks.

The rules are rclpy's (Humble), because node code relies on them: a value
given from outside (``--params-file``, ``-p``, ``parameter_overrides``)
replaces the default at declaration, if its type agrees; a parameter keeps
its declared type unless its descriptor allows ``dynamic_typing``;
``read_only``, ``integer_range`` and ``floating_point_range`` are checked on
every set; callbacks added with ``add_on_set_parameters_callback`` (newest
first) may refuse a change with a reason, a declaration included; setting an
undeclared parameter raises, unless the node allows undeclared parameters
(then it is declared, dynamically typed). :class:`~hprm_bridge.rclpy.node.Node`
delegates to this object.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

from hprm_bridge import messages
from hprm_bridge.rclpy.exceptions import (
    InvalidParameterException,
    InvalidParameterTypeException,
    InvalidParameterValueException,
    ParameterAlreadyDeclaredException,
    ParameterImmutableException,
    ParameterNotDeclaredException,
    ParameterUninitializedException,
)
from hprm_bridge.rclpy.parameter import Parameter

_REL_TOL = 1e-6  # rclpy's Node.PARAM_REL_TOL


def _result(successful: bool, reason: str = "") -> Any:
    cls = messages.message_class("rcl_interfaces/msg/SetParametersResult")
    return cls(successful=successful, reason=reason)


def _descriptor_class() -> Any:
    return messages.message_class("rcl_interfaces/msg/ParameterDescriptor")


def _descriptor(**fields: Any) -> Any:
    return _descriptor_class()(**fields)


def _type_name(t: Any) -> str:
    return f"Type.{Parameter.Type(t).name}"  # as rclpy's (Enum) Parameter.Type prints


class NodeParameters:
    def __init__(
        self, node_name: str, overrides: dict[str, Any], *, allow_undeclared: bool = False
    ) -> None:
        self._node = node_name
        self.overrides = overrides
        # Node(allow_undeclared_parameters=True): reads of an undeclared name answer NOT_SET,
        # and a set declares it (dynamically typed)
        self.allow_undeclared = allow_undeclared
        self.values: dict[str, Parameter] = {}
        self.descriptors: dict[str, Any] = {}
        self.callbacks: list[Callable[[list[Parameter]], Any]] = []
        # told of every change once made, as (new, changed, deleted): what rclpy
        # publishes on /parameter_events (the node's, when it has node services)
        self.on_change: Callable[[list[Parameter], list[Parameter], list[Parameter]], None] = (
            lambda new, changed, deleted: None
        )

    # -- declaring -------------------------------------------------------------------

    def declare(
        self, namespace: str, entries: list[tuple[Any, ...]], ignore_override: bool
    ) -> list[Parameter]:
        """rclpy's ``declare_parameters``. An entry is ``(name,)`` (dynamically typed:
        deprecated, and warned of, in Humble), ``(name, Parameter.Type.X)`` (statically
        typed, no value until one is given or set) or ``(name, value[, descriptor])``
        (typed by the value unless the descriptor says ``dynamic_typing``). An override
        replaces the value and must have the declared type (a ``-p speed:=3`` for a
        float parameter is refused, as Humble refuses it). The declarations pass the
        set callbacks; a refused one raises, and those after it are not declared."""
        params: list[Parameter] = []
        descriptors: dict[str, Any] = {}
        for index, entry in enumerate(entries):
            if not 1 <= len(entry) <= 3:
                raise TypeError(
                    f"parameter {index} of the list is {entry!r}: a declaration is (name,), "
                    "(name, type) or (name, value[, descriptor])"
                )
            name, second = entry[0], entry[1] if len(entry) > 1 else None
            descriptor = entry[2] if len(entry) > 2 else _descriptor()
            if not isinstance(name, str):
                raise TypeError(f"parameter {index} of the list is named {name!r}, not a str")
            if not isinstance(descriptor, _descriptor_class()):
                raise TypeError(
                    f"parameter {index} ({name}) has {descriptor!r} for its descriptor, not a "
                    "ParameterDescriptor"
                )
            value = None
            if len(entry) == 1:
                warnings.warn(
                    f"parameter {name!r} is declared by name only (deprecated in Humble): give "
                    "it a default value, a Parameter.Type, or a descriptor with "
                    "dynamic_typing=True",
                    stacklevel=3,
                )
                descriptor.dynamic_typing = True
            if isinstance(second, Parameter.Type):
                if second == Parameter.Type.NOT_SET:
                    raise ValueError(f"parameter {name!r}: a static type cannot be NOT_SET")
                if descriptor.dynamic_typing:
                    raise ValueError(
                        f"parameter {name!r}: given a type and a descriptor with "
                        "dynamic_typing=True (one or the other)"
                    )
                descriptor.type = int(second)
            else:
                value = second
                if value is not None and not descriptor.dynamic_typing:
                    descriptor.type = int(Parameter.Type.from_parameter_value(value))
            if not ignore_override and name in self.overrides:
                value = self.overrides[name]
            name = f"{namespace}.{name}" if namespace else name
            if not name:
                raise InvalidParameterException(name)
            params.append(Parameter(name, value=value))
            descriptors[name] = descriptor
        already = [p.name for p in params if p.name in self.values]
        if already:
            raise ParameterAlreadyDeclaredException(already)
        for p in params:
            result = self._set([p], descriptors, keep_unset=True)
            if not result.successful:
                if result.reason.startswith("Wrong parameter type"):
                    expected = Parameter.Type(descriptors[p.name].type).name
                    raise InvalidParameterTypeException(p, expected)
                raise InvalidParameterValueException(p.name, p.value, result.reason)
        return [self.values[p.name] for p in params]

    def undeclare(self, name: str) -> None:
        if name not in self.values:
            raise ParameterNotDeclaredException([name])
        if self.descriptors[name].read_only:
            raise ParameterImmutableException(name)
        del self.values[name], self.descriptors[name]
        self.on_change([], [], [Parameter(name)])

    # -- reading ---------------------------------------------------------------------

    def get(self, name: str) -> Parameter:
        """A declared parameter; one statically typed and still without a value raises
        (dynamically typed, it reads as NOT_SET)."""
        if name in self.values:
            p = self.values[name]
            if p.type_ != Parameter.Type.NOT_SET or self.descriptors[name].dynamic_typing:
                return p
            raise ParameterUninitializedException(name)
        if self.allow_undeclared:
            return Parameter(name, Parameter.Type.NOT_SET, None)
        raise ParameterNotDeclaredException(name)

    def get_or(self, name: str, alternative: Parameter) -> Parameter:
        p = self.values.get(name)
        return alternative if p is None or p.type_ == Parameter.Type.NOT_SET else p

    def get_type(self, name: str) -> Any:
        if name in self.values:
            return int(self.values[name].type_)  # an int, as rclpy's (its NOT_SET below is not)
        if self.allow_undeclared:
            return Parameter.Type.NOT_SET
        raise ParameterNotDeclaredException(name)

    def describe(self, name: str) -> Any:
        if name in self.descriptors:
            return self.descriptors[name]
        if self.allow_undeclared:
            return _descriptor()
        raise ParameterNotDeclaredException(name)

    def set_descriptor(self, name: str, descriptor: Any, alternative: Any) -> Any:
        """rclpy's ``set_descriptor``: the parameter keeps its value if the new descriptor
        allows it, else takes ``alternative`` (a ParameterValue) if that is allowed, else
        raises; no set callback runs. Its ParameterValue after."""
        if name not in self.values:
            if self.allow_undeclared:
                return self.get(name).get_parameter_value()
            raise ParameterNotDeclaredException(name)
        if self.descriptors[name].read_only:
            raise ParameterImmutableException(name)
        current = self.get(name)
        tries = [current]
        if alternative is not None:
            param_msg = messages.message_class("rcl_interfaces/msg/Parameter")
            tries.append(Parameter.from_parameter_msg(param_msg(name=name, value=alternative)))
        for p in tries:
            result = self._check(p, descriptor, check_read_only=False)
            if result.successful:
                self.values[name] = p
                break
        else:
            raise InvalidParameterValueException(name, tries[-1].value, result.reason)
        self.descriptors[name] = descriptor
        return self.get(name).get_parameter_value()

    # -- setting ---------------------------------------------------------------------

    def set_each(self, params: list[Parameter]) -> list[Any]:
        """``set_parameters``: one by one; an undeclared one raises (unless undeclared
        parameters are allowed), and those after it are not tried (those before stay set)."""
        results = []
        for p in params:
            self._require_declared([p])
            results.append(self._set([p]))
        return results

    def set_atomically(self, params: list[Parameter]) -> Any:
        """All or none: descriptors, then the callbacks (newest first)."""
        self._require_declared(params)
        return self._set(params)

    def _set(
        self, params: list[Parameter], descriptors: dict[str, Any] | None = None,
        *, keep_unset: bool = False,
    ) -> Any:  # fmt: skip
        """Check ``params`` against ``descriptors`` (new ones: a declaration) or the
        stored ones (read-only checked), ask the callbacks, then store them. A NOT_SET
        value deletes its parameter, unless ``keep_unset`` (a declaration without a
        value). A name without a descriptor (an undeclared one, where allowed) is
        stored dynamically typed."""
        table = self.descriptors if descriptors is None else descriptors
        for p in params:
            if p.name in table:
                result = self._check(p, table[p.name], check_read_only=descriptors is None)
                if not result.successful:
                    return result
        for callback in list(self.callbacks):
            result = callback(list(params))
            if not result.successful:
                return result
        new, changed, deleted = [], [], []
        for p in params:
            if p.type_ == Parameter.Type.NOT_SET and not keep_unset:
                self.values.pop(p.name, None)
                self.descriptors.pop(p.name, None)
                deleted.append(p)
                continue
            if descriptors is not None:
                self.descriptors[p.name] = descriptors[p.name]
            elif p.name not in self.descriptors:
                self.descriptors[p.name] = _descriptor(dynamic_typing=True)
            old = self.values.get(p.name)
            (new if old is None or old.type_ == Parameter.Type.NOT_SET else changed).append(p)
            self.values[p.name] = p
        self.on_change(new, changed, deleted)
        return _result(True)

    def _require_declared(self, params: list[Parameter]) -> None:
        if not all(isinstance(p, Parameter) for p in params):
            raise TypeError(f"parameter must be instance of type '{Parameter!r}'")
        missing = [p.name for p in params if p.name not in self.values]
        if missing and not self.allow_undeclared:
            raise ParameterNotDeclaredException(missing)

    def _check(self, p: Parameter, d: Any, check_read_only: bool) -> Any:
        d.name = p.name
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


class NodeParameterMethods:
    """rclpy's parameter methods of ``Node``: each hands over to the node's
    :class:`NodeParameters` (``self._params``), where rclpy's rules live."""

    _params: NodeParameters
    PARAM_REL_TOL = _REL_TOL  # a float parameter's range ends and steps, within this

    def declare_parameter(
        self, name: str, value: Any = None, descriptor: Any = None, ignore_override: bool = False
    ) -> Parameter:
        if value is None and descriptor is None:
            entry: tuple[Any, ...] = (name,)  # dynamically typed, as rclpy's
        else:
            entry = (name, value, _descriptor() if descriptor is None else descriptor)
        return self._params.declare("", [entry], ignore_override)[0]

    def declare_parameters(
        self, namespace: str, parameters: list[tuple[Any, ...]], ignore_override: bool = False
    ) -> list[Parameter]:
        return self._params.declare(namespace, list(parameters), ignore_override)

    def has_parameter(self, name: str) -> bool:
        return name in self._params.values

    def get_parameter(self, name: str) -> Parameter:
        return self._params.get(name)

    def get_parameter_or(self, name: str, alternative_value: Any = None) -> Parameter:
        if alternative_value is None:
            alternative_value = Parameter(name, Parameter.Type.NOT_SET)
        return self._params.get_or(name, alternative_value)

    def get_parameters(self, names: list[str]) -> list[Parameter]:
        return [self.get_parameter(n) for n in names]

    def get_parameter_type(self, name: str) -> Any:
        return self._params.get_type(name)

    def get_parameter_types(self, names: list[str]) -> list[Any]:
        return [self._params.get_type(n) for n in names]

    def get_parameters_by_prefix(self, prefix: str) -> dict[str, Parameter]:
        start = f"{prefix}." if prefix else ""
        return {k[len(start) :]: v for k, v in self._params.values.items() if k.startswith(start)}

    def set_parameters(self, parameter_list: list[Parameter]) -> list[Any]:
        return self._params.set_each(parameter_list)

    def set_parameters_atomically(self, parameter_list: list[Parameter]) -> Any:
        return self._params.set_atomically(parameter_list)

    def undeclare_parameter(self, name: str) -> None:
        self._params.undeclare(name)

    def describe_parameter(self, name: str) -> Any:
        return self._params.describe(name)

    def set_descriptor(self, name: str, descriptor: Any, alternative_value: Any = None) -> Any:
        return self._params.set_descriptor(name, descriptor, alternative_value)

    def describe_parameters(self, names: list[str]) -> list[Any]:
        return [self._params.describe(n) for n in names]

    def add_on_set_parameters_callback(self, callback: Callable[[list[Parameter]], Any]) -> None:
        self._params.callbacks.insert(0, callback)  # newest first, as rclpy

    def remove_on_set_parameters_callback(self, callback: Callable[[list[Parameter]], Any]) -> None:
        self._params.callbacks.remove(callback)


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
