"""The fusion rules on crafted detections and images."""

import numpy as np
import pytest

from carla_demo.fusion_rules import RED_LIGHT, fuse, mark_red_lights

SHAPE = (600, 960, 3)
POLICY = (0.6, 0.1, 0.0)


def det(x1, y1, x2, y2, score, cls):
    return [x1, y1, x2, y2, score, cls]


@pytest.mark.parametrize(
    ("rows", "reason"),
    [
        ([], "policy"),
        ([det(600, 100, 640, 150, 0.9, 11)], "stop sign"),  # 50 px of 600: near enough
        ([det(600, 100, 610, 110, 0.9, 11)], "policy"),  # a distant stop sign
        ([det(600, 100, 640, 150, 0.2, 11)], "policy"),  # not confident
        ([det(300, 50, 320, 100, 0.8, RED_LIGHT)], "red light"),
        ([det(300, 50, 320, 100, 0.8, 9)], "policy"),  # a light, not red
        ([det(380, 300, 580, 500, 0.8, 2)], "vehicle ahead"),  # large, central car
        ([det(20, 300, 220, 500, 0.8, 2)], "policy"),  # same car in the next lane
        ([det(380, 300, 580, 350, 0.8, 7)], "policy"),  # a truck far ahead
        ([det(380, 300, 580, 500, 0.8, 0)], "policy"),  # a person is not a vehicle rule
    ],
)
def test_rules(rows, reason):
    decision = fuse(POLICY, np.array(rows, np.float32), SHAPE)
    assert decision.reason == reason
    if reason == "policy":
        assert (decision.throttle, decision.steer, decision.brake) == POLICY
    else:  # brake fully, keep the steering
        assert (decision.throttle, decision.steer, decision.brake) == (0.0, 0.1, 1.0)


def test_any_one_reason_is_enough():
    rows = [det(20, 300, 220, 500, 0.8, 2), det(600, 100, 640, 150, 0.9, 11)]
    assert fuse(POLICY, np.array(rows, np.float32), SHAPE).reason == "stop sign"


def test_red_lights_are_found_in_the_pixels():
    image = np.full(SHAPE, 40, np.uint8)
    image[50:70, 300:320] = (230, 30, 20)  # red lamp lit
    image[50:70, 500:520] = (30, 220, 60)  # green lamp lit
    image[50:70, 700:720] = (80, 80, 80)  # dark: nothing lit
    rows = [det(x, 45, x + 20, 100, 0.7, 9) for x in (300, 500, 700)]
    found = np.array([*rows, det(295, 45, 325, 100, 0.7, 11)], np.float32)
    marked = mark_red_lights(image, found)
    assert marked[:, 5].tolist() == [RED_LIGHT, 9, 9, 11]
    assert found[0, 5] == 9  # the input is left alone
