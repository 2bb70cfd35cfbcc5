"""Bridge configuration (hprm_bridge.bridge_config): which open topics the gateway carries and
how, parsed and selected directly. A real gateway applying one: test_gateway.py."""

import re

import pytest

from hprm_bridge.bridge_config import BridgeConfig, TopicRule
from hprm_bridge.gateway import bridged_topics
from hprm_bridge.wire import QOS_DEFAULT, QOS_SENSOR_DATA, Durability


def _port(topic, direction="in"):
    return {"port": f"p{topic}", "direction": direction, "topic": topic,
            "msg_type": "std_msgs/msg/String"}  # fmt: skip


def test_by_default_every_open_topic_is_bridged_on_arrival():
    topics = bridged_topics([_port("/a"), _port("/b", "out")])
    assert [(t.topic, t.bridged, t.tag_policy, t.depth) for t in topics] == [
        ("/a", True, "arrival", 10), ("/b", True, "arrival", 10)]  # fmt: skip


def test_deny_wins_over_allow_and_an_entry_allows_its_topic(tmp_path):
    path = tmp_path / "bridge.yaml"
    path.write_text(
        "allow: ['/camera/.*']\n"
        "deny: ['/camera/debug/.*']\n"
        "lateness: clamp\n"
        "topics:\n"
        "  /scan: {tag_policy: header_stamp, stamp_offset: 5 ms, depth: 3}\n"
        "  /camera/image: {lateness: drop, qos: sensor_data, depth: 2}\n"
        "  /map: {qos: {durability: transient_local}}\n"
    )
    config = BridgeConfig.load(path)
    ports = [_port(t) for t in ("/camera/image", "/camera/debug/x", "/scan", "/odom")]
    got = {t.topic: t for t in bridged_topics(ports, config)}
    assert {t: v.bridged for t, v in got.items()} == {
        "/camera/image": True, "/camera/debug/x": False, "/scan": True, "/odom": False}  # fmt: skip
    assert (got["/scan"].tag_policy, got["/scan"].stamp_offset, got["/scan"].depth) == (
        "header_stamp", 5_000_000, 3)  # fmt: skip
    assert got["/scan"].lateness == "clamp"  # the file's default
    assert got["/camera/image"].lateness == "drop"  # its own
    # QoS: followed from the plain ROS 2 side (None) unless fixed, a profile or two policies
    assert got["/scan"].qos is None
    assert got["/camera/image"].qos == QOS_SENSOR_DATA.with_(depth=2)
    assert config.rule("/map").profile() == QOS_DEFAULT.with_(durability=Durability.TRANSIENT_LOCAL)
    # what reaches the gateway's process: the same configuration
    assert BridgeConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("allow: ['(']\n", "allow: '(' is not a regular expression"),
        ("colour: red\n", "unknown key colour"),
        ("topics:\n  /x: {tag_policy: stamp}\n", "topics: /x: tag_policy must be one of"),
        ("topics:\n  /x: {depth: 0}\n", "topics: /x: depth must be a positive integer"),
        ("topics:\n  /x: {stamp_offset: soon}\n", "topics: /x:"),
        ("topics:\n  /x: {qos: best}\n", "topics: /x: qos: unknown profile 'best'"),
        ("topics:\n  /x: {qos: {reliability: sometimes}}\n", "topics: /x: qos: 'sometimes'"),
        ("topics:\n  /x: {qos: {history: all}}\n", "topics: /x: qos: expected a profile"),
        ("topics:\n  /x: {speed: 3}\n", "topics: /x: unknown key speed"),
        ("topics:\n  x: {}\n", "topics: 'x': give the absolute name"),
        ("lateness: late\n", "lateness must be one of"),
        (
            "lateness: no_such_module_x:f\n",
            "lateness handler 'no_such_module_x:f' cannot be imported",
        ),
        ("lateness: os:sep\n", "lateness handler 'os:sep' is not callable"),
        ("[1, 2]\n", "expected a mapping"),
        ("allow: [\n", "not valid YAML"),
    ],
)
def test_broken_configs_are_refused_naming_the_file_and_key(tmp_path, text, message):
    path = tmp_path / "bridge.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(f"{path}: ") + ".*" + re.escape(message)):
        BridgeConfig.load(path)


def test_a_python_config_is_checked_when_built():
    with pytest.raises(ValueError, match="tag_policy must be one of"):
        TopicRule(tag_policy="header")
    with pytest.raises(ValueError, match="deny: '\\[' is not a regular expression"):
        BridgeConfig(deny=["["])
