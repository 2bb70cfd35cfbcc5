"""Real DDS traffic between processes: our client against itself and plain cyclonedds."""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import time
from pathlib import Path

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore

from hprm_bridge.wire import (
    QOS_LATCHED,
    Durability,
    MalformedSampleError,
    Node,
    QoSProfile,
    Reliability,
    TypeRegistry,
    UnknownTypeError,
)

_spec = importlib.util.spec_from_file_location(
    "hprm_bridge_test_peer", Path(__file__).with_name("peer.py")
)
peer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer)
make_message, summarize = peer.make_message, peer.summarize


def _pad4(raw: bytes) -> bytes:
    return raw + bytes(-len(raw) % 4)


def test_byte_for_byte_equal_to_rosbags(domain, peers):
    """What our publisher puts on the wire is rosbags' CDR of the same message."""
    reader_s = peers(
        "plain_sub",
        {"type": "std_msgs/msg/String", "dds_topic": "rt/ns/chatter", "count": 3},
        domain,
    )
    reader_i = peers(
        "plain_sub",
        {"type": "sensor_msgs/msg/Image", "dds_topic": "rt/ns/image", "count": 2},
        domain,
    )
    assert reader_s.wait_event("ready")["type_name"] == "std_msgs::msg::dds_::String_"
    reader_i.wait_event("ready")
    pub_s = peers(
        "publish",
        {
            "type": "std_msgs/msg/String",
            "topic": "chatter",
            "namespace": "/ns",
            "kind": "string",
            "count": 3,
        },
        domain,
    )
    pub_i = peers(
        "publish",
        {"type": "sensor_msgs/msg/Image", "topic": "/ns/image", "kind": "image:1001", "count": 2},
        domain,
    )
    strings, images = reader_s.result()["samples"], reader_i.result()["samples"]
    pub_s.result(), pub_i.result()

    store = get_typestore(Stores.ROS2_HUMBLE)  # independent of our registry
    types = TypeRegistry(use_ament_prefix_path=False)
    assert len(strings) == 3 and len(images) == 2
    for i, sample in enumerate(strings):
        want = bytes(store.serialize_cdr(make_message(types, "string", i), "std_msgs/msg/String"))
        assert want[:4] == b"\x00\x01\x00\x00"  # XCDR1 little endian
        assert bytes.fromhex(sample["raw"]) == _pad4(want)
        assert sample["data"] == f"hello {i} \u00e9\u4e16"  # decoded by cyclonedds' own codec
    for i, sample in enumerate(images):
        want = bytes(
            store.serialize_cdr(make_message(types, "image:1001", i), "sensor_msgs/msg/Image")
        )
        assert bytes.fromhex(sample["raw"]) == _pad4(want)


def test_plain_cyclonedds_writer_to_our_subscription(domain, peers):
    with Node("listener", domain_id=domain, localhost_only=True) as node:
        sub = node.create_subscription("std_msgs/msg/String", "/chatter")
        writer = peers(
            "plain_pub", {"dds_topic": "rt/chatter", "texts": ["a", "b\u00fc", ""]}, domain
        )
        got = [sub.take(timeout_sec=10) for _ in range(3)]
        writer.result()
    assert [m.data for m in got] == ["a", "b\u00fc", ""]


def test_incompatible_qos_is_logged_and_nothing_flows(domain, peers, caplog):
    caplog.set_level(logging.WARNING, logger="hprm_bridge.wire")
    with Node("strict", domain_id=domain, localhost_only=True) as node:
        sub = node.create_subscription("std_msgs/msg/String", "/q", qos=QoSProfile(depth=5))
        pub = peers(
            "publish",
            {
                "type": "std_msgs/msg/String",
                "topic": "/q",
                "kind": "string",
                "qos": "sensor_data",
                "count": 10,
                "wait_subs": 0,
                "period": 0.1,
            },
            domain,
        )
        deadline = time.monotonic() + 10
        while sub.incompatible_qos_count == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sub.take(timeout_sec=1.5) is None
        res = pub.result()
        assert sub.incompatible_qos_count >= 1
        assert sub.last_incompatible_policy == "RELIABILITY_QOS_POLICY"
    assert res["incompatible"] >= 1 and res["policy"] == "RELIABILITY_QOS_POLICY"
    text = caplog.text
    assert "New publisher discovered on topic '/q', offering incompatible QoS" in text
    assert "Last incompatible policy: RELIABILITY_QOS_POLICY" in text


