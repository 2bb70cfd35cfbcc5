"""Domain ids and their UDP ports: a domain that cannot be created says why."""

from __future__ import annotations

import socket

import pytest

from hprm_bridge.wire import Node, WireError
from hprm_bridge.wire.dds_config import (
    domain_id_from_env,
    domain_ports,
    domain_shard,
    ephemeral_ports,
    in_ephemeral_range,
    random_domain_id,
)


def test_ports_follow_the_rtps_mapping():
    assert domain_ports(0).start == 7400
    assert domain_ports(1).start == 7650
    assert domain_ports(172).start == 50400


def test_ros2_advice_holds_with_the_default_ephemeral_range():
    if ephemeral_ports() != range(32768, 61000):
        pytest.skip(f"this machine's ephemeral range is {ephemeral_ports()}, not Linux's default")
    assert not any(in_ephemeral_range(d) for d in range(0, 101))
    assert all(in_ephemeral_range(d) for d in range(102, 214))


def test_random_domain_ids_stay_out_of_the_ephemeral_range_and_off_zero(monkeypatch):
    monkeypatch.delenv("HPRM_DOMAIN_SHARD", raising=False)  # set in a pytest-xdist worker
    avoid = {d for d in range(1, 233) if d % 3}
    seen = {random_domain_id(avoid) for _ in range(300)}
    assert seen and 0 not in seen and not seen & avoid
    assert not any(in_ephemeral_range(d) for d in seen)
    with pytest.raises(RuntimeError, match="no free DDS domain id"):
        random_domain_id(avoid=range(233))


def test_runs_sharing_the_machine_draw_from_disjoint_domain_ids(monkeypatch):
    """Three pytest-xdist workers, each with its share: never one id for two of them."""
    drawn = []
    for k in range(3):
        monkeypatch.setenv("HPRM_DOMAIN_SHARD", f"{k}/3")
        drawn.append({random_domain_id() for _ in range(100)})
        assert len(drawn[-1]) > 1 and {d % 3 for d in drawn[-1]} == {k}
    assert not drawn[0] & drawn[1] and not drawn[1] & drawn[2] and not drawn[0] & drawn[2]


@pytest.mark.parametrize("value", ["3/3", "1", "a/b", "-1/3", "0/0", "0/200"])
def test_a_bad_domain_shard_is_refused_naming_it(value):
    with pytest.raises(ValueError, match=f"HPRM_DOMAIN_SHARD={value!r} is not K/N"):
        domain_shard({"HPRM_DOMAIN_SHARD": value})


@pytest.mark.parametrize("value", ["233", "-1", "ten"])
def test_bad_ros_domain_id_is_refused(value):
    with pytest.raises(ValueError):
        domain_id_from_env({"ROS_DOMAIN_ID": value})


def _hold_base_port(candidates) -> tuple[int, socket.socket]:
    """Bind (without SO_REUSEADDR) the discovery port of the first domain we can."""
    for d in candidates:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.bind(("0.0.0.0", domain_ports(d).start))
        except OSError:
            s.close()
            continue
        return d, s
    pytest.fail("could not bind the discovery port of any candidate domain")


@pytest.mark.parametrize("ephemeral", [False, True], ids=["below", "ephemeral"])
def test_taken_port_is_a_clear_error_and_leaves_the_domain_usable(domain, ephemeral):
    """What CI met at random with domain 172: Cyclone's bare 'Non specific error'."""
    candidates = [d for d in range(150, 200) if in_ephemeral_range(d)] if ephemeral else [domain]
    d, held = _hold_base_port(candidates)
    with held, pytest.raises(WireError) as err:
        Node("blocked", domain_id=d, localhost_only=True)
    text = str(err.value)
    assert f"cannot create DDS domain {d}" in text
    assert str(domain_ports(d).start) in text
    assert ("ephemeral port range" in text) is ephemeral
    assert ("ROS_DOMAIN_ID 0..101" in text) is ephemeral
    with Node("unblocked", domain_id=d, localhost_only=True) as node:
        assert node.domain_id == d
