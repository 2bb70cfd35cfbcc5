"""The contract between the sim node and whatever world runs behind it.

The policy (Roach PPO), the detector (YOLO) and the fusion node are written against this
module only, so that the embedded highway world and a real CARLA server are interchangeable:
the same shapes, dtypes, channel layout and units whichever backend produced a frame. Nothing
here may import middleware (rclpy, hprm): the nodes wrap it, not the other way round.
"""

from __future__ import annotations

import array
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = [
    "BIRDVIEW_CHANNELS",
    "BIRDVIEW_SHAPE",
    "CAMERA_SHAPE",
    "DT_NS",
    "DT_S",
    "MEASUREMENT_NAMES",
    "Alloc",
    "Control",
    "Observation",
    "World",
    "byte_array",
    "make_measurements",
]

DT_S = 0.04
"""Simulated seconds per step: the world runs synchronously at 25 Hz, as in Roach's setup."""
DT_NS = 40_000_000

CAMERA_SHAPE = (600, 960, 3)
"""Height, width, RGB: Roach's ``central_rgb`` camera resolution."""

MEASUREMENT_NAMES = ("throttle", "steer", "brake", "gear", "vel_x", "vel_y")

_HISTORY = ("t-15", "t-10", "t-5", "t")
BIRDVIEW_CHANNELS = (
    "road",
    "route",
    "lane",
    *(f"vehicle_{h}" for h in _HISTORY),
    *(f"walker_{h}" for h in _HISTORY),
    *(f"light_{h}" for h in _HISTORY),
)
BIRDVIEW_SHAPE = (len(BIRDVIEW_CHANNELS), 192, 192)


def _clip(value: float, low: float, high: float) -> float:
    value = float(value)
    if value != value:  # NaN from a broken policy: treat as "no input" rather than crash
        return 0.0
    return min(max(value, low), high)


@dataclass(frozen=True)
class Control:
    """One vehicle command, CARLA's convention (steer > 0 turns right).

    Values outside the ranges are accepted and clipped where applied (`clipped`), so that a
    policy's raw output can be sent as is.
    """

    throttle: float = 0.0  # [0, 1]
    steer: float = 0.0  # [-1, 1]
    brake: float = 0.0  # [0, 1]

    def clipped(self) -> Control:
        return Control(
            throttle=_clip(self.throttle, 0.0, 1.0),
            steer=_clip(self.steer, -1.0, 1.0),
            brake=_clip(self.brake, 0.0, 1.0),
        )


@dataclass
class Observation:
    """Everything the models need from one simulated frame.

    ``birdview`` follows Roach's chauffeurnet masks (see `BIRDVIEW_CHANNELS`): 192x192 px,
    5 px/m, ego at column 96 and row 160 (32 px above the bottom edge), heading up.
    ``measurements`` follows `MEASUREMENT_NAMES`: the last applied (clipped) control, the gear
    (1.0 forward), and the ego's velocity in m/s in its own frame, x forward, y left.
    """

    frame: int
    sim_time_ns: int
    camera: np.ndarray  # CAMERA_SHAPE uint8 RGB, C-contiguous
    birdview: np.ndarray  # BIRDVIEW_SHAPE uint8
    measurements: np.ndarray  # (6,) float32


@runtime_checkable
class World(Protocol):
    """A synchronous world: nothing moves between two calls."""

    def reset(self) -> Observation: ...

    def step(self, control: Control) -> Observation: ...

    def close(self) -> None: ...

    def __enter__(self) -> World: ...

    def __exit__(self, *exc: object) -> None: ...


def make_measurements(
    control: Control, vel_x: float, vel_y: float, gear: float = 1.0
) -> np.ndarray:
    """Roach's ``input_states`` [control, vel_xy] as one float32 vector (`MEASUREMENT_NAMES`)."""
    return np.array(
        [control.throttle, control.steer, control.brake, gear, vel_x, vel_y], dtype=np.float32
    )


def byte_array(shape: tuple[int, ...]) -> np.ndarray:
    """A zeroed uint8 array of `shape` whose memory is an ``array.array("B")``, for the
    frames a world renders.

    Not middleware: ``array.array`` is what a ROS 2 ``uint8[]`` field (an Image's ``data``)
    takes as it is, so a node can put the pixels into its message without copying them
    (`carla_demo.messages.image_msg` looks for this). With a plain numpy frame, every message
    would cost one more copy of the 1.7 MB camera.

    >>> byte_array((2, 3)).tolist()
    [[0, 0, 0], [0, 0, 0]]
    """
    return np.frombuffer(array.array("B", bytes(math.prod(shape))), np.uint8).reshape(shape)


Alloc = Callable[[tuple[int, ...]], np.ndarray]
"""How a world gets the uint8 arrays it renders into: `byte_array`, or a node's loans."""
