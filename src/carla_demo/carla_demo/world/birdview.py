"""Roach's bird's-eye view, drawn from plain geometry so that any world can produce it.

Roach (Zhang et al., ICCV 2021) feeds its PPO policy "chauffeurnet" masks that it renders from
CARLA actors and a pre-rendered map. Both backends here (the embedded highway and a CARLA
client) instead hand this module polygons and polylines in world coordinates, and it draws
them around the ego exactly the same way: one rasterizer, so the two backends cannot drift
apart in layout, scale or values.

World coordinates follow CARLA's convention, which highway-env shares: seen from above, y lies
90 degrees clockwise from x, and yaw turns x towards y. In the image the ego faces up, its right
is to the right. Object history is kept in world coordinates and re-projected with the current
pose, as Roach does, so that the past frames show where things were, not where they appeared.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageDraw

from .observation import BIRDVIEW_SHAPE, Alloc, byte_array

__all__ = [
    "EGO_COL",
    "EGO_ROW",
    "EGO_TO_BOTTOM_PX",
    "HISTORY_IDX",
    "PIXELS_PER_METER",
    "VIEW_RADIUS_M",
    "WIDTH_PX",
    "BirdviewRenderer",
    "Objects",
    "Pose",
    "box_polygon",
    "rasterize_polygons",
    "rasterize_polylines",
    "world_to_pixel",
]

WIDTH_PX = BIRDVIEW_SHAPE[1]
PIXELS_PER_METER = 5.0
EGO_TO_BOTTOM_PX = 32
EGO_ROW = WIDTH_PX - EGO_TO_BOTTOM_PX  # 160
EGO_COL = WIDTH_PX // 2  # 96
HISTORY_IDX = (-16, -11, -6, -1)
"""Frames of the 4 history channels, as Roach's ``history_idx`` (-1 is the current frame)."""
HISTORY_LEN = 20

# Roach's drawing sizes.
ROUTE_WIDTH_PX = 16
STOP_LINE_WIDTH_PX = 6
LANE_MARKING_WIDTH_PX = 2
MIN_HALF_EXTENT_M = 0.8  # Roach's scale_bbox: tiny boxes are grown to 1.6 m
WALKER_SCALE = 2.0

VIEW_RADIUS_M = float(np.hypot(WIDTH_PX / 2, EGO_ROW) / PIXELS_PER_METER) + 2.0
"""Farther than this from the ego, nothing can touch the image: backends may drop it."""

ROAD, SOLID, BROKEN, GREEN, YELLOW, RED, STOP = 255, 255, 120, 80, 170, 255, 255

Points = np.ndarray  # (N, 2) float world coordinates [m]


@dataclass(frozen=True)
class Pose:
    """Ego position [m] and yaw [rad] in world coordinates."""

    x: float
    y: float
    yaw: float


@dataclass
class Objects:
    """What moves or changes in one frame; polygons and polylines in world coordinates."""

    vehicles: list[Points] = field(default_factory=list)  # ego excluded
    walkers: list[Points] = field(default_factory=list)
    lights_green: list[Points] = field(default_factory=list)  # stop lines (polylines)
    lights_yellow: list[Points] = field(default_factory=list)
    lights_red: list[Points] = field(default_factory=list)
    stops: list[Points] = field(default_factory=list)  # stop-sign areas (polygons)


def box_polygon(
    x: float, y: float, yaw: float, half_length: float, half_width: float, scale: float = 1.0
) -> Points:
    """The 4 corners of an oriented box, grown to Roach's minimum size."""
    hl = max(half_length * scale, MIN_HALF_EXTENT_M)
    hw = max(half_width * scale, MIN_HALF_EXTENT_M)
    c, s = np.cos(yaw), np.sin(yaw)
    local = np.array([[hl, hw], [hl, -hw], [-hl, -hw], [-hl, hw]])
    rot = np.array([[c, -s], [s, c]])
    return local @ rot.T + np.array([x, y])


def world_to_pixel(points: Points, ego: Pose) -> np.ndarray:
    """(N, 2) world points -> (N, 2) pixel (column, row) floats, integers at pixel centres."""
    rel = np.asarray(points, dtype=np.float64) - (ego.x, ego.y)
    c, s = np.cos(ego.yaw), np.sin(ego.yaw)
    forward = rel[:, 0] * c + rel[:, 1] * s
    right = -rel[:, 0] * s + rel[:, 1] * c
    return np.stack(
        (EGO_COL + right * PIXELS_PER_METER, EGO_ROW - forward * PIXELS_PER_METER), axis=1
    )


