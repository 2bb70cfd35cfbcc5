"""A publisher's liveliness changing, carried on its port among its messages.

A ported node's publisher sets its port, at each tag, to the tuple of the messages it
published then. Under ROS 2 a subscription also learns when one of its publishers stops
being alive (its node destroyed it, or a manual-liveliness publisher let its lease run
out) or comes back: DDS sends that beside the data. Here the publisher puts a
:class:`LivelinessChange` into the same tuple, at its place among the messages (a
publisher regaining its liveliness by publishing: before that message), so every
subscriber hears it at the same tag, in order, through every path a message takes
(between federates, between composed siblings, fan-in). Rare by construction: only a
change is sent.

What reads a ported port's tuple and is not a subscription (the gateway to ROS 2, the
bag recorder) skips these: they are not messages.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LivelinessChange:
    """What one publisher's change does to a subscription's counts (rclpy's
    ``alive_count_change``, ``not_alive_count_change``)."""

    alive_change: int
    not_alive_change: int


MATCHED = LivelinessChange(1, 0)  # created after the start, in a destroyed one's place
LOST = LivelinessChange(-1, 1)  # its lease ran out
REGAINED = LivelinessChange(1, -1)  # published again after a loss
GONE_ALIVE = LivelinessChange(-1, 0)  # destroyed while alive
GONE_LOST = LivelinessChange(0, -1)  # destroyed after its lease ran out
