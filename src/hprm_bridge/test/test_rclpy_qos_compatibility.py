"""Publishers and subscriptions whose QoS profiles DDS would not match stay unconnected
between federates, and each end gets its incompatible-QoS event at the start
(hprm_bridge.rclpy.qos_compatibility); the same node file under real rclpy (Humble,
Cyclone DDS) hears the same events and nothing else."""

import re
from pathlib import Path

import pytest

from hprm_bridge.rclpy.duration import Duration
from hprm_bridge.rclpy.qos import (
    DurabilityPolicy,
    LivelinessPolicy,
    QoSProfile,
    ReliabilityPolicy,
)
from hprm_bridge.rclpy.qos_compatibility import contract, policy_kind
from hprm_core.structure import shortfall

PAIR = Path(__file__).parent / "nodes" / "qos_pair.py"
# what each listener requests of a talker that offers the defaults (reliable, volatile,
# no deadline, automatic liveliness, no lease): the policy its event names, or None
LISTENERS = {
    "durable": (["durability:=transient_local"], "DURABILITY"),
    "deadline": (["deadline_ms:=100"], "DEADLINE"),
    "manual": (["liveliness:=manual_by_topic"], "LIVELINESS"),
    "lease": (["lease_ms:=1000"], "LIVELINESS"),
    "both": (["deadline_ms:=100", "durability:=transient_local"], "DURABILITY"),
    "quiet": (["durability:=transient_local", "quiet:=true"], "DURABILITY"),
    "lax": (["reliability:=best_effort"], None),
}


def _expected_listener(policy, quiet=False):
    if policy is None:
        return ["HEARD 30 messages", "STOP"]  # every tick's, at its tag
    if quiet:
        return [
            "New publisher discovered on topic 'pair', offering incompatible QoS. No messages "
            f"will be received from it. Last incompatible policy: {policy}",
            "HEARD 0 messages",
            "STOP",
        ]
    return [f"INCOMPATIBLE requested total 1 +1 {policy}", "HEARD 0 messages", "STOP"]


def _lines(out, who):
    lines = re.findall(rf"^\[{who}\] (.*)$", out, re.M)
    return [re.sub(r"^\[WARN\] \[[\d.]+\] \[qos_pair\]: ", "", x) for x in lines
            if x.startswith(("INCOMPATIBLE", "HEARD", "STOP", "[WARN]", "MATCHED"))]  # fmt: skip


def _once(lines):
    """Real Cyclone DDS's events with each count read as one peer's: Cyclone may count one
    incompatible peer more than once (seen beside two CPU hogs: ``total 2 +2`` for the
    one talker, as if it rediscovered it, and rclpy's warning for it printed twice in a
    row), where HPRM counts each refused peer once."""

    def one(line):
        m = re.match(r"(INCOMPATIBLE \w+ total )(\d+) \+(\d+)( .*)", line)
        if m is None:
            return line
        assert int(m[2]) >= 1 and int(m[3]) >= 1, line
        return f"{m[1]}1 +1{m[4]}"

    out = []
    for x in map(one, lines):
        if not (out and x == out[-1] and x.startswith("New publisher discovered")):
            out.append(x)
    return out


def test_incompatible_pairs_stay_apart_and_each_end_hears_its_event(ported_run):
    nodes = [f"talker={PAIR}", *(f"{name}={PAIR}" for name in LISTENERS)]
    params = [a for name, (given, _) in LISTENERS.items()
              for p in ("role:=listener", *given) for a in ("--param", f"{name}:{p}")]  # fmt: skip
    out = ported_run(*nodes, *params, timeout="2 s")
    for name, (given, policy) in LISTENERS.items():
        assert _lines(out, name) == _expected_listener(policy, "quiet:=true" in given), out
    # the talker: one event per listener refused, in the federation's order, at the start
    refused = [policy for _, policy in LISTENERS.values() if policy]
    assert _lines(out, "talker") == [
        *(f"INCOMPATIBLE offered total {k} +1 {policy}" for k, policy in enumerate(refused, 1)),
        "MATCHED 1",  # the lax one: get_subscription_count counts matched subscriptions
    ], out
    assert "talker.pub0 -x- quiet.sub0 (topic /pair): not connected" in out


