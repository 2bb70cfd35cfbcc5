"""The paper's world: a real CARLA 0.9.15/0.9.16 server, driven as Roach drives it.

This backend exists so that the demo can be run against the simulator the HPRM paper used,
with the same observation contract as the embedded world. It is a thin synchronous client:
the server only advances on `tick`, so a slow middleware cannot make the world skip frames,
and frame N's image is matched to tick N by frame id. The ``carla`` package is imported here
only, and only when a host is given: it is a large, version-locked wheel that the default
(embedded) world does not need.

Failures must be quick and say what to do: an unreachable server is detected with a plain TCP
connect before the package is even imported, and a missing package names the pip command.
"""

from __future__ import annotations

import math
import queue
import random
import socket

import numpy as np

from .birdview import VIEW_RADIUS_M, WALKER_SCALE, BirdviewRenderer, Objects, Pose, box_polygon
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

__all__ = ["CarlaWorld", "check_reachable", "import_carla"]

EGO_BLUEPRINT = "vehicle.lincoln.mkz_2017"  # Roach's ego
CAMERA_LOCATION = (-1.5, 0.0, 2.0)  # Roach's central_rgb, relative to the ego [m]
CAMERA_FOV = 100
WAYPOINT_STEP_M = 2.0
ROUTE_AHEAD_M = 40.0


def check_reachable(host: str, port: int, timeout_s: float) -> None:
    """Raises RuntimeError unless something accepts TCP connections at host:port."""
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as e:
        raise RuntimeError(
            f"CARLA server at {host}:{port} is not reachable (TCP connect failed within "
            f"{timeout_s:g} s: {e}). Start it (./CarlaUE4.sh) or check host and port, or "
            "leave carla_host unset to use the embedded world, which needs no server."
        ) from e


def import_carla():
    """The ``carla`` module, or a RuntimeError that says how to get it."""
    try:
        import carla
    except ImportError as e:
        raise RuntimeError(
            "the CARLA backend needs the carla Python package, matching the server's "
            "version: pip install carla==0.9.15 (or carla==0.9.16). The embedded world "
            "(open_world() without carla_host) needs nothing."
        ) from e
    return carla


def _vec_xy(v) -> np.ndarray:
    return np.array([v.x, v.y], dtype=np.float64)


class _Layer:
    """Static shapes with their centres, so that a frame picks the nearby ones in one call."""

    def __init__(self, shapes: list[np.ndarray]) -> None:
        self.shapes = shapes
        self.centres = np.array([s.mean(axis=0) for s in shapes]).reshape(-1, 2)

    def near(self, here: np.ndarray) -> list[np.ndarray]:
        d = np.hypot(*(self.centres - here).T)
        return [self.shapes[i] for i in np.flatnonzero(d < VIEW_RADIUS_M + WAYPOINT_STEP_M)]


