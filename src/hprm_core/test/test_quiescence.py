"""The decentralized quiescence decision (hprm_core.quiescence) on its own:
a federation is quiescent only when every live federate reported idle and
every link's bytes sent equal its bytes read."""

from dataclasses import dataclass, field

import pytest

from hprm_core.quiescence import idle_report, is_quiescent, parse_report


@dataclass
class Fed:
    id: int
    upstream: list = field(default_factory=list)
    resigned: bool = False
    failed: bool = False
    idle: dict | None = None


def _ring(sent_ab=10, read_ab=10, sent_ba=20, read_ba=20):
    """a <-> b, both idle with the given byte counts on each link."""
    a = Fed(0, [(1, 1000)], idle=parse_report(idle_report({1: sent_ab}, {1: (read_ba, False)})))
    b = Fed(1, [(0, None)], idle=parse_report(idle_report({0: sent_ba}, {0: (read_ab, False)})))
    return {0: a, 1: b}


def test_a_quiet_cycle_with_nothing_in_flight_is_quiescent():
    assert is_quiescent(_ring())


@pytest.mark.parametrize("counts", [dict(read_ab=9), dict(sent_ba=21)])
def test_a_message_in_flight_on_either_link_is_not(counts):
    assert not is_quiescent(_ring(**counts))


def test_a_federate_that_did_not_report_idle_keeps_it_going():
    feds = _ring()
    feds[1].idle = None
    assert not is_quiescent(feds)


def test_a_resigned_upstream_counts_once_its_resign_was_read():
    feds = _ring()
    feds[1].resigned = True
    assert not is_quiescent(feds)  # a has not read b's RESIGN yet
    feds[0].idle = parse_report(idle_report({1: 10}, {1: (20, True)}))
    assert is_quiescent(feds)


def test_a_failed_upstream_is_not_waited_for():
    feds = _ring(sent_ba=99)
    feds[1].failed = True
    assert is_quiescent(feds)


def test_malformed_reports_are_refused():
    for bad in (b"not json", b"{}", b'{"sent": {"x": 1}, "read": {}}', b"[]"):
        with pytest.raises(ValueError):
            parse_report(bad)
