"""DDS type declarations of ROS 2 message types, for topic creation in Cyclone DDS.

libddsc needs a type for every topic: its registered name is what remote
participants match on (``pkg::msg::dds_::Type_``, see :mod:`.naming`), and
cyclonedds-python also derives XTypes TypeInformation from it, which libddsc
uses to check incoming samples (``dds_stream_normalize``) and to match other
XTypes-aware endpoints. We declare each ROS type as an ``IdlStruct`` with the
member types rosidl's IDL mapping gives (ROS 2 design article "Interface
definition and language mappings": ``char`` -> ``uint8``, ``byte`` -> ``octet``,
``string<=N>`` -> ``string<N>``, ``T[<=N]`` -> ``sequence<T, N>``, ``T[N]`` ->
``T[N]``; nested types in modules ``pkg::msg::dds_`` as
rosidl_generator_dds_idl emits them). The struct classes are only
declarations: samples never pass through cyclonedds-python's codec (it walks
sequences element by element); the data path carries CDR from :mod:`.cdr`.

Humble's rmw_cyclonedds registers its sertype without TypeInformation, so
plain ROS 2 nodes match us on the type name alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cyclonedds.idl import IdlStruct, make_idl_struct
from cyclonedds.idl import types as t

from .naming import dds_type_name

if TYPE_CHECKING:
    from rosbags.typesys.store import Typestore

_BASE: dict[str, Any] = {
    "bool": bool,
    "byte": t.byte,
    "char": t.uint8,
    "int8": t.int8,
    "uint8": t.uint8,
    "int16": t.int16,
    "uint16": t.uint16,
    "int32": t.int32,
    "uint32": t.uint32,
    "int64": t.int64,
    "uint64": t.uint64,
    "float32": t.float32,
    "float64": t.float64,
}


class IdlCache:
    """Builds (once) the ``IdlStruct`` declaring each ROS type of a type store."""

    def __init__(self, store: Typestore) -> None:
        self._store = store
        self._classes: dict[str, type[IdlStruct]] = {}

    def struct(self, ros_type: str, dds_name: str | None = None) -> type[IdlStruct]:
        """The ``IdlStruct`` class named ``pkg::msg::dds_::Type_`` (or ``dds_name``)
        for ``ros_type``."""
        cls = self._classes.get(ros_type)
        if cls is None:
            fields = {name: self._member(desc) for name, desc in self._store.fielddefs[ros_type][1]}
            cls = make_idl_struct(ros_type.replace("/", "__"), dds_name or dds_type_name(ros_type),
                                  fields)  # fmt: skip
            self._classes[ros_type] = cls
        return cls

    def _member(self, desc: tuple[Any, Any]) -> Any:
        kind = desc[0].name
        if kind == "BASE":
            base, bound = desc[1]
            if base == "string":
                return t.bounded_str[bound] if bound else str
            return _BASE[base]
        if kind == "NAME":
            return self.struct(desc[1])
        if kind == "ARRAY":
            return t.array[self._member(desc[1][0]), desc[1][1]]
        if kind == "SEQUENCE":
            elem, bound = self._member(desc[1][0]), desc[1][1]
            return t.sequence[elem, bound] if bound else t.sequence[elem]
        raise TypeError(f"unsupported field description {desc!r}")
