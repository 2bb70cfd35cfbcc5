"""The Roach policy: Roach's shapes, deterministic, checkpoints in both formats, clear errors."""

import numpy as np
import pytest

from carla_demo.policy import PARAMETER_SHAPES, RoachPolicy, load_state_dict
from carla_demo.weights import RandomWeightsWarning

from .torch_files import Module, write_checkpoint, write_exploit

RNG = np.random.default_rng(3)
BIRDVIEW = RNG.integers(0, 256, (15, 192, 192), dtype=np.uint8)
MEASUREMENTS = np.array([0.3, 0.0, 0.0, 1.0, 4.0, 0.1], np.float32)


def _policy(seed=0):
    with pytest.warns(RandomWeightsWarning, match="SEEDED RANDOM WEIGHTS"):
        return RoachPolicy(seed=seed)


def test_roach_architecture_and_a_valid_control():
    # Roach's XtMaCNN + heads: 1,393,972 parameters without the value head
    assert sum(int(np.prod(s)) for s in PARAMETER_SHAPES.values()) == 1_393_972
    throttle, steer, brake = _policy()(BIRDVIEW, MEASUREMENTS)
    assert 0 <= throttle <= 1 and -1 <= steer <= 1 and 0 <= brake <= 1
    assert throttle == 0 or brake == 0  # acc-as-action: one or the other


def test_same_seed_same_network_other_seed_other_network():
    assert _policy(0)(BIRDVIEW, MEASUREMENTS) == _policy(0)(BIRDVIEW, MEASUREMENTS)
    assert _policy(0)(BIRDVIEW, MEASUREMENTS) != _policy(1)(BIRDVIEW, MEASUREMENTS)


def test_the_view_changes_the_action():
    policy = _policy()
    other = np.zeros_like(BIRDVIEW)
    assert policy(BIRDVIEW, MEASUREMENTS) != policy(other, MEASUREMENTS)


def test_npz_checkpoint_round_trip(tmp_path, recwarn):
    state = {
        k: RNG.standard_normal(s).astype(np.float32) * 0.05 for k, s in PARAMETER_SHAPES.items()
    }
    np.savez(tmp_path / "roach.npz", **state)
    policy = RoachPolicy(tmp_path / "roach.npz")
    assert not policy.random_weights
    assert not [w for w in recwarn if issubclass(w.category, RandomWeightsWarning)]
    loaded = load_state_dict(tmp_path / "roach.npz")
    assert all(np.array_equal(loaded[k], state[k]) for k in state)


def _write_torch_checkpoint(path, state):
    """A Roach checkpoint as torch.save writes one (a gym space in its kwargs, as Roach's
    have)."""
    space = Module("gym.spaces.Box", low=-1.0)
    write_checkpoint(path, {"policy_state_dict": state, "policy_init_kwargs": {"space": space}})


def test_roach_pth_checkpoint_loads_without_torch_and_without_running_code(tmp_path):
    state = {k: RNG.standard_normal(s).astype(np.float32) for k, s in PARAMETER_SHAPES.items()}
    _write_torch_checkpoint(tmp_path / "ckpt.pth", state)
    loaded = load_state_dict(tmp_path / "ckpt.pth")
    assert all(np.array_equal(loaded[k], state[k]) for k in state)
    assert RoachPolicy(tmp_path / "ckpt.pth")(BIRDVIEW, MEASUREMENTS) is not None


def test_wrong_checkpoints_are_refused_with_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope.pth"):
        RoachPolicy(tmp_path / "nope.pth")
    (tmp_path / "text.pth").write_text("not a checkpoint")
    with pytest.raises(ValueError, match=r"text.pth: not a Roach policy checkpoint"):
        RoachPolicy(tmp_path / "text.pth")
    state = {k: np.zeros(s, np.float32) for k, s in PARAMETER_SHAPES.items()}
    state["policy_head.0.weight"] = np.zeros((128, 256), np.float32)
    np.savez(tmp_path / "other.npz", **state)
    with pytest.raises(ValueError, match=r"other.npz: policy_head.0.weight has shape \(128, 256\)"):
        RoachPolicy(tmp_path / "other.npz")
    del state["dist_mu.0.bias"]
    np.savez(tmp_path / "partial.npz", **state)
    with pytest.raises(ValueError, match=r"partial.npz: .*missing dist_mu.0.bias"):
        RoachPolicy(tmp_path / "partial.npz")


def test_bad_inputs_name_the_shape():
    policy = _policy()
    with pytest.raises(ValueError, match=r"birdview has shape \(3, 192, 192\)"):
        policy(BIRDVIEW[:3], MEASUREMENTS)
    with pytest.raises(ValueError, match=r"measurements have shape \(5,\)"):
        policy(BIRDVIEW, MEASUREMENTS[:5])


def test_a_checkpoint_cannot_run_code(tmp_path):
    marker = tmp_path / "ran"
    write_exploit(tmp_path / "evil.pth", "policy_state_dict", marker)
    with pytest.raises(ValueError, match=r"evil.pth: not a Roach policy checkpoint"):
        load_state_dict(tmp_path / "evil.pth")
    assert not marker.exists()
