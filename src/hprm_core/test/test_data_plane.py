"""Per-connection data-plane options, as ``connect(..., threshold=, serialization=)``
passes them on (the data plane itself runs in test_federation's federations)."""

import pytest

from hprm_core.data_plane import link_options
from hprm_core.serialization import DEFAULT_THRESHOLD


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
