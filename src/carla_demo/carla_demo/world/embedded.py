"""The default world: a seeded highway that needs no CARLA server and no GPU.

The latency experiments need a sim that runs anywhere (CI, a laptop, a clean clone) and that
replays bit for bit: the same seed and controls must give the same bytes in any process, or
A/B runs of the middleware would not see the same inputs. highway-env (Farama) gives a
multi-lane road with IDM traffic that is deterministic under its seed and light enough to step
at 25 Hz in a few milliseconds; its pygame drawing stands in for the camera (top-down, which
YOLO does not mind for timing), and the birdview comes from the same rasterizer as CARLA's.

The ego is a kinematic bicycle driven by `Control`:

* acceleration = throttle * ``A_MAX`` - brake * ``B_MAX`` (m/s^2), never reversing: braking
  stops the car, a policy cannot back up (Roach never selects reverse either);
* front-wheel angle = steer * ``MAX_STEER`` (rad), positive to the right as in CARLA.
"""

from __future__ import annotations

import os

import numpy as np

from .birdview import VIEW_RADIUS_M, BirdviewRenderer, Objects, Pose, box_polygon
from .observation import (
    CAMERA_SHAPE,
    DT_NS,
    DT_S,
    Alloc,
    Control,
    Observation,
    byte_array,
    make_measurements,
)

__all__ = ["A_MAX", "B_MAX", "EPISODE_S", "MAX_STEER", "EmbeddedWorld"]

A_MAX = 5.0
"""Acceleration at full throttle [m/s^2] (highway-env's own continuous-action bound)."""
B_MAX = 8.0
"""Deceleration at full brake [m/s^2], about 0.8 g."""
MAX_STEER = float(np.pi / 4)
"""Front-wheel angle at full steer [rad] (highway-env's own continuous-action bound)."""
EPISODE_S = 40.0
"""Episode length in simulated seconds (highway-v0's default) before the next one starts."""

LANES = 4
VEHICLES = 20  # other than the ego; 50 (highway-v0's default) costs ~25 ms a step
CAMERA_PX_PER_M = 10.0
CAMERA_CENTERING = (0.3, 0.5)  # ego at 30 % of the width: more road ahead than behind
SAMPLE_M = 2.0  # lane geometry sampling, as CARLA's waypoints
STRIPE_LENGTH_M, STRIPE_PERIOD_M = 3.0, 4.33  # highway-env's own dashes, so both views agree
ROUTE_AHEAD_M = 40.0


def _headless() -> None:
    """No window, ever: headless machines have no display, and a window would steal focus.

    A value the user set wins (e.g. to watch the camera on a desktop).
    """
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")


