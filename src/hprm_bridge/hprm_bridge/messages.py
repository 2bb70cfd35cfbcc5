"""ROS 2 message classes as rclpy's code sees them, without ROS 2 installed.

A ported node keeps its ``from sensor_msgs.msg import Image``. Inside an HPRM
federate that import must work whether or not a real ROS 2 is installed,
and give classes that behave like rclpy's for the code that uses them:
default and keyword construction (an unknown keyword is the same
``AssertionError`` rclpy raises), nested messages of the same kind, field
assignment, equality, an rclpy-style ``repr`` and
``get_fields_and_field_types()``. They are built on the wire client's type
registry (every Humble type, plus ``.msg`` files found on disk). Numeric
sequences are ``array.array`` as in rclpy, or numpy arrays where their data is
in shared memory (``hprm_bridge.numeric_sequence`` says when): an ``Image``'s
``data`` crosses between federates by shared-memory reference, not by copy.

:func:`install` puts a finder first on ``sys.meta_path`` that answers
``import <pkg>.msg`` for every package the registry knows; HPRM federates
install it before importing node code. A plain ROS 2 process never does, and
keeps rclpy's classes.

Example::

    >>> from hprm_bridge import messages
    >>> String = messages.message_class("std_msgs/msg/String")
    >>> String(data="hi")
    std_msgs.msg.String(data='hi')
    >>> messages.message_class("sensor_msgs/msg/Image").get_fields_and_field_types()["data"]
    'sequence<uint8>'
"""

from __future__ import annotations

import array
import functools
import importlib.abc
import importlib.machinery
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

import numpy as np
from rosbags.interfaces import Nodetype

from hprm_bridge import message_pickle
from hprm_bridge.message_fields import TYPECODES, byte_field, checked_field, sequence_repr
from hprm_bridge.numeric_sequence import NumericSequence
from hprm_bridge.wire.typesys import TypeRegistry, default_registry

__all__ = [
    "action_class",
    "adopt",
    "install",
    "message_class",
    "message_module",
    "service_class",
    "uninstall",
]

_IDL_NAMES = {"float64": "double", "float32": "float", "byte": "octet", "char": "uint8",
              "bool": "boolean"}  # fmt: skip
_BASE, _NAME, _ARRAY, _SEQUENCE = Nodetype.BASE, Nodetype.NAME, Nodetype.ARRAY, Nodetype.SEQUENCE

_EMPTY_STRUCT_MEMBER = "structure_needs_at_least_one_member"
_lock = threading.RLock()
_classes: dict[str, type] = {}


def ros_type_name(msg_type: Any) -> str:
    """``pkg/msg/Name`` (or ``/srv/``, ``/action/``) of an interface class, HPRM's or
    rclpy's generated one, or of a type string in any of ROS 2's spellings.

    >>> ros_type_name("std_msgs/String")
    'std_msgs/msg/String'
    """
    from hprm_bridge.wire.naming import normalize_type_name
    from hprm_core.trigger import type_name

    return normalize_type_name(type_name(msg_type))


def message_class(ros_type: str, registry: TypeRegistry | None = None) -> type:
    """The class of ``pkg/msg/Name`` (one per type and process)."""
    cls = _classes.get(ros_type)  # the common case, a type already made: no lock
    if cls is not None:
        return cls
    reg = registry or default_registry()
    name = reg.resolve(ros_type)
    with _lock:
        cls = _classes.get(name)
        if cls is None:
            cls = _classes[name] = _make_class(name, reg)
        _classes[ros_type] = cls  # as spelled: found without resolving next time
        return cls


