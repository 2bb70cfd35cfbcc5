"""Fixtures shared by the detector's tests (test_yolo, test_yolo_graph)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    """A 960x600 RGB camera frame of noise, the same in every run."""
    return np.random.default_rng(42).integers(0, 256, (600, 960, 3), dtype=np.uint8)
