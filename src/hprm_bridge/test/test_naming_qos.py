"""Name mangling and QoS rules, checked against the ROS 2 conventions they copy."""

import pytest
from cyclonedds.qos import Policy

from hprm_bridge.wire import (
    QOS_DEFAULT,
    QOS_LATCHED,
    QOS_SENSOR_DATA,
    QOS_SYSTEM_DEFAULT,
    Durability,
    InvalidNameError,
    Liveliness,
    QoSProfile,
    Reliability,
    check_compatible,
    naming,
    qos,
)


@pytest.mark.parametrize(
    ("name", "ns", "expected"),
    [
        ("chatter", "/", "/chatter"),
        ("chatter", "/robot", "/robot/chatter"),
        ("/abs/topic", "/robot", "/abs/topic"),
        ("~/cmd", "/robot", "/robot/node/cmd"),
        ("~", "/", "/node"),
        ("a/b", "robot", "/robot/a/b"),
        ("{node}/x", "/ns", "/ns/node/x"),
        ("{ns}/y", "/ns", "/ns/y"),
        ("{namespace}/y", "/", "/y"),
        ("/abs/{node}", "/ns", "/abs/node"),
    ],
)
def test_expand_topic_name(name, ns, expected):
    assert naming.expand_topic_name(name, "node", ns) == expected


@pytest.mark.parametrize("bad", ["", "/", "a//b", "a/", "1abc", "a-b", "/x/9y", "a~b", "~x", "{x"])
def test_invalid_topic_names(bad):
    with pytest.raises(InvalidNameError):
        naming.expand_topic_name(bad, "node", "/")


def test_an_unknown_substitution_is_named():
    with pytest.raises(InvalidNameError, match=r"unknown substitution \{robot\}"):
        naming.expand_topic_name("{robot}/x", "node", "/")


def test_dds_names():
    assert naming.dds_topic_name("/chatter") == "rt/chatter"
    assert naming.dds_topic_name("/a/b") == "rt/a/b"
    assert naming.ros_topic_name("rt/a/b") == "/a/b"
    assert naming.ros_topic_name("ros_discovery_info") is None
    assert naming.dds_type_name("std_msgs/msg/String") == "std_msgs::msg::dds_::String_"
    assert naming.dds_type_name("sensor_msgs/Image") == "sensor_msgs::msg::dds_::Image_"
    assert naming.ros_type_name("sensor_msgs::msg::dds_::Image_") == "sensor_msgs/msg/Image"
    assert naming.ros_type_name("Foo") is None
    with pytest.raises(InvalidNameError):
        naming.validate_node_name("bad-name")
    with pytest.raises(InvalidNameError):
        naming.normalize_namespace("/a//b")


def test_profiles_match_rmw():
    assert (QOS_DEFAULT.depth, QOS_DEFAULT.reliability, QOS_DEFAULT.durability) == (
        10,
        Reliability.RELIABLE,
        Durability.VOLATILE,
    )
    assert (QOS_SENSOR_DATA.depth, QOS_SENSOR_DATA.reliability) == (5, Reliability.BEST_EFFORT)
    assert QOS_LATCHED.durability is Durability.TRANSIENT_LOCAL and QOS_LATCHED.depth == 1
    assert qos.resolve(3).depth == 3 and qos.resolve("sensor_data") is QOS_SENSOR_DATA
    with pytest.raises(ValueError):
        qos.resolve("nope")
    d = qos.to_dds(QOS_SYSTEM_DEFAULT)
    assert d[Policy.History] == Policy.History.KeepLast(1)
    d = qos.to_dds(QOS_LATCHED)
    assert d[Policy.Durability] == Policy.Durability.TransientLocal
    assert d[Policy.DurabilityService].history == Policy.History.KeepLast(1)
    assert d[Policy.WriterDataLifecycle] == Policy.WriterDataLifecycle(autodispose=False)
    assert qos.to_dds(QOS_SENSOR_DATA)[Policy.Reliability] == Policy.Reliability.BestEffort


def test_compatibility_rules():
    ok, _ = check_compatible(QOS_DEFAULT, QOS_SENSOR_DATA)
    assert ok
    ok, why = check_compatible(QOS_SENSOR_DATA, QOS_DEFAULT)
    assert not ok and "Best effort" in why
    ok, why = check_compatible(QOS_DEFAULT, QOS_LATCHED)
    assert not ok and "Volatile" in why
    assert check_compatible(QOS_LATCHED, QOS_DEFAULT)[0]
    assert not check_compatible(QoSProfile(deadline=2.0), QoSProfile(deadline=1.0))[0]
    assert not check_compatible(QoSProfile(), QoSProfile(liveliness=Liveliness.MANUAL_BY_TOPIC))[0]
    assert qos.policy_name(11) == "RELIABILITY_QOS_POLICY" and qos.policy_name(99) == (
        "INVALID_QOS_POLICY"
    )


@pytest.mark.parametrize(
    "profile",
    [QOS_DEFAULT, QOS_SENSOR_DATA, QOS_LATCHED,
     QoSProfile(depth=0, history=qos.History.KEEP_ALL, deadline=0.5, lifespan=2.0,
                liveliness=Liveliness.MANUAL_BY_TOPIC, liveliness_lease_duration=3.0)],
)  # fmt: skip
def test_a_profile_read_back_from_its_dds_form_is_the_same_profile(profile):
    assert qos.from_dds(qos.to_dds(profile)) == profile


def test_a_subscription_matched_to_publishers_asks_only_what_all_of_them_offer():
    base = QOS_DEFAULT.with_(depth=7)
    assert qos.match_publishers(base, []) == base
    latched = qos.match_publishers(base, [QOS_LATCHED, QOS_LATCHED])
    assert (latched.reliability, latched.durability, latched.depth) == (
        Reliability.RELIABLE, Durability.TRANSIENT_LOCAL, 7)  # fmt: skip
    mixed = qos.match_publishers(base, [QOS_LATCHED, QOS_SENSOR_DATA])
    assert (mixed.reliability, mixed.durability) == (Reliability.BEST_EFFORT, Durability.VOLATILE)
    for pubs in ([QOS_LATCHED], [QOS_LATCHED, QOS_SENSOR_DATA], [QOS_DEFAULT]):
        matched = qos.match_publishers(base, pubs)
        assert all(check_compatible(p, matched)[0] for p in pubs)


def test_a_publisher_matched_to_subscriptions_offers_what_any_of_them_asks():
    base = QOS_DEFAULT
    assert qos.match_subscriptions(base, []) == base
    assert qos.match_subscriptions(base, [QOS_SENSOR_DATA]).reliability is Reliability.BEST_EFFORT
    wants = [QOS_SENSOR_DATA, QOS_LATCHED, QOS_DEFAULT.with_(deadline=0.1)]
    matched = qos.match_subscriptions(base, wants)
    assert (matched.reliability, matched.durability, matched.deadline) == (
        Reliability.RELIABLE, Durability.TRANSIENT_LOCAL, 0.1)  # fmt: skip
    assert all(check_compatible(matched, s)[0] for s in wants)