def service_class(srv_type: str, registry: TypeRegistry | None = None) -> type:
    """The class of service ``pkg/srv/Name``, as rosidl makes it: what ``create_service``
    and ``create_client`` take, its ``Request`` and ``Response`` message classes inside.

    Example::

        >>> AddTwoInts = service_class("example_interfaces/srv/AddTwoInts")
        >>> AddTwoInts.Request(a=2, b=3)
        example_interfaces.srv.AddTwoInts_Request(a=2, b=3)
    """
    cls = _classes.get(srv_type)
    if cls is not None:
        return cls
    reg = registry or default_registry()
    request, response = reg.service_halves(srv_type)
    name = request[: -len("_Request")]
    pkg, interface, short = name.split("/")  # interface: srv, or action for an action's two
    with _lock:
        cls = _classes.get(name)
        if cls is None:
            cls = _classes[name] = type(short, (), {
                "__module__": f"{pkg}.{interface}", "__qualname__": short, "_hprm_type": name,
                "Request": message_class(request, reg), "Response": message_class(response, reg),
            })  # fmt: skip
        _classes[srv_type] = cls
        return cls


def action_class(action_type: str, registry: TypeRegistry | None = None) -> type:
    """The class of action ``pkg/action/Name``, as rosidl makes it: its ``Goal``,
    ``Result`` and ``Feedback`` message classes, and in ``Impl`` the services and
    messages rcl_action sends (``SendGoalService``, ``GetResultService``,
    ``CancelGoalService``, ``FeedbackMessage``, ``GoalStatusMessage``).

    Example::

        >>> Fibonacci = action_class("example_interfaces/action/Fibonacci")
        >>> Fibonacci.Goal(order=5)
        example_interfaces.action.Fibonacci_Goal(order=5)
        >>> Fibonacci.Impl.SendGoalService.__name__
        'Fibonacci_SendGoal'
    """
    cls = _classes.get(action_type)
    if cls is not None:
        return cls
    reg = registry or default_registry()
    name = reg.resolve(action_type + "_Goal")[: -len("_Goal")]
    pkg, _, short = name.split("/")
    with _lock:
        cls = _classes.get(name)
        if cls is None:
            impl = type("Impl", (), {
                "SendGoalService": service_class(name + "_SendGoal", reg),
                "GetResultService": service_class(name + "_GetResult", reg),
                "CancelGoalService": service_class("action_msgs/srv/CancelGoal", reg),
                "FeedbackMessage": message_class(name + "_FeedbackMessage", reg),
                "GoalStatusMessage": message_class("action_msgs/msg/GoalStatusArray", reg),
            })  # fmt: skip
            cls = _classes[name] = type(short, (), {
                "__module__": f"{pkg}.action", "__qualname__": short, "_hprm_type": name,
                "Goal": message_class(name + "_Goal", reg),
                "Result": message_class(name + "_Result", reg),
                "Feedback": message_class(name + "_Feedback", reg),
                "Impl": impl,
            })  # fmt: skip
        _classes[action_type] = cls
        return cls


def message_module(package: str, registry: TypeRegistry | None = None) -> types.ModuleType:
    """A ``package.msg`` module whose attributes are the package's message classes
    (``package.srv``, ``package.action``: its service and action classes, through
    :func:`install`)."""
    return _interface_module(package, "msg", registry)


_KINDS: dict[str, tuple[Callable[[TypeRegistry], list[str]], Callable[..., type], str]] = {
    "msg": (TypeRegistry.known, message_class, "message"),
    "srv": (TypeRegistry.services, service_class, "service"),
    "action": (TypeRegistry.actions, action_class, "action"),
}


def _interface_module(package: str, kind: str, registry: TypeRegistry | None) -> types.ModuleType:
    reg = registry or default_registry()
    prefix = f"{package}/{kind}/"
    known, make, what = _KINDS[kind]
    names = sorted(t[len(prefix) :] for t in known(reg) if t.startswith(prefix))
    module = types.ModuleType(f"{package}.{kind}", f"ROS 2 {what}s of {package} (HPRM)")

    def __getattr__(attr: str) -> type:
        if attr in names:
            cls = make(prefix + attr, reg)
            setattr(module, attr, cls)
            return cls
        raise AttributeError(f"module '{package}.{kind}' has no {what} {attr!r}")

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__all__ = names
    return module


