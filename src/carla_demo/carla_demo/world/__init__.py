"""The demo's simulated world, behind one protocol so the sim node never knows which one runs.

By default the world is embedded (highway-env: no server, no GPU, byte-reproducible under a
seed), which is what CI and the latency benchmarks use; given a host, it is a client of a
real CARLA server, as in the HPRM paper. Both produce Roach-shaped observations (camera,
chauffeurnet birdview, measurements) at 25 Hz of simulated time. Importing this package is
cheap: highway-env, pygame and carla are loaded only by the backend that is opened.
"""

from __future__ import annotations

from .observation import (
    BIRDVIEW_CHANNELS,
    BIRDVIEW_SHAPE,
    CAMERA_SHAPE,
    DT_NS,
    DT_S,
    MEASUREMENT_NAMES,
    Alloc,
    Control,
    Observation,
    World,
    byte_array,
)

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
    "open_world",
]


def open_world(
    *,
    carla_host: str | None = None,
    carla_port: int = 2000,
    seed: int = 0,
    timeout_s: float = 10.0,
    alloc: Alloc = byte_array,
) -> World:
    """The embedded world, or a CARLA client when `carla_host` is given.

    Call ``reset()`` before the first ``step()``. A CARLA server that cannot be reached, or a
    missing ``carla`` package, raises RuntimeError within about `timeout_s`. `alloc(shape)`
    gives the uint8 arrays the camera and bird's-eye view are rendered into (a node passes
    memory its messages can carry as it is: see `byte_array`).
    """
    if carla_host is None:
        from .embedded import EmbeddedWorld

        return EmbeddedWorld(seed=seed, alloc=alloc)
    from .carla_client import CarlaWorld

    return CarlaWorld(carla_host, carla_port, seed=seed, timeout_s=timeout_s, alloc=alloc)
