"""The Roach PPO driving policy (XtMaCNN encoder, Beta action head) in numpy, on CPU.

Why numpy and not torch: the network is small (a 6-layer CNN on a 15x192x192 bird's-eye view,
then a few 256-wide layers: about 1.5 M parameters, ~20 MFLOP per frame), so numpy's BLAS
runs it in a few milliseconds, and the demo installs in seconds on a machine without a GPU
stack. The layers, shapes and parameter names are Roach's (carla-roach,
``agents/rl_birdview/models``), so a Roach checkpoint loads as it is, through a reader of
torch's checkpoint format that never executes code from the file (see `load_state_dict`).

Example::

    policy = RoachPolicy("ckpt_11833344.pth")    # or RoachPolicy() for seeded random weights
    throttle, steer, brake = policy(birdview, measurements)
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from . import torch_checkpoint
from .weights import seeded_rng, warn_random_weights

__all__ = ["RoachPolicy", "load_state_dict"]

BIRDVIEW_SHAPE = (15, 192, 192)
N_MEASUREMENTS = 6  # Roach's input_states [control, vel_xy]: throttle, steer, brake, gear, vx, vy

# (out channels, kernel, stride) of XtMaCNN's convolutions; each is followed by a ReLU.
_CONVS = ((8, 5, 2), (16, 5, 2), (32, 5, 2), (64, 3, 2), (128, 3, 2), (256, 3, 1))
_CNN_INDEX = (0, 2, 4, 6, 8, 10)  # their indices in Roach's nn.Sequential
_N_FLATTEN = 1024  # 256 x 2 x 2 for a 192x192 input


def _parameter_shapes() -> dict[str, tuple[int, ...]]:
    """Roach's state-dict names and shapes (the value head is not needed to act)."""
    shapes: dict[str, tuple[int, ...]] = {}
    c_in = BIRDVIEW_SHAPE[0]
    for index, (c_out, k, _) in zip(_CNN_INDEX, _CONVS, strict=True):
        shapes[f"features_extractor.cnn.{index}.weight"] = (c_out, c_in, k, k)
        shapes[f"features_extractor.cnn.{index}.bias"] = (c_out,)
        c_in = c_out
    linears = {
        "features_extractor.state_linear.0": (256, N_MEASUREMENTS),
        "features_extractor.state_linear.2": (256, 256),
        "features_extractor.linear.0": (512, _N_FLATTEN + 256),
        "features_extractor.linear.2": (256, 512),
        "policy_head.0": (256, 256),
        "policy_head.2": (256, 256),
        "dist_mu.0": (2, 256),
        "dist_sigma.0": (2, 256),
    }
    for name, shape in linears.items():
        shapes[f"{name}.weight"] = shape
        shapes[f"{name}.bias"] = (shape[0],)
    return shapes


PARAMETER_SHAPES = _parameter_shapes()


# Biases of the Beta head's output layers for random weights: softplus gives (alpha, beta) =
# (2.5, 1.5) for acceleration (mode 0.75: half throttle) and (3, 3) for steering (mode 0.5:
# straight), near Roach's own exploration priors, so that an untrained car moves along the
# road and the world changes from frame to frame, instead of standing still.
_RANDOM_HEAD_BIAS = {
    "dist_mu.0.bias": np.log(np.expm1([2.5, 3.0])),
    "dist_sigma.0.bias": np.log(np.expm1([1.5, 3.0])),
}


def _random_state_dict(seed: int) -> dict[str, np.ndarray]:
    """He-uniform weights, Roach's 0.1 conv biases: activations keep a sane scale, so the
    timing matches a trained network's. The action head gets small weights (PPO's 0.01
    gain) and `_RANDOM_HEAD_BIAS`."""
    rng = seeded_rng(seed, "roach-ppo")
    state = {}
    for name, shape in PARAMETER_SHAPES.items():
        if name.endswith(".weight"):
            fan_in = int(np.prod(shape[1:]))
            bound = np.sqrt(6.0 / fan_in) * (0.01 if name.startswith("dist_") else 1.0)
            state[name] = rng.uniform(-bound, bound, shape).astype(np.float32)
        else:
            fill = _RANDOM_HEAD_BIAS.get(name, 0.1 if ".cnn." in name else 0.0)
            state[name] = np.full(shape, fill, np.float32)
    return state


def _conv_relu(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, stride: int) -> np.ndarray:
    """A valid (unpadded) convolution as one tensordot over strided windows: no copies of
    the input beyond what BLAS needs, no Python loop over pixels."""
    k = weight.shape[-1]
    windows = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(1, 2))
    windows = windows[:, ::stride, ::stride]  # (C, Ho, Wo, k, k)
    out = np.tensordot(weight, windows, axes=([1, 2, 3], [0, 3, 4]))  # (O, Ho, Wo)
    out += bias[:, None, None]
    return np.maximum(out, 0.0, out=out)