def _type_string(desc: tuple[Any, Any]) -> str:
    kind, rest = int(desc[0]), desc[1]
    if kind == _NAME:
        pkg, _, name = rest.split("/")
        return f"{pkg}/{name}"
    if kind == _BASE:
        base, bound = rest
        base = _IDL_NAMES.get(base, base)
        return f"{base}<{bound}>" if bound and base in ("string", "wstring") else base
    inner, n = rest
    if kind == _ARRAY:
        return f"{_type_string(inner)}[{n}]"
    return f"sequence<{_type_string(inner)}, {n}>" if n else f"sequence<{_type_string(inner)}>"


def _make_class(ros_type: str, reg: TypeRegistry) -> type:
    base = reg.message_class(ros_type)
    pkg, interface, name = ros_type.split("/")  # interface: msg, or srv for a service's half
    fields = reg.fields(ros_type)
    # the member rosidl gives an empty struct is DDS's, not Python's: rclpy's class has no
    # fields (it still travels, from the defaults below)
    slots = [f for f, _ in fields if f != _EMPTY_STRUCT_MEMBER]
    field_types = {f: _type_string(desc) for f, desc in fields if f in slots}
    sequences = {f for f, desc in fields if int(desc[0]) == _SEQUENCE}
    numeric = {  # numeric sequence fields: their array.array typecodes
        f: TYPECODES[desc[1][0][1][0]]
        for f, desc in fields
        if int(desc[0]) == _SEQUENCE
        and int(desc[1][0][0]) == _BASE
        and desc[1][0][1][0] in TYPECODES
    }

    # Defaults worked out once per class: immutable ones copied in as they are, the
    # rest (sequences, fixed-size arrays, lists, sub-messages) made fresh for every message.
    template = reg.new(ros_type)
    static: dict[str, Any] = {}
    fresh: list[tuple[str, Any]] = []
    nested: list[tuple[str, str]] = []  # sub-messages: their classes looked up once, at the first
    byte_fields = {f: k for f, k in ((f, byte_field(desc)) for f, desc in fields) if k}
    for f, desc in fields:
        value, kind = getattr(template, f), int(desc[0])
        if f in byte_fields:  # as rclpy holds them: bytes
            if kind == _BASE:
                static[f] = bytes((value,))
            else:
                fresh.append((f, functools.partial(list, [bytes((x,)) for x in value.tolist()])))
        elif kind == _NAME:
            nested.append((f, desc[1]))
        elif f in numeric:  # its definition's default items, if it has some
            items = value.tolist() if len(value) else ()
            # made by array's own __new__ for the field's typed class: no Python call (a
            # message is often built cold, right after a model ran: each call costs there)
            typed = type(NumericSequence(numeric[f]))
            fresh.append((f, functools.partial(array.array.__new__, typed, numeric[f], items)))
        elif isinstance(value, np.ndarray) and value.size == 0:
            value.flags.writeable = False
            static[f] = value
        elif isinstance(value, np.ndarray):
            fresh.append((f, value.copy))
        elif isinstance(value, list) and kind == _ARRAY and int(desc[1][0][0]) == _NAME:
            fresh.append((f, functools.partial(_new_messages, desc[1][0][1], reg, len(value))))
        elif isinstance(value, list):
            fresh.append((f, functools.partial(list, value)))
        else:
            static[f] = value

    makers: list[tuple[str, Any]] | None = None  # fresh, with the sub-messages' classes

    def __init__(self: Any, **kwargs: Any) -> None:
        nonlocal makers
        if kwargs:
            unknown = [k for k in kwargs if k not in field_types]
            if unknown:  # what rclpy's generated classes raise
                raise AssertionError(
                    f"Invalid arguments passed to constructor: {', '.join(sorted(unknown))}"
                )
        if makers is None:  # the first message: the nested classes exist by now
            makers = [(f, message_class(t, reg)) for f, t in nested] + fresh
        d = self.__dict__
        d.update(static)
        for f, make in makers:
            if f not in kwargs:
                d[f] = make()
        for f, v in kwargs.items():
            object.__setattr__(self, f, v)  # checked as an assignment (names: above)

    def __repr__(self: Any) -> str:
        inner = ", ".join(
            f"{f}={sequence_repr(v) if f in sequences else repr(v)}"
            for f, v in ((f, getattr(self, f)) for f in slots)
        )
        return f"{pkg}.{interface}.{name}({inner})"

    def __eq__(self: Any, other: Any) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        for f in slots:
            a, b = getattr(self, f), getattr(other, f)
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                if not np.array_equal(a, b):
                    return False
            elif a != b:
                return False
        return True

    def get_fields_and_field_types(cls: type) -> dict[str, str]:
        return dict(field_types)

    known = frozenset(f for f, _ in fields)  # the empty struct's member too (the codec sets it)

    def __setattr__(self: Any, attr: str, value: Any) -> None:
        # rclpy's classes have slots: a misspelt field (msg.linear.X = 1.0) is an error
        # there, not a new attribute that nothing reads
        if attr not in known and not attr.startswith("_"):
            raise AttributeError(f"'{name}' object has no attribute '{attr}'")
        object.__setattr__(self, attr, value)

    def __copy__(self: Any) -> Any:
        """Shallow, as ``copy.copy`` of rclpy's message: nested messages and sequences
        are shared (pickling's flat rebuild, which ``copy`` would otherwise use, is deep)."""
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out

    # Numeric array and sequence fields (numpy arrays always 1-D, of the field's dtype)
    arrays = {
        f: v.dtype for f, v in ((f, getattr(template, f)) for f, _ in fields)
        if isinstance(v, np.ndarray) and f not in byte_fields
    }  # fmt: skip

    checked = {f: checked_field(f, desc, lambda t: message_class(t, reg)) for f, desc in fields}
    cls = type(
        name,
        (base,),
        {
            **{f: prop for f, prop in checked.items() if prop is not None},
            # what rosidl_runtime_py reads (message_to_ordereddict, message_to_yaml...):
            # rclpy's slot names, each the field under its underscored name, SLOT_TYPES
            **{f"_{f}": _slot_alias(f) for f in slots},
            "SLOT_TYPES": _SlotTypes(),
            "__init__": __init__,
            "__repr__": __repr__,
            "__eq__": __eq__,
            "__setattr__": __setattr__,
            "__copy__": __copy__,
            "__hash__": None,
            "__module__": f"{pkg}.{interface}",
            "__qualname__": name,
            "get_fields_and_field_types": classmethod(get_fields_and_field_types),
            "__reduce_ex__": message_pickle.reduce,  # flat: message_pickle says why
            "_hprm_type": ros_type,
            "_hprm_fields": tuple(fields),
            "_hprm_arrays": arrays,
            "_hprm_sequences": numeric,
            "_hprm_bytes": byte_fields,
        },
    )
    # set once made: in the namespace it would make real slots (instances keep a __dict__)
    cls.__slots__ = [f"_{f}" for f in slots]  # type: ignore[attr-defined]
    return cls