def test_compatible_qos_mix_delivers(domain, peers, tmp_path):
    """Reliable publisher -> best-effort subscription is allowed by ROS 2's rules.

    The publisher starts only once this (best-effort) reader has matched it as
    well: discovery is asynchronous on each side, and a best-effort reader drops
    samples from a writer it has not matched yet (the writer, having matched
    the reader, sends them anyway and never repeats them)."""
    go = tmp_path / "go"
    with Node("lax", domain_id=domain, localhost_only=True) as node:
        sub = node.create_subscription("std_msgs/msg/String", "/q", qos="sensor_data")
        pub = peers(
            "publish",
            {
                "type": "std_msgs/msg/String",
                "topic": "/q",
                "kind": "string",
                "count": 3,
                "go_file": str(go),
            },
            domain,
        )
        assert sub.wait_for_publishers(1, timeout_sec=15)
        go.touch()
        got = [sub.take(timeout_sec=10) for _ in range(3)]
        pub.result()
    assert [m.data for m in got if m is not None] == [f"hello {i} \u00e9\u4e16" for i in range(3)]
    assert sub.incompatible_qos_count == 0


def test_volatile_publisher_vs_transient_local_subscription(domain, peers):
    with Node("durable", domain_id=domain, localhost_only=True) as node:
        sub = node.create_subscription("std_msgs/msg/String", "/d", qos=QOS_LATCHED)
        pub = peers(
            "publish",
            {
                "type": "std_msgs/msg/String",
                "topic": "/d",
                "kind": "string",
                "count": 5,
                "wait_subs": 0,
                "period": 0.2,
            },
            domain,
        )
        pub.result()
        assert sub.take(timeout_sec=0.5) is None
    assert sub.last_incompatible_policy == "DURABILITY_QOS_POLICY"


def test_latched_late_joiner_gets_last_sample_only(domain, peers):
    pub = peers(
        "publish",
        {
            "type": "std_msgs/msg/String",
            "topic": "/latched",
            "kind": "string",
            "qos": "latched",
            "count": 3,
            "wait_subs": 0,
            "period": 0.01,
            "linger": 6,
        },
        domain,
    )
    pub.wait_event("published")  # before any subscriber exists
    # A volatile late joiner in another process gets nothing. (Inside one process,
    # libddsc shares the remote writer between local readers, so a volatile reader
    # next to a transient-local one would see the replayed history too.)
    volatile = peers(
        "subscribe",
        {"type": "std_msgs/msg/String", "topic": "/latched", "count": 1, "duration": 2.5},
        domain,
    )
    with Node("late", domain_id=domain, localhost_only=True) as node:
        latched = node.create_subscription("std_msgs/msg/String", "/latched", qos=QOS_LATCHED)
        first = latched.take(timeout_sec=5)
        assert first is not None and first.data.startswith("hello 2 ")
        assert latched.take(timeout_sec=0.5) is None
    assert volatile.result()["messages"] == []
    pub.kill()


def test_domain_isolation(domain, other_domain, peers):
    with (
        Node("here", domain_id=domain, localhost_only=True) as same,
        Node("elsewhere", domain_id=other_domain, localhost_only=True) as far,
    ):
        near_sub = same.create_subscription("std_msgs/msg/String", "/iso")
        far_sub = far.create_subscription("std_msgs/msg/String", "/iso")
        pub = peers(
            "publish",
            {"type": "std_msgs/msg/String", "topic": "/iso", "kind": "string", "count": 3},
            domain,
        )
        got = [near_sub.take(timeout_sec=10) for _ in range(3)]
        pub.result()
        assert all(m is not None for m in got)
        assert far_sub.take(timeout_sec=0.2) is None
        assert far_sub.get_publisher_count() == 0


