"""Pairing the messages of one frame that arrive on several topics.

ROS 2 gives no order between topics: a node with two inputs per frame (the agent's bird's-eye
view and measurements, the fusion's action and detections) may see them in either order, and
under load a message of the next frame before the other of this one. Exact matching on
``header.stamp`` (message_filters' TimeSynchronizer policy, which ROS users know) is correct
in every case; "wait until both have arrived" is not. Under HPRM both inputs of a frame carry
the same tag and arrive in one step, and the pairing is immediate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .messages import stamp_ns

MAX_PENDING = 8  # frames kept waiting for a partner before the oldest is dropped


class FrameSync:
    """Calls ``callback(*messages)`` once every topic of `names` has a message of one stamp.

    ``sync.add("birdview", msg)`` from each subscription's callback.
    """

    def __init__(self, names: tuple[str, ...], callback: Callable[..., Any]) -> None:
        self._names = names
        self._callback = callback
        self._pending: dict[int, dict[str, Any]] = {}
        self.dropped = 0

    def add(self, name: str, msg: Any) -> None:
        stamp = stamp_ns(msg)
        frame = self._pending.setdefault(stamp, {})
        frame[name] = msg
        if len(frame) == len(self._names):
            del self._pending[stamp]
            for older in [s for s in self._pending if s < stamp]:
                del self._pending[older]  # its partner will never come: superseded
                self.dropped += 1
            self._callback(*(frame[n] for n in self._names))
        elif len(self._pending) > MAX_PENDING:
            del self._pending[min(self._pending)]
            self.dropped += 1
