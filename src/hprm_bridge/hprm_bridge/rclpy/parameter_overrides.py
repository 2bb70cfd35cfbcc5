"""Which parameter values a node starts with: ``-p`` and ``--params-file``, as rcl reads them.

A params file maps node names to ``ros__parameters``; a name may be nested under its
namespaces (``robot1: {talker: {ros__parameters: ...}}`` is ``/robot1/talker``) and may
hold wildcards, a whole token each: ``*`` is one token of the node's full name, ``**``
any number (``/**`` is every node, ``/**/talker`` every talker, ``/robot1/*`` every node
directly in ``/robot1``). Measured against Humble's rclpy: rcl keeps one entry per name
in the order the names first appear on the command line (``-p NAME:=VALUE`` is the entry
``/**``; ``-p NODE:NAME:=VALUE`` the entry ``/NODE``, a node of the root namespace); a
later value for the same name and parameter replaces the earlier in place; a node then
takes every entry that matches its full name, in that order, the last one setting a
parameter winning. So in one file the later section wins, wildcard or not, and
``-p x:=9`` before a file whose ``/**`` sets ``x`` loses to that file.

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "p.yaml"
    >>> _ = f.write_text("robot1:\\n  talker:\\n    ros__parameters: {rate: 5}\\n"
    ...                  "/**/talker:\\n  ros__parameters: {gain: 2}\\n")
    >>> resolve([("file", str(f)), ("param", "/**", "gain", 3)], "/robot1/talker")
    {'rate': 5, 'gain': 3}
    >>> resolve([("file", str(f))], "/listener")
    {}
"""

from __future__ import annotations

from typing import Any

import yaml

#: what the command line gave, in order: ("param", node name pattern, name, value) for
#: ``-p [NODE:]NAME:=VALUE`` (``/**`` without a node), or ("file", path)
Source = tuple[Any, ...]
_PARAMETERS = "ros__parameters"


def resolve(sources: list[Source], node_fqn: str) -> dict[str, Any]:
    """The overrides of node ``node_fqn`` (``/ns/name``) from ``sources`` (see the module)."""
    entries: dict[str, dict[str, Any]] = {}  # node name pattern -> parameters, rcl's order
    for source in sources:
        if source[0] == "param":
            _, pattern, name, value = source
            entries.setdefault(pattern, {})[name] = value
        else:
            for pattern, values in read_file(source[1]):
                entries.setdefault(pattern, {}).update(values)
    found: dict[str, Any] = {}
    for pattern, values in entries.items():
        if matches(pattern, node_fqn):
            found.update(values)
    return found


def read_file(path: str) -> list[tuple[str, dict[str, Any]]]:
    """A params file's sections in file order: (node name pattern, flattened parameters)."""
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a params file maps node names to {{ros__parameters: ...}}")
    sections: list[tuple[str, dict[str, Any]]] = []
    _sections(path, data, "", sections)
    return sections


def _sections(path: str, tree: dict[Any, Any], prefix: str, out: list[Any]) -> None:
    for key, value in tree.items():
        name = f"{prefix}/{str(key).strip('/')}"
        if not isinstance(value, dict):
            raise ValueError(
                f"{path}: {name} holds {value!r}, not {{ros__parameters: ...}} or the nodes "
                "of a namespace"
            )
        if _PARAMETERS in value:
            params = value[_PARAMETERS] or {}
            if not isinstance(params, dict):
                raise ValueError(f"{path}: {name}'s ros__parameters is not a mapping")
            out.append((name, _flatten(params)))
        else:  # a namespace: its nodes are nested in it
            _sections(path, value, name, out)


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in tree.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def matches(pattern: str, node_fqn: str) -> bool:
    """Whether a params file's node name matches a node's full name, token by token."""
    return _match(pattern.strip("/").split("/"), node_fqn.strip("/").split("/"))


def _match(pat: list[str], name: list[str]) -> bool:
    if not pat:
        return not name
    if pat[0] == "**":
        return any(_match(pat[1:], name[i:]) for i in range(len(name) + 1))
    if not name:
        return False
    return (pat[0] == "*" or pat[0] == name[0]) and _match(pat[1:], name[1:])
