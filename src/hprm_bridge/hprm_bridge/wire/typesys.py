"""Message types: ROS 2 Humble's definitions plus ``.msg`` files found on disk.

* Built in: every type of rosbags' ``Stores.ROS2_HUMBLE`` store (the message
  definitions of the Humble release: std_msgs, sensor_msgs, geometry_msgs,
  rmw_dds_common, ...).
* Found on disk: ``<prefix>/share/<pkg>/msg/<Type>.msg`` for every prefix of
  ``AMENT_PREFIX_PATH`` (the ament resource layout: ament_cmake installs
  interfaces there, see ament_index and rosidl_default_generators), plus paths
  given by the caller: a ``.msg`` file (``.../<pkg>/msg/<Type>.msg``), a
  package directory holding ``msg/``, or a directory of package directories
  (a ``share/`` or a workspace ``src/``). The ``.msg`` grammar is parsed by
  rosbags (``get_types_from_msg``), which follows the rosidl_adapter rules
  (ROS 2 design article "Interface definition": types, bounds, defaults,
  constants).

Services (``pkg/srv/Name``) the same way: ``<pkg>/srv/<Name>.srv`` files next to the
``msg/`` directories, plus the few Humble services nodes call most (std_srvs,
example_interfaces' AddTwoInts, action_msgs' CancelGoal: rosbags' store holds messages
only). A service's halves are the message types ``pkg/srv/Name_Request`` and
``pkg/srv/Name_Response``, as rosidl generates them.

Actions (``pkg/action/Name``) from ``<pkg>/action/<Name>.action`` files (and
example_interfaces' Fibonacci built in): as rosidl, an action gives the messages
``Name_Goal``, ``Name_Result``, ``Name_Feedback`` and ``Name_FeedbackMessage`` and the
services ``Name_SendGoal`` and ``Name_GetResult``, all under ``pkg/action/``: what
rcl_action sends on the wire (see :data:`ACTION_PARTS`).

Types load lazily, with their dependencies, the first time a name is asked
for; a missing dependency or a parse error names the file and the type chain.
Messages are rosbags' plain dataclasses; numeric arrays and sequences are
numpy arrays.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from . import cdr, field_defaults
from .errors import MsgParseError, UnknownTypeError
from .naming import InvalidNameError, normalize_type_name

if TYPE_CHECKING:
    from .idl import IdlCache

_NUMPY: dict[str, Any] = {
    "bool": np.bool_,
    "byte": np.uint8,
    "char": np.uint8,
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "uint16": np.uint16,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
    "float32": np.float32,
    "float64": np.float64,
}


# Humble services that nodes call most, as their .srv files say (without comments);
# a sourced ROS 2, or a package's srv/ directory, brings any other.
_HUMBLE_SERVICES = {
    "example_interfaces/srv/AddTwoInts": "int64 a\nint64 b\n---\nint64 sum\n",
    "std_srvs/srv/Empty": "---\n",
    "std_srvs/srv/SetBool": "bool data\n---\nbool success\nstring message\n",
    "std_srvs/srv/Trigger": "---\nbool success\nstring message\n",
    "action_msgs/srv/CancelGoal": (
        "action_msgs/GoalInfo goal_info\n---\nint8 ERROR_NONE=0\nint8 ERROR_REJECTED=1\n"
        "int8 ERROR_UNKNOWN_GOAL_ID=2\nint8 ERROR_GOAL_TERMINATED=3\nint8 return_code\n"
        "action_msgs/GoalInfo[] goals_canceling\n"
    ),
    # a lifecycle node's services (rclpy.lifecycle, lifecycle managers, ros2 lifecycle)
    "lifecycle_msgs/srv/ChangeState": "lifecycle_msgs/Transition transition\n---\nbool success\n",
    "lifecycle_msgs/srv/GetState": "---\nlifecycle_msgs/State current_state\n",
    "lifecycle_msgs/srv/GetAvailableStates": "---\nlifecycle_msgs/State[] available_states\n",
    "lifecycle_msgs/srv/GetAvailableTransitions": (
        "---\nlifecycle_msgs/TransitionDescription[] available_transitions\n"
    ),
    # every node's parameter services (ros2 param; a node calling another's)
    "rcl_interfaces/srv/DescribeParameters": (
        "string[] names\n---\nrcl_interfaces/ParameterDescriptor[] descriptors\n"
    ),
    "rcl_interfaces/srv/GetParameters": (
        "string[] names\n---\nrcl_interfaces/ParameterValue[] values\n"
    ),
    "rcl_interfaces/srv/GetParameterTypes": "string[] names\n---\nuint8[] types\n",
    "rcl_interfaces/srv/ListParameters": (
        "uint64 DEPTH_RECURSIVE=0\nstring[] prefixes\nuint64 depth\n---\n"
        "rcl_interfaces/ListParametersResult result\n"
    ),
    "rcl_interfaces/srv/SetParameters": (
        "rcl_interfaces/Parameter[] parameters\n---\nrcl_interfaces/SetParametersResult[] results\n"
    ),
    "rcl_interfaces/srv/SetParametersAtomically": (
        "rcl_interfaces/Parameter[] parameters\n---\nrcl_interfaces/SetParametersResult result\n"
    ),
}
_HUMBLE_ACTIONS = {  # the ROS 2 tutorials' action
    "example_interfaces/action/Fibonacci": (
        "int32 order\n---\nint32[] sequence\n---\nint32[] sequence\n"
    ),
}
# What rosidl derives from an action pkg/action/Name: the types rcl_action sends, each as
# .msg text ({} is pkg/action/Name); the three parts of the .action file come first.
_UUID = "unique_identifier_msgs/UUID goal_id\n"
ACTION_PARTS = {
    "_SendGoal_Request": _UUID + "{}_Goal goal\n",
    "_SendGoal_Response": "bool accepted\nbuiltin_interfaces/Time stamp\n",
    "_GetResult_Request": _UUID,
    "_GetResult_Response": "int8 status\n{}_Result result\n",
    "_FeedbackMessage": _UUID + "{}_Feedback feedback\n",
}
_ACTION_SECTIONS = ("_Goal", "_Result", "_Feedback")
_HALVES = ("_Request", "_Response")
_KINDS = ("msg", "srv", "action")
_EMPTY = "uint8 structure_needs_at_least_one_member\n"  # what rosidl gives an empty struct
# what a .srv and an .action file hold: (built-ins, what, its parts, how they are cut)
_SECTIONED: dict[str, tuple[dict[str, str], str, tuple[str, ...], str]] = {
    "srv": (_HUMBLE_SERVICES, "service", _HALVES,
            "a service has one '---' line between its request and its response"),
    "action": (_HUMBLE_ACTIONS, "action", _ACTION_SECTIONS,
               "an action has two '---' lines between its goal, result and feedback"),
}  # fmt: skip


def _index_msg_files(paths: Iterable[str | os.PathLike[str]]) -> dict[str, Path]:
    """Map ``pkg/msg/Type`` to the ``.msg`` file defining it, ``pkg/srv/Name`` to its
    ``.srv`` file and ``pkg/action/Name`` to its ``.action`` file; first path wins."""
    found: dict[str, Path] = {}

    def add(msg_file: Path, pkg: str) -> None:
        found.setdefault(f"{pkg}/{msg_file.suffix[1:]}/{msg_file.stem}", msg_file)

    def add_package(pkg_dir: Path) -> None:
        for kind in _KINDS:
            if (pkg_dir / kind).is_dir():
                for f in sorted((pkg_dir / kind).glob(f"*.{kind}")):
                    add(f, pkg_dir.name)

    for raw in paths:
        p = Path(raw)
        if p.is_file() and p.suffix[1:] in _KINDS:
            add(p, p.parent.parent.name)
        elif any((p / kind).is_dir() for kind in _KINDS):
            add_package(p)
        elif (p / "share").is_dir():  # an install prefix
            for pkg in sorted((p / "share").iterdir()):
                add_package(pkg)
        elif p.is_dir():
            for pkg in sorted(p.iterdir()):
                if pkg.is_dir():
                    add_package(pkg)
    return found


def ament_msg_paths(env: dict[str, str] | None = None) -> list[Path]:
    """The ``share`` directories of every ``AMENT_PREFIX_PATH`` prefix that exists."""
    value = (env if env is not None else os.environ).get("AMENT_PREFIX_PATH", "")
    return [
        Path(p) / "share" for p in value.split(os.pathsep) if p and (Path(p) / "share").is_dir()
    ]


class TypeRegistry:
    """ROS 2 Humble message types plus user ``.msg`` packages; encodes and decodes CDR.

    Example::

        types = TypeRegistry(msg_paths=["~/ws/src/my_msgs"])
        Image = types.message_class("sensor_msgs/msg/Image")
        img = types.new("sensor_msgs/msg/Image", height=1, width=3, step=3,
                        encoding="mono8", data=np.arange(3, dtype=np.uint8))
        raw = types.encode(img, "sensor_msgs/msg/Image")   # XCDR1 bytes
        back = types.decode(raw, "sensor_msgs/msg/Image")
    """

    def __init__(
        self,
        msg_paths: Iterable[str | os.PathLike[str]] = (),
        *,
        use_ament_prefix_path: bool = True,
    ) -> None:
        self.store = get_typestore(Stores.ROS2_HUMBLE)
        search = [Path(os.path.expanduser(str(p))) for p in msg_paths]
        if use_ament_prefix_path:
            search += ament_msg_paths()
        self._files = _index_msg_files(search)
        self._idl: IdlCache | None = None  # DDS declarations: made on first use (idl_struct)
        self._lock = threading.RLock()
        self._resolved: dict[str, str] = {}  # name as asked -> canonical (resolve)
        self._dds_names: dict[str, str] = {}  # define(dds_name=)
        # fields' default values, from their definitions (the store keeps none)
        self._defaults = {t: dict(d) for t, d in field_defaults.HUMBLE.items()}

    def known(self) -> list[str]:
        """Every message type name this registry can resolve (built in or found on disk)."""
        messages = {t for t in self._files if "/msg/" in t}
        return sorted(set(self.store.fielddefs) | messages)

    def services(self) -> list[str]:
        """Every service type (``pkg/srv/Name``) this registry knows."""
        return sorted({t for t in self._files if "/srv/" in t} | set(_HUMBLE_SERVICES))

    def actions(self) -> list[str]:
        """Every action type (``pkg/action/Name``) this registry knows."""
        return sorted({t for t in self._files if "/action/" in t} | set(_HUMBLE_ACTIONS))

    def service_halves(self, srv_type: str) -> tuple[str, str]:
        """The request and response message types of ``srv_type``, loaded."""
        name = normalize_type_name(srv_type)
        return self.resolve(name + _HALVES[0]), self.resolve(name + _HALVES[1])

    def resolve(self, ros_type: str) -> str:
        """Canonical name of a loadable type; loads it and its dependencies if needed."""
        name = self._resolved.get(ros_type)  # every message's encode and decode asks
        if name is not None:
            return name
        try:
            name = normalize_type_name(ros_type)
        except InvalidNameError as exc:
            raise UnknownTypeError(str(exc)) from None
        with self._lock:
            if name not in self.store.fielddefs:
                self._load(name, chain=())
            self._resolved[ros_type] = name
        return name

    def _load(self, name: str, chain: tuple[str, ...]) -> None:
        if "/action/" in name:
            self._load_action(name, chain)
            return
        if "/srv/" in name and name.endswith(_HALVES):
            self._load_service(name.rsplit("_", 1)[0], chain)
            return
        if "/srv/" in name and (name in self._files or name in _HUMBLE_SERVICES):
            raise UnknownTypeError(
                f"{name} is a service, not a message type: its messages are {name}_Request "
                f"and {name}_Response"
            )
        path = self._files.get(name)
        if path is None:
            via = f" (needed by {' <- '.join(reversed(chain))})" if chain else ""
            raise UnknownTypeError(
                f"unknown message type {name!r}{via}: not in the ROS 2 Humble store and no "
                f"{name.split('/')[-1]}.msg under AMENT_PREFIX_PATH or the given msg paths"
            )
        try:
            text = path.read_text()
            typs = get_types_from_msg(text, name)
            defaults = field_defaults.parse(text)
        except Exception as exc:
            raise MsgParseError(f"cannot parse {path} as {name}: {exc}") from exc
        if defaults:
            self._defaults[name] = defaults
        for _name, desc in typs[name][1]:
            for dep in _named_deps(desc):
                if dep not in self.store.fielddefs and dep != name:
                    self._load(dep, (*chain, name))
        self.store.register(typs)

    def _load_service(self, srv_type: str, chain: tuple[str, ...]) -> None:
        self._define_sections(srv_type, "srv", chain)

    def _load_action(self, name: str, chain: tuple[str, ...]) -> None:
        """Define every type of the action that ``name`` (one of them) belongs to."""
        ends = sorted([*_ACTION_SECTIONS, *ACTION_PARTS], key=len, reverse=True)
        end = next((e for e in ends if name.endswith(e)), None)
        action = name[: -len(end)] if end else name
        self._define_sections(action, "action", chain)
        if end is None:
            raise UnknownTypeError(
                f"{action} is an action, not a message type: its messages are {action}_Goal, "
                f"{action}_Result and {action}_Feedback"
            )
        for suffix, fields in ACTION_PARTS.items():
            self.define(action + suffix, fields.format(action))

    def _define_sections(self, name: str, kind: str, chain: tuple[str, ...]) -> None:
        """Define the messages of a ``.srv`` or ``.action`` file (or a built-in one): its
        parts between ``---`` lines, each ``name`` + its suffix; an empty part gets the
        member rosidl gives an empty struct."""
        builtin, what, suffixes, between = _SECTIONED[kind]
        path = self._files.get(name)
        text = builtin.get(name) if path is None else path.read_text()
        if text is None:
            via = f" (needed by {' <- '.join(reversed(chain))})" if chain else ""
            raise UnknownTypeError(
                f"unknown {what} type {name!r}{via}: no {name.split('/')[-1]}.{kind} "
                "under AMENT_PREFIX_PATH or the given msg paths"
            )
        lines = text.splitlines()
        cut = [i for i, line in enumerate(lines) if line.split("#", 1)[0].strip() == "---"]
        if len(cut) != len(suffixes) - 1:
            raise MsgParseError(f"cannot parse {path or name}: {between}, found {len(cut)}")
        bounds = [-1, *cut, len(lines)]
        for suffix, start, end in zip(suffixes, bounds, bounds[1:], strict=False):
            part = lines[start + 1 : end]
            has_field = any(line.split("#", 1)[0].strip() for line in part)
            self.define(name + suffix, "\n".join(part) + "\n" if has_field else _EMPTY)

    def define(self, ros_type: str, text: str, *, dds_name: str | None = None) -> str:
        """Add ``ros_type`` from ``.msg`` text (its named fields must be known or
        loadable); a type already known is kept. ``dds_name``: its DDS type name, where
        that is not the one its name gives (rmw's service envelopes: their DDS name is the
        half's, their fields the half's after rmw's request header)."""
        name = normalize_type_name(ros_type)
        with self._lock:
            if dds_name is not None:
                self._dds_names[name] = dds_name
            if name in self.store.fielddefs:
                return name
            pkg, _, short = name.split("/")
            as_msg = f"{pkg}/msg/{short}"  # rosbags resolves relative names under pkg/msg only
            try:
                typs = {name: get_types_from_msg(text, as_msg)[as_msg]}
                defaults = field_defaults.parse(text)
            except Exception as exc:
                raise MsgParseError(f"cannot parse the definition of {name}: {exc}") from exc
            if defaults:
                self._defaults[name] = defaults
            for _name, desc in typs[name][1]:
                for dep in _named_deps(desc):
                    if dep not in self.store.fielddefs:
                        self._load(dep, (name,))
            self.store.register(typs)
        return name

    def message_class(self, ros_type: str) -> type:
        """The dataclass of ``ros_type`` (fields in definition order)."""
        return self.store.types[self.resolve(ros_type)]

    def fields(self, ros_type: str) -> list[tuple[str, Any]]:
        """``(name, description)`` of each field, as rosbags describes them."""
        return list(self.store.fielddefs[self.resolve(ros_type)][1])

    def msg_definition(self, ros_type: str) -> str:
        """ROS 2 ``.msg`` text of a type (fields only), e.g. to hand other tools the definitions.

        Constants are not reproduced; field types use ``.msg`` syntax
        (``uint8[]``, ``float64[9]``, ``string<=256``, ``pkg/Type``).
        """
        name = self.resolve(ros_type)
        return "".join(
            f"{_msg_type(desc)} {fname}\n" for fname, desc in self.store.fielddefs[name][1]
        )

    def write_msg_tree(self, root: str | os.PathLike[str], ros_types: Iterable[str]) -> list[Path]:
        """Write ``<root>/<pkg>/msg/<Type>.msg`` and ``package.xml`` for the types and deps."""
        todo, done, written = [self.resolve(t) for t in ros_types], set(), []
        deps: dict[str, set[str]] = {}
        while todo:
            name = todo.pop()
            if name in done:
                continue
            done.add(name)
            pkg, _, typ = name.split("/")
            path = Path(root) / pkg / "msg" / f"{typ}.msg"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.msg_definition(name))
            written.append(path)
            pkg_deps = deps.setdefault(pkg, set())
            for _f, desc in self.store.fielddefs[name][1]:
                for dep in _named_deps(desc):
                    todo.append(dep)
                    if dep.split("/")[0] != pkg:
                        pkg_deps.add(dep.split("/")[0])
        for pkg, pkg_deps in deps.items():  # tools that read packages want a manifest
            depends = "".join(f"<depend>{d}</depend>" for d in sorted(pkg_deps))
            manifest = Path(root) / pkg / "package.xml"
            manifest.write_text(
                f'<?xml version="1.0"?><package format="3"><name>{pkg}</name>'
                f"<version>0.0.0</version><description>{pkg}</description>"
                f'<maintainer email="none@example.com">none</maintainer><license>none</license>'
                f"{depends}</package>\n"
            )
            written.append(manifest)
        return written

    def new(self, ros_type: str, **values: Any) -> Any:
        """A message with ROS 2 default values for unset fields: its definition's
        (``float64 w 1``), else zeros, ``''``, empty arrays."""
        name = self.resolve(ros_type)
        given = self._defaults.get(name, {})
        kwargs: dict[str, Any] = {}
        for fname, desc in self.store.fielddefs[name][1]:
            attr = _attr(fname)
            if attr in values:
                kwargs[attr] = _as_field(values.pop(attr), desc)
            elif fname in given:
                value = given[fname]
                kwargs[attr] = _as_field(list(value) if isinstance(value, list) else value, desc)
            else:
                kwargs[attr] = self._default(desc)
        if values:
            raise TypeError(f"{name} has no field(s) {sorted(values)}")
        return self.store.types[name](**kwargs)

    def _default(self, desc: tuple[Any, Any]) -> Any:
        kind = desc[0].name
        if kind == "BASE":
            base = desc[1][0]
            if base == "string":
                return ""
            if base == "bool":
                return False
            return 0.0 if base.startswith("float") else 0
        if kind == "NAME":
            return self.new(desc[1])
        sub, count = desc[1]
        if sub[0].name == "BASE" and sub[1][0] in _NUMPY:
            n = count if kind == "ARRAY" else 0
            return np.zeros(n, dtype=_NUMPY[sub[1][0]])
        if kind == "ARRAY":
            return [self._default(sub) for _ in range(count)]
        return []

    def encode(self, message: Any, ros_type: str, *, pad: bool = True) -> memoryview:
        """XCDR1 bytes of ``message`` (see :mod:`.cdr`)."""
        return cdr.encode(self.store, message, self.resolve(ros_type), pad=pad)

    def decode(self, raw: bytes | memoryview, ros_type: str) -> Any:
        """Message from XCDR1 bytes; raises ``MalformedSampleError`` on bad input."""
        return cdr.decode(self.store, raw, self.resolve(ros_type))

    def idl_struct(self, ros_type: str) -> type:
        """The cyclonedds ``IdlStruct`` declaring ``ros_type`` as ``pkg::msg::dds_::Type_``."""
        name = self.resolve(ros_type)
        with self._lock:
            if self._idl is None:
                # Imported here: cyclonedds takes a quarter of a second to import, and a
                # ported node needs message types, never their DDS declarations.
                from .idl import IdlCache

                self._idl = IdlCache(self.store)
            return self._idl.struct(name, self._dds_names.get(name))