class CarlaWorld:
    """A synchronous CARLA session: one ego, one camera, ticked 0.04 s per step."""

    def __init__(
        self,
        host: str,
        port: int = 2000,
        seed: int = 0,
        timeout_s: float = 10.0,
        alloc: Alloc = byte_array,
    ):
        check_reachable(host, port, timeout_s)
        carla = import_carla()
        self._carla = carla
        self.seed = int(seed)
        self._timeout_s = float(timeout_s)
        self._where = f"{host}:{port}"
        self._actors: list = []
        self._ego = None
        self._closed = False
        self._original_settings = None
        try:
            self._client = carla.Client(host, port)
            self._client.set_timeout(timeout_s)
            self._world = self._client.get_world()
            self._original_settings = self._world.get_settings()
            settings = self._world.get_settings()
            settings.synchronous_mode = True
            settings.fixed_delta_seconds = DT_S
            self._world.apply_settings(settings)
            self._map = self._world.get_map()
        except RuntimeError as e:  # carla raises RuntimeError on time-outs and version skew
            raise RuntimeError(
                f"CARLA server at {self._where} did not answer within {timeout_s:g} s ({e}); "
                "is it a CARLA 0.9.15/0.9.16 server of the same version as the carla package?"
            ) from e
        self._road, self._solid, self._broken = self._static_map()
        self._alloc = alloc
        self._birdview = BirdviewRenderer(alloc)
        self._images: queue.Queue = queue.Queue()
        self._control = Control()
        self.frame = 0
        self.episode = -1

    # -- World protocol ---------------------------------------------------------------------

    def reset(self) -> Observation:
        """Respawns the ego (seeded spawn point) and its camera; frame 0."""
        self._check_open()
        carla = self._carla
        self._destroy_actors()
        self.episode += 1
        library = self._world.get_blueprint_library()
        found = library.filter(EGO_BLUEPRINT)
        ego_bp = found[0] if found else library.filter("vehicle.*")[0]
        ego_bp.set_attribute("role_name", "hero")
        points = self._map.get_spawn_points()
        random.Random(self.seed + self.episode).shuffle(points)
        for point in points:
            self._ego = self._world.try_spawn_actor(ego_bp, point)
            if self._ego is not None:
                break
        if self._ego is None:
            raise RuntimeError(f"CARLA at {self._where}: no free spawn point for the ego")
        self._actors.append(self._ego)
        cam_bp = library.find("sensor.camera.rgb")
        cam_bp.set_attribute("image_size_x", str(CAMERA_SHAPE[1]))
        cam_bp.set_attribute("image_size_y", str(CAMERA_SHAPE[0]))
        cam_bp.set_attribute("fov", str(CAMERA_FOV))
        x, y, z = CAMERA_LOCATION
        mount = carla.Transform(carla.Location(x=x, y=y, z=z))
        camera = self._world.spawn_actor(cam_bp, mount, attach_to=self._ego)
        self._actors.append(camera)
        self._images = queue.Queue()
        camera.listen(self._images.put)
        self._lights = [
            (tl, [self._stop_line(wp) for wp in tl.get_stop_waypoints()])
            for tl in self._world.get_actors().filter("traffic.traffic_light*")
        ]
        self._birdview.reset()
        self._control = Control()
        self.frame = 0
        return self._tick_and_observe()

    def step(self, control: Control) -> Observation:
        self._check_open()
        if self._ego is None:
            self.reset()
        control = control.clipped()
        self._ego.apply_control(
            self._carla.VehicleControl(
                throttle=control.throttle, steer=control.steer, brake=control.brake
            )
        )
        self._control = control
        self.frame += 1
        return self._tick_and_observe()

    def close(self) -> None:
        """Destroys what this client spawned and gives the server back its asynchronous mode."""
        if self._closed:
            return
        self._closed = True
        try:
            self._destroy_actors()
        finally:
            if self._original_settings is not None:
                self._original_settings.synchronous_mode = False
                self._original_settings.fixed_delta_seconds = None
                self._world.apply_settings(self._original_settings)

    def __enter__(self) -> CarlaWorld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("CarlaWorld is closed")

    def _destroy_actors(self) -> None:
        for actor in reversed(self._actors):  # the camera before the car it is attached to
            if actor.type_id.startswith("sensor."):
                actor.stop()
            actor.destroy()
        self._actors.clear()
        self._ego = None

    def _tick_and_observe(self) -> Observation:
        tick = self._world.tick(self._timeout_s)
        while True:  # drop images of earlier ticks, if any are still queued
            try:
                image = self._images.get(timeout=self._timeout_s)
            except queue.Empty:
                raise RuntimeError(
                    f"CARLA at {self._where}: no camera image within {self._timeout_s:g} s"
                ) from None
            if image.frame >= tick:
                break
        bgra = np.frombuffer(image.raw_data, dtype=np.uint8).reshape(image.height, image.width, 4)
        camera = self._alloc((*bgra.shape[:2], 3))
        np.copyto(camera, bgra[:, :, 2::-1])  # BGRA -> RGB, the one copy
        return Observation(
            frame=self.frame,
            sim_time_ns=self.frame * DT_NS,
            camera=camera,
            birdview=self._render_birdview(),
            measurements=self._measurements(),
        )

    def _measurements(self) -> np.ndarray:
        yaw = math.radians(self._ego.get_transform().rotation.yaw)
        v = self._ego.get_velocity()
        vel_x = v.x * math.cos(yaw) + v.y * math.sin(yaw)
        vel_right = -v.x * math.sin(yaw) + v.y * math.cos(yaw)
        gear = -1.0 if self._ego.get_control().reverse else 1.0
        return make_measurements(self._control, vel_x, -vel_right, gear)

    def _edge(self, wp, side: float) -> np.ndarray:
        """The lane edge beside waypoint `wp` (side -1 left, +1 right)."""
        right = wp.transform.get_right_vector()
        loc = wp.transform.location
        half = wp.lane_width / 2
        return np.array([loc.x + side * half * right.x, loc.y + side * half * right.y])

    def _stop_line(self, wp) -> np.ndarray:
        return np.stack([self._edge(wp, -1.0), self._edge(wp, 1.0)])

    def _static_map(self):
        """Driving-lane quads every 2 m (with their successors, so junctions close) and lane
        markings, computed once: the map does not change during a session."""
        lm = self._carla.LaneMarkingType
        solid_kinds = {lm.Solid, lm.SolidSolid, lm.SolidBroken, lm.BrokenSolid}
        broken_kinds = {lm.Broken, lm.BrokenBroken}
        road, solid, broken = [], [], []
        for wp in self._map.generate_waypoints(WAYPOINT_STEP_M):
            left, right = self._edge(wp, -1.0), self._edge(wp, 1.0)
            for nxt in wp.next(WAYPOINT_STEP_M):
                n_left, n_right = self._edge(nxt, -1.0), self._edge(nxt, 1.0)
                road.append(np.stack([left, n_left, n_right, right]))
                for marking, a, b in (
                    (wp.left_lane_marking, left, n_left),
                    (wp.right_lane_marking, right, n_right),
                ):
                    if marking.type in solid_kinds:
                        solid.append(np.stack([a, b]))
                    elif marking.type in broken_kinds:
                        broken.append(np.stack([a, b]))
        return _Layer(road), _Layer(solid), _Layer(broken)

    def _render_birdview(self) -> np.ndarray:
        carla = self._carla
        tf = self._ego.get_transform()
        here = _vec_xy(tf.location)
        pose = Pose(float(here[0]), float(here[1]), math.radians(tf.rotation.yaw))

        def near(xy: np.ndarray) -> bool:
            return bool(np.hypot(*(xy - here)) < VIEW_RADIUS_M + 5.0)

        road, solid, broken = (
            layer.near(here) for layer in (self._road, self._solid, self._broken)
        )
        wp = self._map.get_waypoint(tf.location)
        route_pts = [_vec_xy(wp.transform.location)]
        for _ in range(int(ROUTE_AHEAD_M / WAYPOINT_STEP_M)):
            nxt = wp.next(WAYPOINT_STEP_M)
            if not nxt:
                break
            wp = nxt[0]
            route_pts.append(_vec_xy(wp.transform.location))
        objects = Objects()
        actors = self._world.get_actors()
        for kind, scale, out in (
            ("vehicle.*", 1.0, objects.vehicles),
            ("walker.pedestrian.*", WALKER_SCALE, objects.walkers),
        ):
            for actor in actors.filter(kind):
                if actor.id == self._ego.id:
                    continue
                atf = actor.get_transform()
                bb = actor.bounding_box
                centre = atf.transform(bb.location)
                xy = _vec_xy(centre)
                if near(xy):
                    yaw = math.radians(atf.rotation.yaw)
                    out.append(box_polygon(*xy, yaw, bb.extent.x, bb.extent.y, scale))
        by_state = {
            carla.TrafficLightState.Green: objects.lights_green,
            carla.TrafficLightState.Yellow: objects.lights_yellow,
            carla.TrafficLightState.Red: objects.lights_red,
        }
        for tl, lines in self._lights:
            out = by_state.get(tl.get_state())
            if out is not None:
                out.extend(line for line in lines if near(line[0]))
        for sign in actors.filter("traffic.stop"):
            stf = sign.get_transform()
            tv = sign.trigger_volume
            centre = _vec_xy(stf.transform(tv.location))
            if near(centre):
                ext = max(tv.extent.x, tv.extent.y)  # as Roach: a square trigger area
                objects.stops.append(box_polygon(*centre, math.radians(stf.rotation.yaw), ext, ext))
        return self._birdview.render(pose, road, [np.array(route_pts)], solid, broken, objects)
