"""How the fusion node combines the policy's action with the detector's findings.

The PPO policy only sees the bird's-eye view; the detector sees the camera. The rules are
deliberately simple and conservative, as in the HPRM paper's demo: the policy drives unless
the camera shows a reason to stop, and any one reason is enough. Pure functions on numpy
arrays, so the rules are tested on crafted detections without a model or a middleware.

Detections are float32 rows ``x1, y1, x2, y2, score, class_id`` in image pixels (the
detector's output); class ids are COCO's, plus `RED_LIGHT` for a traffic light that
`mark_red_lights` found red in the image.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RED_LIGHT", "Decision", "fuse", "mark_red_lights"]

CAR, MOTORCYCLE, BUS, TRUCK, TRAFFIC_LIGHT, STOP_SIGN = 2, 3, 5, 7, 9, 11
VEHICLES = (CAR, MOTORCYCLE, BUS, TRUCK)
RED_LIGHT = 80.0  # not a COCO class: a traffic light whose lit lamp is red

MIN_SCORE = 0.4
# A stop sign or a red light matters once it is large enough to be near (a fraction of the
# image height); a vehicle once it is large, low in the image and in the central third (our
# lane, ahead).
MIN_SIGN_HEIGHT = 0.04
MIN_LIGHT_HEIGHT = 0.05
MIN_VEHICLE_HEIGHT = 0.25
CENTRAL_BAND = (1 / 3, 2 / 3)


@dataclass(frozen=True)
class Decision:
    throttle: float
    steer: float
    brake: float
    reason: str  # "policy", or why the fusion braked: "stop sign", "red light", "vehicle ahead"


def fuse(
    action: tuple[float, float, float], detections: np.ndarray, image_shape: tuple[int, ...]
) -> Decision:
    """The control for one frame: the policy's (throttle, steer, brake), unless a detection
    says brake; braking keeps the policy's steering (stopping is not swerving)."""
    throttle, steer, brake = action
    reason = _reason_to_brake(np.asarray(detections, np.float32).reshape(-1, 6), image_shape)
    if reason is None:
        return Decision(throttle, steer, brake, "policy")
    return Decision(0.0, steer, 1.0, reason)


def _reason_to_brake(det: np.ndarray, image_shape: tuple[int, ...]) -> str | None:
    height, width = image_shape[:2]
    det = det[det[:, 4] >= MIN_SCORE]
    box_h = (det[:, 3] - det[:, 1]) / height
    cls = det[:, 5]
    if np.any((cls == STOP_SIGN) & (box_h >= MIN_SIGN_HEIGHT)):
        return "stop sign"
    if np.any((cls == RED_LIGHT) & (box_h >= MIN_LIGHT_HEIGHT)):
        return "red light"
    centre = (det[:, 0] + det[:, 2]) / (2 * width)
    ahead = (centre >= CENTRAL_BAND[0]) & (centre <= CENTRAL_BAND[1])
    if np.any(np.isin(cls, VEHICLES) & ahead & (box_h >= MIN_VEHICLE_HEIGHT)):
        return "vehicle ahead"
    return None


def mark_red_lights(image: np.ndarray, detections: np.ndarray) -> np.ndarray:
    """The detections with each traffic light whose lit lamp is red relabelled `RED_LIGHT`.

    COCO has one class for traffic lights, whatever their state; the state is in the pixels:
    among the box's bright pixels, red dominates green and blue. Done by the detector node,
    which holds the image, so that the fusion node needs only the detections."""
    out = np.array(detections, np.float32).reshape(-1, 6)
    h, w = image.shape[:2]
    for row in np.flatnonzero(out[:, 5] == TRAFFIC_LIGHT):
        x1, y1, x2, y2 = np.clip(out[row, :4], 0, [w, h, w, h]).astype(int)
        crop = image[y1:y2, x1:x2].reshape(-1, 3).astype(np.int16)
        if crop.size == 0:
            continue
        lit = crop[crop.max(axis=1) >= 160]
        if len(lit) == 0:
            continue
        r, g, b = lit.mean(axis=0)
        if r > 1.5 * g and r > 1.5 * b:
            out[row, 5] = RED_LIGHT
    return out