@pytest.mark.ros2
@pytest.mark.parametrize("talker,listener,policy", [
    (["reliability:=best_effort"], ["reliability:=reliable"], "RELIABILITY"),
    (["deadline_ms:=200"], ["deadline_ms:=100"], "DEADLINE"),
    (["lease_ms:=2000"], ["lease_ms:=1000", "quiet:=true"], "LIVELINESS"),
    (["reliability:=best_effort"], ["reliability:=reliable", "durability:=transient_local"],
     "RELIABILITY"),
    (["deadline_ms:=100"], ["deadline_ms:=200"], None),
])  # fmt: skip
def test_real_rclpy_refuses_the_same_pairs(rclpy_until_stop, talker, listener, policy):
    def args(role, given):
        return ["--ros-args", "-p", f"role:={role}", *(a for p in given for a in ("-p", p))]

    lines = rclpy_until_stop([PAIR, *args("listener", listener)], [PAIR, *args("talker", talker)])
    got = _once(_lines("\n".join(f"[l] {x}" for x in lines), "l"))
    if policy is None:  # compatible: heard from its first tick on, DDS discovery allowing
        assert got[-1] == "STOP" and int(got[0].split()[1]) > 0, lines
    else:
        assert got == _expected_listener(policy, "quiet:=true" in listener), lines


def test_a_contract_follows_dds_request_versus_offered_rules():
    def qos(**kw):
        return QoSProfile(depth=1, **kw)

    cases = [  # offered, requested, refused on
        (qos(reliability=ReliabilityPolicy.BEST_EFFORT), qos(), ["reliability"]),
        (qos(), qos(reliability=ReliabilityPolicy.BEST_EFFORT), []),
        (qos(reliability=ReliabilityPolicy.SYSTEM_DEFAULT), qos(), []),
        (qos(), qos(durability=DurabilityPolicy.TRANSIENT_LOCAL), ["durability"]),
        (qos(deadline=Duration(seconds=1)), qos(deadline=Duration(seconds=2)), []),
        (qos(), qos(deadline=Duration(seconds=2)), ["deadline"]),  # offered: none
        (qos(liveliness=LivelinessPolicy.MANUAL_BY_TOPIC), qos(), []),
        (qos(), qos(liveliness=LivelinessPolicy.MANUAL_BY_TOPIC), ["liveliness"]),
        (qos(liveliness_lease_duration=Duration(seconds=3)),
         qos(liveliness_lease_duration=Duration(seconds=2)), ["lease"]),
    ]  # fmt: skip
    for offered, requested, refused in cases:
        assert shortfall(contract(offered), contract(requested)) == refused, (offered, requested)
    assert policy_kind(("liveliness", "deadline")).name == "DEADLINE"  # DDS checks it first
    assert policy_kind(("lease",)).name == "LIVELINESS"


SIBLINGS = Path(__file__).parent / "nodes" / "qos_siblings.py"
SIBLING_LINES = [  # the events in either order: rclpy's come as DDS discovers
    "HEARD 0 messages",
    "INCOMPATIBLE offered total 1 +1 RELIABILITY",
    "INCOMPATIBLE requested total 1 +1 RELIABILITY",
    "MATCHED 0",
    "STOP",
]


def test_siblings_in_one_process_are_kept_apart_as_federates_are(ported_run):
    out = ported_run(SIBLINGS, timeout="2 s")
    assert sorted(_lines(out, "qos_siblings")) == SIBLING_LINES, out


@pytest.mark.ros2
def test_siblings_under_real_rclpy(rclpy_until_stop):
    lines = rclpy_until_stop([SIBLINGS])
    assert sorted(_once(_lines("\n".join(f"[s] {x}" for x in lines), "s"))) == SIBLING_LINES, lines


SELF = Path(__file__).parent / "nodes" / "qos_self.py"
SELF_LINES = [  # the two events in either order (rclpy's: as DDS matches)
    "HEARD [101, 102, 103, 104, 105]",  # the reliable publisher's only
    "INCOMPATIBLE offered total 1 +1 RELIABILITY",
    "INCOMPATIBLE requested total 1 +1 RELIABILITY",
    "MATCHED 0 1",
    "STOP",
]


def _self_lines(out):
    return sorted(re.findall(r"^(?:\[qos_self\] )?((?:INCOMPATIBLE|HEARD|MATCHED|STOP).*)$",
                             out, re.M))  # fmt: skip


def test_a_node_hears_its_own_publishers_only_where_dds_would_match_them(ported_run):
    assert _self_lines(ported_run(SELF, timeout="2 s")) == SELF_LINES


@pytest.mark.ros2
def test_a_node_hears_its_own_publishers_the_same_under_real_rclpy(rclpy_until_stop):
    assert sorted(_once(_self_lines("\n".join(rclpy_until_stop([SELF]))))) == SELF_LINES
