"""``hprm-ros bag diff A B``: the first difference between two bags, or none.

Messages are compared in each bag's order (timestamp, then as stored),
topic by topic: the first position where the topics, timestamps or bytes
differ is reported with, for differing content, the first field that
differs. Made for CI: two replays of one bag must record identical bags.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def _read(path: str | Path) -> list[tuple[str, int, str, bytes]]:
    from hprm_bridge.bag.source import open_reader

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such bag")
    reader = open_reader(p)
    try:
        return [(c.topic, t, c.msgtype, bytes(raw)) for c, t, raw in reader.messages()]
    finally:
        reader.close()


def _first_field(a: Any, b: Any, prefix: str = "") -> str:
    for name in getattr(a, "__dataclass_fields__", {}):
        x, y = getattr(a, name), getattr(b, name)
        if hasattr(x, "__dataclass_fields__"):
            found = _first_field(x, y, f"{prefix}{name}.")
            if found:
                return found
        elif isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not np.array_equal(x, y):
                return f"{prefix}{name}"
        elif x != y:
            return f"{prefix}{name} ({x!r} != {y!r})"
    return ""


def diff_bags(a: str | Path, b: str | Path) -> str | None:
    """None if identical; else a one-line description of the first difference."""
    from hprm_bridge.wire.typesys import default_registry

    ma, mb = _read(a), _read(b)
    for i, (x, y) in enumerate(zip(ma, mb, strict=False)):
        (ta, sa, typ, ra), (tb, sb, _, rb) = x, y
        where = f"message {i + 1}"
        if ta != tb:
            return f"{where}: topic {ta} in {a}, {tb} in {b}"
        if sa != sb:
            return f"{where} on {ta}: timestamp {sa} in {a}, {sb} in {b}"
        if ra != rb:
            reg = default_registry()
            try:
                field = _first_field(reg.decode(ra, typ), reg.decode(rb, typ))
            except Exception:
                field = ""
            return f"{where} on {ta} at {sa}: field {field or '(bytes)'} differs"
    if len(ma) != len(mb):
        return f"{a} has {len(ma)} messages, {b} has {len(mb)}"
    return None