def _large(domain, peers, nbytes: int, count: int) -> None:
    types = TypeRegistry(use_ament_prefix_path=False)
    with Node("big_listener", domain_id=domain, localhost_only=True, types=types) as node:
        sub = node.create_subscription("sensor_msgs/msg/Image", "/camera/image_raw")
        pub = peers(
            "publish",
            {
                "type": "sensor_msgs/msg/Image",
                "topic": "/camera/image_raw",
                "kind": f"image:{nbytes}",
                "count": count,
                "period": 0.0,
            },
            domain,
        )
        got = []
        t0 = time.monotonic()
        while len(got) < count and time.monotonic() - t0 < 60:
            m = sub.take(timeout_sec=1)
            if m is not None:
                got.append(m)
        pub.result()
    assert len(got) == count, f"{len(got)}/{count} images of {nbytes} bytes arrived"
    for i, m in enumerate(got):
        want = make_message(types, f"image:{nbytes}", i)
        assert m.width == want.width and m.header.stamp.sec == 1000 + i
        assert m.data.size == want.data.size
        assert (
            hashlib.sha256(m.data.tobytes()).digest()
            == hashlib.sha256(want.data.tobytes()).digest()
        )


def test_10mb_images_delivered(domain, peers):
    _large(domain, peers, 10_000_000, 3)


@pytest.mark.slow
def test_50mb_images_delivered(domain, peers):
    _large(domain, peers, 50_000_000, 2)


def test_malformed_sample_dropped_and_counted(domain, peers, caplog):
    caplog.set_level(logging.WARNING, logger="hprm_bridge.wire")
    types = TypeRegistry(use_ament_prefix_path=False)
    good = bytes(types.encode(types.new("std_msgs/msg/String", data="ok"), "std_msgs/msg/String"))
    # valid CDR framing (length, NUL) that is not a ROS string: invalid UTF-8
    bad_utf8 = b"\x00\x01\x00\x00" + (3).to_bytes(4, "little") + b"\xff\xfe\x00"
    # garbage past the end of the message: not an encoding of std_msgs/String
    trailing = good + bytes(8)
    truncated = good[:6]  # cut inside the length field: libddsc refuses to send it
    with Node("victim", domain_id=domain, localhost_only=True, types=types) as node:
        sub = node.create_subscription("std_msgs/msg/String", "/m")
        pub = peers(
            "raw_pub",
            {
                "type": "std_msgs/msg/String",
                "dds_topic": "rt/m",
                "samples": [
                    good.hex(),
                    bad_utf8.hex(),
                    trailing.hex(),
                    truncated.hex(),
                    good.hex(),
                ],
            },
            domain,
        )
        got = [sub.take(timeout_sec=10) for _ in range(2)]
        rcs = pub.result()["rcs"]
        assert sub.take(timeout_sec=0.3) is None
    assert [m.data for m in got] == ["ok", "ok"]
    assert sub.malformed_count == 2
    assert rcs[3] < 0 and all(rc == 0 for i, rc in enumerate(rcs) if i != 3)
    assert "dropped malformed sample on '/m'" in caplog.text
    with pytest.raises(MalformedSampleError):
        types.decode(bad_utf8, "std_msgs/msg/String")


def test_unknown_type_is_an_error(domain):
    with Node("t", domain_id=domain, localhost_only=True) as node:
        with pytest.raises(UnknownTypeError, match="nope_msgs/msg/Nope"):
            node.create_publisher("nope_msgs/msg/Nope", "/x")
        with pytest.raises(UnknownTypeError):
            node.create_subscription("not a type", "/x")