def _linear(
    x: np.ndarray, state: dict[str, np.ndarray], name: str, relu: bool = True
) -> np.ndarray:
    y = state[f"{name}.weight"] @ x + state[f"{name}.bias"]
    return np.maximum(y, 0.0) if relu else y


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def _beta_mode(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Roach's deterministic action: the Beta's mode where it has one, else the edge it piles
    up on, else (alpha, beta <= 1: U-shaped) the mean."""
    mode = (alpha - 1.0) / np.maximum(alpha + beta - 2.0, 1e-12)
    mode = np.where((alpha <= 1) & (beta > 1), 0.0, mode)
    mode = np.where((alpha > 1) & (beta <= 1), 1.0, mode)
    mean = alpha / np.maximum(alpha + beta, 1e-12)
    return np.where((alpha <= 1) & (beta <= 1), mean, mode)


class RoachPolicy:
    """Roach's PPO policy, deterministic (Beta mode), acc-as-action as in Roach's config.

    ``weights``: a Roach checkpoint (``.pth`` as saved by carla-roach, with
    ``policy_state_dict``), or an ``.npz`` of the same parameter names. Without one, the same
    network with weights from ``seed`` and a `RandomWeightsWarning`: the latency is the
    trained network's, the driving is not.
    """

    def __init__(self, weights: str | os.PathLike[str] | None = None, *, seed: int = 0) -> None:
        if weights is None:
            warn_random_weights(
                "Roach PPO policy",
                "Pass weights=PATH to a carla-roach checkpoint (.pth) or an .npz of its "
                "policy_state_dict.",
            )
            self._state = _random_state_dict(seed)
        else:
            self._state = load_state_dict(weights)
        self.random_weights = weights is None

    def __call__(
        self, birdview: np.ndarray, measurements: np.ndarray
    ) -> tuple[float, float, float]:
        """(throttle, steer, brake) for one frame: birdview (15, 192, 192) uint8 in Roach's
        channel layout, measurements (6,) as Roach's input_states [control, vel_xy]."""
        if birdview.shape != BIRDVIEW_SHAPE:
            raise ValueError(f"birdview has shape {birdview.shape}, expected {BIRDVIEW_SHAPE}")
        if np.shape(measurements) != (N_MEASUREMENTS,):
            raise ValueError(f"measurements have shape {np.shape(measurements)}, expected (6,)")
        state = self._state
        x = birdview.astype(np.float32) * np.float32(1.0 / 255.0)
        for index, (_, _, stride) in zip(_CNN_INDEX, _CONVS, strict=True):
            prefix = f"features_extractor.cnn.{index}"
            x = _conv_relu(x, state[f"{prefix}.weight"], state[f"{prefix}.bias"], stride)
        image_features = x.reshape(-1)
        m = np.asarray(measurements, np.float32)
        m = _linear(m, state, "features_extractor.state_linear.0")
        m = _linear(m, state, "features_extractor.state_linear.2")
        f = _linear(np.concatenate([image_features, m]), state, "features_extractor.linear.0")
        f = _linear(f, state, "features_extractor.linear.2")
        latent = _linear(_linear(f, state, "policy_head.0"), state, "policy_head.2")
        alpha = _softplus(_linear(latent, state, "dist_mu.0", relu=False))
        beta = _softplus(_linear(latent, state, "dist_sigma.0", relu=False))
        acc, steer = (2.0 * _beta_mode(alpha, beta) - 1.0).tolist()  # [0, 1] -> [-1, 1]
        throttle, brake = (acc, 0.0) if acc >= 0.0 else (0.0, -acc)
        return (
            float(np.clip(throttle, 0, 1)),
            float(np.clip(steer, -1, 1)),
            float(np.clip(brake, 0, 1)),
        )


def load_state_dict(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The policy's parameters from a carla-roach ``.pth`` or an ``.npz``, checked against
    Roach's names and shapes.

    A ``.pth`` is read by `torch_checkpoint.load`, which runs no code from the file (gym
    spaces in ``policy_init_kwargs`` become inert placeholders).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such policy checkpoint")
    try:
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                state = {name: archive[name] for name in archive.files}
        else:
            state = _read_torch_checkpoint(path)
    except torch_checkpoint.CheckpointError as exc:
        raise ValueError(f"{path}: not a Roach policy checkpoint ({exc.reason})") from None
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"{path}: not a Roach policy checkpoint ({exc})") from None
    missing = [name for name in PARAMETER_SHAPES if name not in state]
    if missing:
        raise ValueError(f"{path}: not a Roach policy checkpoint: missing {', '.join(missing[:4])}")
    for name, shape in PARAMETER_SHAPES.items():
        if tuple(state[name].shape) != shape:
            raise ValueError(
                f"{path}: {name} has shape {tuple(state[name].shape)}, Roach's is {shape}"
            )
    return {name: np.ascontiguousarray(state[name], np.float32) for name in PARAMETER_SHAPES}


def _read_torch_checkpoint(path: Path) -> dict[str, np.ndarray]:
    saved = torch_checkpoint.load(path)
    state = saved.get("policy_state_dict", saved) if isinstance(saved, dict) else None
    if not isinstance(state, dict):
        raise ValueError("no policy_state_dict inside")
    return {k: v for k, v in state.items() if isinstance(v, np.ndarray)}
