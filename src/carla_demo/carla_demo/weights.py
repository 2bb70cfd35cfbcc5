"""Where the demo's model weights come from, and the warning when they are not real.

The demo must run on a machine that has never downloaded a model (CI, a fresh clone): each
model then builds its real architecture with weights drawn from a seeded generator. Latency
stays faithful (same layers, same FLOPs); behaviour does not (the policy does not drive and
the detector finds nothing meaningful). That difference must never pass unnoticed, hence a
warning class of its own that the nodes log at ERROR level and that tests can assert on.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["RandomWeightsWarning", "seeded_rng", "warn_random_weights"]


class RandomWeightsWarning(UserWarning):
    """A model runs with seeded random weights: its timing is real, its outputs are not."""


def seeded_rng(seed: int, model: str) -> np.random.Generator:
    """A generator for `model`'s random weights: the same seed gives the same network in
    every process, so that two federates (or two runs) see identical outputs."""
    tag = sum(model.encode()) * 1_000_003
    return np.random.default_rng([seed, tag])


def warn_random_weights(model: str, how_to_fix: str) -> None:
    warnings.warn(
        f"{model}: no weights given, running with SEEDED RANDOM WEIGHTS: its latency is "
        f"faithful, its outputs are meaningless. {how_to_fix}",
        RandomWeightsWarning,
        stacklevel=3,
    )