def _slot_alias(field: str) -> property:
    """``msg._field``: rclpy's generated classes keep a field in that slot, and code that
    walks ``__slots__`` reads it there."""

    def get(self: Any) -> Any:
        return getattr(self, field)

    def set_(self: Any, value: Any) -> None:
        setattr(self, field, value)

    return property(get, set_)


class _SlotTypes:
    """``SLOT_TYPES`` of a message class: each field's type as rosidl_parser describes it
    (what rosidl_runtime_py walks), made at first use, where rosidl_parser is installed
    (it comes with ROS 2; nothing in a federate needs it otherwise)."""

    def __get__(self, obj: Any, cls: type) -> tuple[Any, ...]:
        made = cls.__dict__.get("_hprm_slot_types")
        if made is None:
            from rosidl_parser import definition

            made = tuple(_slot_type(definition, desc) for f, desc in cls._hprm_fields  # type: ignore[attr-defined]
                         if f != _EMPTY_STRUCT_MEMBER)  # fmt: skip
            type.__setattr__(cls, "_hprm_slot_types", made)
        return made


def _slot_type(definition: Any, desc: tuple[Any, Any]) -> Any:
    kind, rest = int(desc[0]), desc[1]
    if kind == _NAME:
        pkg, sub, name = rest.split("/")
        return definition.NamespacedType([pkg, sub], name)
    if kind == _BASE:
        base, bound = rest
        if base == "string":
            return definition.BoundedString(bound) if bound else definition.UnboundedString()
        return definition.BasicType(_IDL_NAMES.get(base, base))
    inner, n = rest
    item = _slot_type(definition, inner)
    if kind == _ARRAY:
        return definition.Array(item, n)
    return definition.BoundedSequence(item, n) if n else definition.UnboundedSequence(item)