def _as_field(value: Any, desc: tuple[Any, Any]) -> Any:
    """A list given for a numeric array or sequence, as the numpy array the codec wants."""
    if isinstance(value, list) and desc[0].name in ("ARRAY", "SEQUENCE"):
        sub = desc[1][0]
        if sub[0].name == "BASE" and sub[1][0] in _NUMPY:
            return np.asarray(value, dtype=_NUMPY[sub[1][0]])
    return value


def _attr(field_name: str) -> str:
    from rosbags.typesys.base import normalize_fieldname

    return normalize_fieldname(field_name)


def _msg_type(desc: tuple[Any, Any]) -> str:
    kind = desc[0].name
    if kind == "BASE":
        base, bound = desc[1]
        return f"{base}<={bound}" if bound else base
    if kind == "NAME":  # pkg/Type; an action's parts keep pkg/action/Type (no .msg form)
        pkg, interface, typ = desc[1].split("/")
        return f"{pkg}/{typ}" if interface == "msg" else desc[1]
    sub, count = desc[1]
    if kind == "ARRAY":
        return f"{_msg_type(sub)}[{count}]"
    return f"{_msg_type(sub)}[<={count}]" if count else f"{_msg_type(sub)}[]"


def _named_deps(desc: tuple[Any, Any]) -> list[str]:
    kind = desc[0].name
    if kind == "NAME":
        return [desc[1]]
    if kind in ("ARRAY", "SEQUENCE"):
        return _named_deps(desc[1][0])
    return []


_default_registry: TypeRegistry | None = None


def default_msg_paths(env: dict[str, str] | None = None) -> list[Path]:
    """Where the process-wide registry looks for ``.msg`` packages beyond
    Humble's and ``AMENT_PREFIX_PATH``: ``HPRM_MSG_PATH`` (package directories,
    or directories of packages, separated like ``PATH``), then this source
    tree's ``hprm_msgs`` when running from a checkout (an installed workspace
    finds it through ``AMENT_PREFIX_PATH``)."""
    value = (env if env is not None else os.environ).get("HPRM_MSG_PATH", "")
    paths = [Path(os.path.expanduser(p)) for p in value.split(os.pathsep) if p]
    source = Path(__file__).resolve().parents[3] / "hprm_msgs"
    if (source / "msg").is_dir():
        paths.append(source)
    return paths


def default_registry() -> TypeRegistry:
    """The process-wide registry (Humble store, ``HPRM_MSG_PATH``, this
    checkout's hprm_msgs, ``AMENT_PREFIX_PATH``), built on first use."""
    global _default_registry
    if _default_registry is None:
        _default_registry = TypeRegistry(default_msg_paths())
    return _default_registry
