import datetime

import pytest

from hprm_core.tag import FOREVER, MSEC, NEVER, SEC, Tag, duration, format_duration


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("10 ms", 10 * MSEC),
        ("1s", SEC),
        ("1.5 s", 1_500_000_000),
        ("250 us", 250_000),
        ("2 min", 120 * SEC),
        ("7 ns", 7),
        (" 3 MSEC ", 3 * MSEC),
        (42, 42),
        (datetime.timedelta(milliseconds=3), 3 * MSEC),
    ],
)
def test_duration_parses_human_units(text, ns):
    assert duration(text) == ns


@pytest.mark.parametrize("bad", ["10", "ten ms", "5 parsecs", "", "1e3 ms"])
def test_duration_rejects_unparsable_text_with_a_clear_message(bad):
    with pytest.raises(ValueError, match="cannot parse duration"):
        duration(bad)


def test_duration_rejects_bool():
    with pytest.raises(TypeError):
        duration(True)


def test_forever_and_none_are_int64_max():
    assert duration(None) == duration("forever") == 2**63 - 1


def test_tags_order_lexicographically():
    tags = [Tag(2, 0), Tag(1, 5), Tag(1, 0), NEVER, FOREVER, Tag(2, 1)]
    assert sorted(tags) == [NEVER, Tag(1, 0), Tag(1, 5), Tag(2, 0), Tag(2, 1), FOREVER]


def test_zero_delay_advances_microstep_and_nonzero_resets_it():
    t = Tag(100, 3)
    assert t.delay(0) == Tag(100, 4)
    assert t.delay(5) == Tag(105, 0)


def test_delay_saturates_at_forever():
    assert Tag(10, 0).delay(duration("forever")) == FOREVER


def test_format_duration_round_trips():
    for ns in (10 * MSEC, SEC, 3, 120 * SEC, 1500):
        assert duration(format_duration(ns)) == ns
