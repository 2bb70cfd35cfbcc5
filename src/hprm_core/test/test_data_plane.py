"""Per-connection data-plane options, as ``connect(..., threshold=, serialization=)``
passes them on, and encode/decode of one data plane over TCP (streamed buffers); the
data plane with shared memory runs in test_federation's federations."""

import numpy as np
import pytest

from hprm_core import Reactor
from hprm_core.data_plane import DataPlane, link_options
from hprm_core.environment import Environment
from hprm_core.serialization import DEFAULT_THRESHOLD, SerializationError


@pytest.mark.parametrize(
    ("threshold", "serialization", "expected"),
    [
        (None, None, (DEFAULT_THRESHOLD, "pickle")),
        (1e6, "safe", (1_000_000, "safe")),  # a float of bytes, as users write it
        ("4096", None, (4096, "pickle")),
    ],
)
def test_link_options_take_what_users_write(threshold, serialization, expected):
    assert link_options(threshold, serialization) == expected


@pytest.mark.parametrize(
    ("threshold", "serialization", "message"),
    [
        (-1, None, "threshold must not be negative, got -1"),
        ("big", None, "threshold must be a number of bytes, got 'big'"),
        (None, "json", "serialization must be 'pickle' or 'safe', got 'json'"),
        (None, 5, "serialization must be 'pickle' or 'safe', got 5"),  # not a TypeError
    ],
)
def test_bad_link_options_are_refused_by_name(threshold, serialization, message):
    with pytest.raises(ValueError, match=message):
        link_options(threshold, serialization)


@pytest.fixture
def tcp_plane():
    """A data plane with no shared memory (as across hosts): large buffers are
    streamed after the header."""
    sched = Environment(Reactor()).scheduler
    plane = DataPlane(sched, 1, "b", secret=b"s" * 32, federation="f", directory=None,
                      peer_names={0: "a"})  # fmt: skip
    yield plane
    plane.close()
    sched.close()


def _wire(parts):
    return memoryview(b"".join(bytes(p) for p in parts))


@pytest.mark.parametrize(
    "value",
    [
        {"id": 7, "name": "small"},  # inline pickle
        {"img": np.arange(DEFAULT_THRESHOLD, dtype=np.uint8), "stamp": 3},  # one C pass
        [b"x" * DEFAULT_THRESHOLD, np.ones(DEFAULT_THRESHOLD)],  # large bytes: full pickler
    ],
    ids=["inline", "large array", "large bytes"],
)
def test_values_cross_a_tcp_data_plane_intact(tcp_plane, value):
    got = tcp_plane.decode(0, _wire(tcp_plane.encode(value, [0], DEFAULT_THRESHOLD, "pickle")),
                           "pickle", copy_raw=True)  # fmt: skip
    assert type(got) is type(value)
    for a, b in zip(got.values() if isinstance(got, dict) else got,
                    value.values() if isinstance(value, dict) else value, strict=True):  # fmt: skip
        assert np.array_equal(a, b) if isinstance(b, np.ndarray) else a == b


def test_a_truncated_streamed_buffer_is_named(tcp_plane):
    arr = np.arange(DEFAULT_THRESHOLD, dtype=np.uint8)
    wire = _wire(tcp_plane.encode({"img": arr}, [0], DEFAULT_THRESHOLD, "pickle"))
    with pytest.raises(SerializationError, match=r"streamed buffer 0 truncated \(65535 of 65536"):
        tcp_plane.decode(0, wire[:-1], "pickle", copy_raw=True)