def _project(shapes: Sequence[Points], ego: Pose, margin: float) -> list[list[float]]:
    """Projects all shapes in one numpy call and drops those wholly outside the image."""
    shapes = [s for s in shapes if len(s)]
    if not shapes:
        return []
    lengths = [len(s) for s in shapes]
    px = world_to_pixel(np.concatenate(shapes), ego)
    out = []
    for p in np.split(px, np.cumsum(lengths)[:-1]):
        lo, hi = p.min(axis=0), p.max(axis=0)
        if hi[0] < -margin or hi[1] < -margin or lo[0] > WIDTH_PX + margin:
            continue
        if lo[1] > WIDTH_PX + margin:
            continue
        out.append(p.ravel().tolist())
    return out


def _draw_polygons(draw: ImageDraw.ImageDraw, shapes, ego: Pose, value: int) -> None:
    for flat in _project(shapes, ego, margin=1.0):
        if len(flat) >= 6:
            draw.polygon(flat, fill=value)


def _draw_polylines(draw: ImageDraw.ImageDraw, shapes, ego: Pose, width: int, value: int) -> None:
    for flat in _project(shapes, ego, margin=width):
        if len(flat) >= 4:
            draw.line(flat, fill=value, width=width)


def _canvas() -> tuple[Image.Image, ImageDraw.ImageDraw]:
    img = Image.new("L", (WIDTH_PX, WIDTH_PX), 0)
    return img, ImageDraw.Draw(img)


def rasterize_polygons(polygons: Sequence[Points], ego: Pose, value: int = 255) -> np.ndarray:
    """Filled polygons (world coordinates) as a (192, 192) uint8 mask around `ego`."""
    img, draw = _canvas()
    _draw_polygons(draw, polygons, ego, value)
    return np.asarray(img, dtype=np.uint8).copy()


def rasterize_polylines(
    polylines: Sequence[Points], ego: Pose, width_px: int, value: int = 255
) -> np.ndarray:
    """Polylines (world coordinates) `width_px` wide as a (192, 192) uint8 mask."""
    img, draw = _canvas()
    _draw_polylines(draw, polylines, ego, width_px, value)
    return np.asarray(img, dtype=np.uint8).copy()


class BirdviewRenderer:
    """Roach's 15 masks, with the 20-frame object history that the 4 time channels need."""

    def __init__(self, alloc: Alloc = byte_array) -> None:
        self._history: deque[Objects] = deque(maxlen=HISTORY_LEN)
        self._alloc = alloc

    def reset(self) -> None:
        """Forgets the history (a new episode: the previous scene must not leak in)."""
        self._history.clear()

    def render(
        self,
        ego: Pose,
        road: Sequence[Points],
        route: Sequence[Points],
        solid_lines: Sequence[Points],
        broken_lines: Sequence[Points],
        objects: Objects,
    ) -> np.ndarray:
        """Appends `objects` to the history and draws (15, 192, 192) uint8 masks.

        `road`: drivable area polygons; `route`: centre polylines of the lane(s) ahead (drawn
        16 px wide); `solid_lines` / `broken_lines`: lane markings (broken drawn 120, over
        solid 255); lights: stop-line polylines per state; stops: stop-sign area polygons.
        """
        self._history.append(objects)
        out = self._alloc(BIRDVIEW_SHAPE)  # every channel is drawn below
        out[0] = rasterize_polygons(road, ego, ROAD)
        out[1] = rasterize_polylines(route, ego, ROUTE_WIDTH_PX, 255)
        img, draw = _canvas()
        _draw_polylines(draw, solid_lines, ego, LANE_MARKING_WIDTH_PX, SOLID)
        _draw_polylines(draw, broken_lines, ego, LANE_MARKING_WIDTH_PX, BROKEN)
        out[2] = np.asarray(img)
        n = len(HISTORY_IDX)
        for i, idx in enumerate(HISTORY_IDX):
            past = self._history[max(idx, -len(self._history))]
            out[3 + i] = rasterize_polygons(past.vehicles, ego, 255)
            out[3 + n + i] = rasterize_polygons(past.walkers, ego, 255)
            img, draw = _canvas()
            _draw_polylines(draw, past.lights_green, ego, STOP_LINE_WIDTH_PX, GREEN)
            _draw_polylines(draw, past.lights_yellow, ego, STOP_LINE_WIDTH_PX, YELLOW)
            _draw_polylines(draw, past.lights_red, ego, STOP_LINE_WIDTH_PX, RED)
            _draw_polygons(draw, past.stops, ego, STOP)
            out[3 + 2 * n + i] = np.asarray(img)
        return out