def test_raw_subscription_and_serialized_publish(domain):
    """publish_serialized/raw=True move CDR untouched, in one process too."""
    types = TypeRegistry(use_ament_prefix_path=False)
    msg = make_message(types, "image:3000", 7)
    raw = bytes(types.encode(msg, "sensor_msgs/msg/Image"))
    with Node("a", domain_id=domain, localhost_only=True, types=types) as node:
        sub = node.create_subscription("sensor_msgs/msg/Image", "/r", raw=True)
        pub = node.create_publisher("sensor_msgs/msg/Image", "/r")
        assert pub.wait_for_subscriptions(1, 10)
        pub.publish_serialized(raw)
        got = sub.take(timeout_sec=10)
    assert got is not None and bytes(got)[: len(raw)] == raw
    assert summarize(types.decode(got, "sensor_msgs/msg/Image")) == summarize(msg)
    assert np.array_equal(types.decode(got, "sensor_msgs/msg/Image").data, msg.data)


def test_a_service_answers_each_caller_with_its_own_header(domain):
    """hprm_bridge.wire.service against a client made of plain DDS endpoints,
    as rmw_cyclonedds makes one: requests on rq/<service>Request start with
    the caller's guid and sequence number, and the reply repeats them; the
    reader and writer carry the same serviceid. A malformed request first
    (dropped, by libddsc or by the server) does not stop it serving.
    (Against Humble's ros2 param: test_gateway.py, ros2-marked.)"""
    from cyclonedds._clayer import ddspy_take, ddspy_write
    from cyclonedds.core import InstanceState, SampleState, ViewState
    from cyclonedds.pub import DataWriter
    from cyclonedds.qos import Policy, Qos
    from cyclonedds.sub import DataReader
    from cyclonedds.topic import Topic

    from hprm_bridge.wire.qos import to_dds
    from hprm_bridge.wire.service import SERVICES_QOS

    def answer(srv, request):
        srv.reply(request, types=[len(n) for n in request.names])

    with (
        Node("tuner", domain_id=domain, localhost_only=True) as server,
        Node("caller", domain_id=domain, localhost_only=True) as caller,
    ):
        srv = server.create_service("rcl_interfaces/srv/GetParameterTypes", "string[] names",
                                    "uint8[] types", "~/get_parameter_types", answer)  # fmt: skip
        assert srv.service_name == "/tuner/get_parameter_types"
        types = caller.types
        part = caller._participant
        qos = to_dds(SERVICES_QOS)
        xcdr1 = Qos(Policy.DataRepresentation(use_cdrv0_representation=True))
        rq = Topic(part, "rq/tuner/get_parameter_typesRequest", types.idl_struct(srv.request_type))
        rr = Topic(part, "rr/tuner/get_parameter_typesReply", types.idl_struct(srv.response_type))
        writer, reader = DataWriter(part, rq, qos + xcdr1), DataReader(part, rr, qos)
        users = [m.qos[Policy.Userdata].data for m in _matched(writer, reader)]
        assert len(set(users)) == 1 and users[0].startswith(b"serviceid="), users
        ddspy_write(writer._ref, b"\x00\x01\x00\x00" + bytes(3))  # too short for the header
        for seq, names in ((7, ["a", "bcd"]), (8, ["xy"])):
            request = types.new(srv.request_type, client_guid=42, sequence_number=seq, names=names)
            ddspy_write(writer._ref, types.encode(request, srv.request_type))
        replies, deadline = [], time.monotonic() + 10
        while len(replies) < 2 and time.monotonic() < deadline:
            server.spin_once(0.05)
            any_state = SampleState.Any | ViewState.Any | InstanceState.Any
            taken = ddspy_take(reader._ref, any_state, 8)
            replies += [types.decode(d, srv.response_type) for d, i in taken if i.valid_data]
        got = sorted((r.client_guid, r.sequence_number, list(r.types)) for r in replies)
        assert got == [(42, 7, [1, 3]), (42, 8, [2])]


