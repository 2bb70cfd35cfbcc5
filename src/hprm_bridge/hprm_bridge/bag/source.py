"""A bag as the player reads it: messages in (timestamp, bag order) order.

The timestamp is the recorded receive time (``log_time``), or, for topics
named in ``stamp_topics``, the message's ``header.stamp``. Equal timestamps
keep the order in which the bag stores them (stable: the same bag gives the
same order every time). Messages are decoded with the type definitions the
bag carries, so bags of custom message types play without their packages.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hprm_bridge import messages
from hprm_bridge.wire.typesys import default_registry


class BagError(Exception):
    """A bag that cannot be played: the message names the file and, where
    there is one, the topic."""


@dataclass(frozen=True)
class BagMessage:
    time: int  # ns, receive time or header stamp
    topic: str
    msg_type: str
    msg: Any  # HPRM's message class (hprm_bridge.messages)


def open_reader(path: Path) -> Any:
    """rosbags' AnyReader on a rosbag2 bag (a directory, or an .mcap/.db3 file).

    AnyReader takes any path ending in ``.bag`` for a ROS 1 bag; a rosbag2
    directory named ``drive.bag`` is handed over under a name without that
    suffix (its files are found through metadata.yaml either way)."""
    from rosbags.highlevel import AnyReader

    if path.suffix == ".bag" and path.is_dir():

        class _Rosbag2Dir(type(path)):  # type: ignore[misc,valid-type]
            @property
            def suffix(self) -> str:
                return ""

        path = _Rosbag2Dir(path)
    reader = AnyReader([path])
    reader.open()
    return reader


class BagSource:
    def __init__(self, path: str | Path, stamp_topics: set[str] | frozenset[str] = frozenset()):
        self.path = Path(path)
        if not self.path.exists():
            raise BagError(f"{self.path}: no such bag")
        try:
            self._reader = open_reader(self.path)
        except Exception as exc:  # rosbags raises several kinds for a bad bag
            raise BagError(f"{self.path}: not a readable rosbag2 bag ({exc})") from None
        self.topics = {c.topic: c.msgtype for c in self._reader.connections}
        unknown = sorted(set(stamp_topics) - set(self.topics))
        if unknown:
            raise BagError(f"{self.path}: no topic {', '.join(unknown)} in the bag")
        self.stamp_topics = set(stamp_topics)
        self._register_types()

    def _register_types(self) -> None:
        """Types the bag defines but the registry does not know (custom
        packages): taken from the bag's own definitions."""
        reg = default_registry()
        known = set(reg.known())
        missing = {t: self._reader.typestore.fielddefs[t] for t in self._reader.typestore.fielddefs
                   if t not in known}  # fmt: skip
        if missing:
            reg.store.register(missing)

    def messages(self) -> Iterator[BagMessage]:
        """Every message, decoded, in (timestamp, bag order) order."""
        pending: list[tuple[int, int, BagMessage]] = []
        try:
            for i, (conn, log_time, raw) in enumerate(self._reader.messages()):
                msg = messages.adopt(default_registry().decode(raw, conn.msgtype))
                t = log_time
                if conn.topic in self.stamp_topics:
                    stamp = getattr(getattr(msg, "header", None), "stamp", None)
                    if stamp is None:
                        raise BagError(f"{self.path}: topic {conn.topic} ({conn.msgtype}) "
                                       "has no header.stamp")  # fmt: skip
                    t = stamp.sec * 1_000_000_000 + stamp.nanosec
                pending.append((t, i, BagMessage(t, conn.topic, conn.msgtype, msg)))
        except BagError:
            raise
        except Exception as exc:
            raise BagError(f"{self.path}: cannot read message {len(pending) + 1} ({exc})") from None
        pending.sort(key=lambda x: (x[0], x[1]))
        for _, _, m in pending:
            yield m

    def close(self) -> None:
        self._reader.close()