class EmbeddedWorld:
    """highway-env's highway, stepped 0.04 s at a time, with Roach-shaped observations."""

    def __init__(self, seed: int = 0, alloc: Alloc = byte_array) -> None:
        _headless()
        import pygame
        from highway_env.envs.common.graphics import EnvViewer
        from highway_env.envs.highway_env import HighwayEnv
        from highway_env.road.lane import LineType

        self._pygame = pygame
        self._LineType = LineType
        self.seed = int(seed)
        config = {
            "action": {"type": "ContinuousAction"},
            "simulation_frequency": round(1 / DT_S),
            "policy_frequency": round(1 / DT_S),
            "lanes_count": LANES,
            "vehicles_count": VEHICLES,
            "duration": EPISODE_S,
            "screen_width": CAMERA_SHAPE[1],
            "screen_height": CAMERA_SHAPE[0],
            "scaling": CAMERA_PX_PER_M,
            "centering_position": list(CAMERA_CENTERING),
            "offscreen_rendering": True,
        }
        self._env = HighwayEnv(config=config, render_mode="rgb_array")
        self._viewer = EnvViewer(self._env)
        # highway-env turns drawing off under SDL's dummy driver; offscreen surfaces need none.
        self._viewer.enabled = True
        self._alloc = alloc
        self._birdview = BirdviewRenderer(alloc)
        self._closed = False
        self._started = False
        self.frame = 0
        self.episode = 0
        self._episode_time = 0.0
        self._control = Control()
        self._steering = 0.0

    # -- World protocol ---------------------------------------------------------------------

    def reset(self) -> Observation:
        """Back to frame 0 of episode 0: the run replays from the start."""
        self._check_open()
        self.frame = 0
        self._start_episode(0)
        self._started = True
        return self._observe()

    def step(self, control: Control) -> Observation:
        """Applies `control` for one 0.04 s step; an ended episode gives way to the next.

        When the ego crashed, left the road or ran out of time, the returned observation is
        already the first frame of the next episode (frame numbers keep counting).
        """
        self._check_open()
        if not self._started:
            self.reset()
        control = control.clipped()
        ego = self._env.vehicle
        accel = control.throttle * A_MAX - control.brake * B_MAX
        accel = max(accel, -max(ego.speed, 0.0) / DT_S)  # stop, do not reverse
        self._steering = control.steer * MAX_STEER
        ego.act({"acceleration": accel, "steering": self._steering})
        road = self._env.road
        road.act()  # the others' IDM/MOBIL decisions; the ego keeps the action just given
        road.step(DT_S)
        self._control = control
        self.frame += 1
        self._episode_time += DT_S
        if ego.crashed or not ego.on_road or self._episode_time >= EPISODE_S - 1e-9:
            self._start_episode(self.episode + 1)
        return self._observe()

    def close(self) -> None:
        # pygame is left initialised: another world in this process may still draw with it.
        if not self._closed:
            self._closed = True
            self._viewer = None
            self._env = None

    def __enter__(self) -> EmbeddedWorld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("EmbeddedWorld is closed")

    def _start_episode(self, episode: int) -> None:
        self.episode = episode
        self._env.reset(seed=self.seed + episode)
        for vehicle in self._env.road.vehicles:  # ego-vs-others only, as highway-fast-v0
            vehicle.check_collisions = vehicle is self._env.vehicle
        self._episode_time = 0.0
        self._control = Control()
        self._steering = 0.0
        self._birdview.reset()

    def _observe(self) -> Observation:
        return Observation(
            frame=self.frame,
            sim_time_ns=self.frame * DT_NS,
            camera=self._camera(),
            birdview=self._render_birdview(),
            measurements=self._measurements(),
        )

    def _camera(self) -> np.ndarray:
        self._viewer.display()
        raw = self._pygame.image.tobytes(self._viewer.sim_surface, "RGB")
        camera = self._alloc(CAMERA_SHAPE)
        np.copyto(camera, np.frombuffer(raw, np.uint8).reshape(CAMERA_SHAPE))  # the one copy
        return camera

    def _measurements(self) -> np.ndarray:
        # The bicycle model moves along heading + slip angle beta, not along the heading.
        ego = self._env.vehicle
        beta = np.arctan(0.5 * np.tan(self._steering))
        vel_x = ego.speed * np.cos(beta)
        vel_y = -ego.speed * np.sin(beta)  # y left; beta > 0 slides to the right
        return make_measurements(self._control, float(vel_x), float(vel_y))

    def _render_birdview(self) -> np.ndarray:
        env = self._env
        ego = env.vehicle
        pose = Pose(float(ego.position[0]), float(ego.position[1]), float(ego.heading))
        road, solid, broken = [], [], []
        network = env.road.network
        for lanes in (to for fr in network.graph.values() for to in fr.values()):
            for lane in lanes:
                s_ego, lat = lane.local_coordinates(ego.position)
                if abs(lat) > VIEW_RADIUS_M:
                    continue
                s0 = max(0.0, s_ego - VIEW_RADIUS_M)
                s1 = min(lane.length, s_ego + VIEW_RADIUS_M)
                if s1 <= s0:
                    continue
                s = np.append(np.arange(s0, s1, SAMPLE_M), s1)
                half = lane.width_at(s_ego) / 2
                left = _positions(lane, s, -half)
                right = _positions(lane, s, half)
                road.append(np.concatenate([left, right[::-1]]))
                for side, edge in ((0, left), (1, right)):
                    kind = lane.line_types[side]
                    if kind in (self._LineType.CONTINUOUS, self._LineType.CONTINUOUS_LINE):
                        solid.append(edge)
                    elif kind == self._LineType.STRIPED:
                        broken.extend(self._dashes(lane, s0, s1, (side - 0.5) * 2 * half))
        lane = ego.lane
        s_ego, _ = lane.local_coordinates(ego.position)
        s = np.arange(s_ego, min(lane.length, s_ego + ROUTE_AHEAD_M), SAMPLE_M)
        route = [_positions(lane, s, 0.0)] if len(s) > 1 else []
        vehicles = [
            box_polygon(*v.position, v.heading, v.LENGTH / 2, v.WIDTH / 2)
            for v in env.road.vehicles
            if v is not ego and np.hypot(*(v.position - ego.position)) < VIEW_RADIUS_M + v.LENGTH
        ]
        return self._birdview.render(pose, road, route, solid, broken, Objects(vehicles=vehicles))

    @staticmethod
    def _dashes(lane, s0: float, s1: float, lateral: float) -> list[np.ndarray]:
        first = np.floor(s0 / STRIPE_PERIOD_M) * STRIPE_PERIOD_M
        starts = np.arange(first, s1, STRIPE_PERIOD_M)
        a, b = np.maximum(starts, s0), np.minimum(starts + STRIPE_LENGTH_M, s1)
        a, b = a[b > a], b[b > a]
        ends = _positions(lane, np.stack([a, b], axis=1).ravel(), lateral)
        return list(ends.reshape(-1, 2, 2))


def _positions(lane, s: np.ndarray, lateral: float) -> np.ndarray:
    """(N, 2) world points of `lane` at longitudinal positions `s`, vectorised for the
    straight lanes of a highway (the per-point call is most of the birdview's cost)."""
    from highway_env.road.lane import StraightLane

    if type(lane) is StraightLane:  # not its subclasses (SineLane): they bend
        s = np.asarray(s, dtype=np.float64)[:, None]
        return lane.start + s * lane.direction + lateral * lane.direction_lateral
    return np.array([lane.position(si, lateral) for si in s]).reshape(-1, 2)