def _matched(writer, reader, timeout=10.0):
    """The service's reader and writer as the client's endpoints see them, once matched."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        subs, pubs = writer.get_matched_subscriptions(), reader.get_matched_publications()
        if subs and pubs:
            return [writer.get_matched_subscription_data(subs[0]),
                    reader.get_matched_publication_data(pubs[0])]  # fmt: skip
        time.sleep(0.05)
    raise AssertionError("the service's endpoints never matched")


def test_match_qos_subscription_hears_latched_and_best_effort_publishers(domain, peers, caplog):
    """A subscription created with ROS 2's default QoS and ``match_qos`` follows what
    the publishers offer: transient-local when they all keep history (so it gets the
    latched sample published before it existed), best-effort once one of them is."""
    caplog.set_level(logging.INFO, logger="hprm_bridge.wire")
    latched = peers(
        "publish",
        {"type": "std_msgs/msg/String", "topic": "/m", "kind": "string", "qos": "latched",
         "count": 3, "wait_subs": 0, "period": 0.01, "linger": 30},
        domain,
    )  # fmt: skip
    latched.wait_event("published")
    got = []
    with Node("follower", domain_id=domain, localhost_only=True) as node:
        sub = node.create_subscription("std_msgs/msg/String", "/m", got.append, match_qos=True)
        node.spin(timeout_sec=15, until=lambda: got)
        assert [m.data for m in got] == ["hello 2 \u00e9\u4e16"]
        assert sub.qos.durability is Durability.TRANSIENT_LOCAL
        info = node.get_publishers_info_by_topic("/m")
        assert [i.qos_profile.durability for i in info] == [Durability.TRANSIENT_LOCAL]
        assert info[0].topic_type == "std_msgs::msg::dds_::String_"

        best_effort = peers(
            "publish",
            {"type": "std_msgs/msg/String", "topic": "/m", "kind": "string",
             "qos": "sensor_data", "count": 200, "wait_subs": 1, "period": 0.05},
            domain,
        )  # fmt: skip
        node.spin(timeout_sec=20, until=lambda: len(got) >= 4)
        assert sub.qos.reliability is Reliability.BEST_EFFORT
        assert sub.qos.durability is Durability.VOLATILE
        assert len(got) >= 4
        best_effort.kill()
    latched.kill()
    assert "subscription on '/m' now best_effort, volatile: matched to 2 remote" in caplog.text
    # the replaced reader's incompatibility was expected, and is not warned about
    assert "offering incompatible QoS" not in "".join(
        r.message for r in caplog.records if r.levelno >= logging.WARNING
    )


def test_match_qos_publisher_keeps_history_once_a_subscription_asks_for_it(domain, peers):
    """A publisher created volatile with ``match_qos`` turns transient-local when a
    latched subscription appears, so a later latched subscriber gets its last sample."""
    with Node("source", domain_id=domain, localhost_only=True) as node:
        pub = node.create_publisher("std_msgs/msg/String", "/map", match_qos=True)
        first = peers(
            "subscribe",
            {
                "type": "std_msgs/msg/String",
                "topic": "/map",
                "qos": "latched",
                "count": 3,
                "duration": 3,
            },
            domain,
        )
        first.wait_event("ready")
        node.spin(timeout_sec=15, until=lambda: pub.qos.durability is Durability.TRANSIENT_LOCAL)
        assert pub.qos.durability is Durability.TRANSIENT_LOCAL
        assert pub.wait_for_subscriptions(1, timeout_sec=15)
        for i in range(3):
            pub.publish(make_message(node.types, "string", i))
        # keep-last 1 (latched): it takes at least the last one
        assert first.result()["messages"][-1]["data"] == "hello 2 \u00e9\u4e16"
        late = peers(
            "subscribe",
            {"type": "std_msgs/msg/String", "topic": "/map", "qos": "latched", "count": 5,
             "duration": 3},
            domain,
        )  # fmt: skip
        node.spin(timeout_sec=3)  # the late one coming changes nothing: already kept
        # The writer keeps its depth (10) of history; the late reader keeps the last 1, so
        # it sees the last sample, and earlier ones only when it took between arrivals.
        data = [m["data"] for m in late.result()["messages"]]
        assert data and data[-1] == "hello 2 \u00e9\u4e16", data
        assert data == sorted(set(data)) and set(data) <= {
            f"hello {i} \u00e9\u4e16" for i in range(3)
        }
        assert pub.incompatible_qos_count == 0