def adopt(msg: Any) -> Any:
    """A message decoded by the wire client (a rosbags dataclass), as this
    module's class of the same type, in place: ours are subclasses with the
    same layout, so the class changes (nested messages too) and large fields
    stay as decoded, read-only numpy views of the CDR bytes. Small numeric
    arrays become the message's own, as rclpy's (and as they arrive from
    another federate: :func:`message_pickle.received_array`), so a callback may
    ``append`` to a sequence or write into it. What a bridge does with each
    message from ROS 2."""
    ros_type = getattr(type(msg), "__msgtype__", None)
    if ros_type is None:
        return msg
    cls = message_class(ros_type)
    if type(msg) is not cls:
        msg.__class__ = cls
        d = msg.__dict__
        for f, dtype in cls._hprm_arrays.items():
            d[f] = message_pickle.received_array(d[f], dtype, cls._hprm_sequences.get(f))
        for f, kind in cls._hprm_bytes.items():  # the codec's ints (int8 or uint8): bytes
            if kind == _BASE:
                d[f] = bytes((d[f] & 0xFF,))
            else:
                raw = np.asarray(d[f]).tobytes()
                d[f] = [raw[i : i + 1] for i in range(len(raw))]
        for value in d.values():
            if hasattr(type(value), "__msgtype__"):
                adopt(value)
            elif isinstance(value, list):
                for item in value:
                    adopt(item)
    return msg


def _new_messages(ros_type: str, reg: TypeRegistry, n: int) -> list[Any]:
    return [message_class(ros_type, reg)() for _ in range(n)]


class _MessageFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers ``import <pkg>.msg``, ``<pkg>.srv``, ``<pkg>.action`` (and the bare ``<pkg>``) for
    packages the registry knows, before any installed ROS 2 package could."""

    def __init__(self, registry: TypeRegistry | None) -> None:
        self.registry = registry
        self._packages: set[str] | None = None  # asked of every import: listed once

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        pkg, _, sub = fullname.partition(".")
        if sub and sub not in _KINDS:
            return None
        if self._packages is None:
            reg = self.registry or default_registry()
            every = [*reg.known(), *reg.services(), *reg.actions()]
            self._packages = {t.split("/", 1)[0] for t in every}
        if pkg not in self._packages:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=not sub)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        pkg, _, sub = spec.name.partition(".")
        if sub:
            return _interface_module(pkg, sub, self.registry)
        module = types.ModuleType(pkg, f"ROS 2 interfaces of {pkg} (HPRM)")
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


_finder: _MessageFinder | None = None


def install(registry: TypeRegistry | None = None) -> None:
    """Make ``import <pkg>.msg`` give this module's classes in this process
    (idempotent). Modules of those packages imported before stay as they were."""
    global _finder
    with _lock:
        if _finder is None:
            _finder = _MessageFinder(registry)
            sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    """Undo :func:`install`; forget the message modules it created."""
    global _finder
    with _lock:
        if _finder is None:
            return
        sys.meta_path.remove(_finder)
        for name, module in list(sys.modules.items()):
            spec = getattr(module, "__spec__", None)
            if spec is not None and spec.loader is _finder:
                del sys.modules[name]
        _finder = None
