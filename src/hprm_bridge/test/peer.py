"""A separate process on the other end of the tests' DDS traffic.

Run as ``python peer.py ROLE JSON_ARGS``; prints one JSON object per line on
stdout (``{"event": ...}``), the last one being the result. Roles:

* ``publish``   - our client publishes ``count`` messages
* ``subscribe`` - our client subscribes and reports what arrived
* ``plain_sub`` / ``plain_pub`` - plain cyclonedds (its own IDL codec, no
  hprm code on the data path) declared with the ROS type names
* ``raw_pub``   - plain cyclonedds writer sending given CDR bytes as they are
* ``dora_pub`` / ``dora_sub`` - dora-rs's ROS 2 client (Rust, RustDDS)
* ``rclpy_talker`` / ``rclpy_listener`` / ``rclpy_echo`` - a real ROS 2 Humble
  node (rclpy on rmw_cyclonedds_cpp; needs a sourced Humble), configured by
  ``ROS_DOMAIN_ID`` / ``ROS_LOCALHOST_ONLY`` like any ROS node
* ``env_ping`` - our client, configured by the same variables only, pings
  ``rclpy_echo`` (see :func:`role_env_ping`)
"""

import hashlib
import json
import os
import sys
import time
from typing import Any

import numpy as np


def emit(**kw: Any) -> None:
    print(json.dumps(kw), flush=True)


def make_message(types: Any, kind: str, i: int) -> Any:
    """Deterministic message ``i`` of a kind: ``string``, ``image:<bytes>``, ``custom``."""
    if kind == "string":
        return types.new("std_msgs/msg/String", data=f"hello {i} \u00e9\u4e16")
    if kind.startswith("image:"):
        n = int(kind.split(":")[1])
        width = max(1, n // 3)
        data = (np.arange(width * 3, dtype=np.uint32) * 7 + i).astype(np.uint8)
        hdr = types.new(
            "std_msgs/msg/Header",
            stamp=types.new("builtin_interfaces/msg/Time", sec=1000 + i, nanosec=123456789),
            frame_id="camera_optical",
        )
        return types.new(
            "sensor_msgs/msg/Image",
            header=hdr,
            height=1,
            width=width,
            encoding="rgb8",
            is_bigendian=0,
            step=width * 3,
            data=data,
        )
    raise ValueError(kind)


def summarize(msg: Any) -> dict[str, Any]:
    """Field-by-field summary that the test compares (big arrays as sha256)."""
    out: dict[str, Any] = {}
    for name in msg.__dataclass_fields__:
        if name == "__msgtype__":
            continue
        v = getattr(msg, name)
        if isinstance(v, np.ndarray):
            out[name] = {"len": int(v.size), "sha256": hashlib.sha256(v.tobytes()).hexdigest()}
        elif hasattr(v, "__dataclass_fields__"):
            out[name] = summarize(v)
        else:
            out[name] = v
    return out


def _node(a: dict[str, Any]) -> Any:
    from hprm_bridge.wire import Node, TypeRegistry

    types = TypeRegistry(a.get("msg_paths", ()))
    return Node(
        a.get("node", "peer"),
        a.get("namespace", "/"),
        domain_id=a["domain"],
        localhost_only=True,
        types=types,
    )


def _qos(a: dict[str, Any]) -> Any:
    from hprm_bridge.wire import Durability, QoSProfile, Reliability

    q = a.get("qos", "default")
    if isinstance(q, dict):
        return QoSProfile(
            depth=q.get("depth", 10),
            reliability=Reliability(q.get("reliability", "reliable")),
            durability=Durability(q.get("durability", "volatile")),
        )
    return q


def role_publish(a: dict[str, Any]) -> None:
    with _node(a) as node:
        pub = node.create_publisher(a["type"], a["topic"], _qos(a))
        emit(event="ready", node_gid=node.gid.hex(), gid=pub.gid.hex())
        if a.get("wait_subs", 1):
            matched = pub.wait_for_subscriptions(a.get("wait_subs", 1), a.get("match_timeout", 15))
            emit(event="matched", ok=matched)
        if a.get("go_file"):  # the other side says when it has matched us too
            deadline = time.monotonic() + a.get("match_timeout", 15)
            while not os.path.exists(a["go_file"]) and time.monotonic() < deadline:
                time.sleep(0.01)
        for i in range(a.get("count", 1)):
            msg = make_message(node.types, a["kind"], i)
            pub.publish(msg)
            time.sleep(a.get("period", 0.05))
        emit(event="published")
        time.sleep(a.get("linger", 0.5))
        emit(
            event="done",
            incompatible=pub.incompatible_qos_count,
            policy=pub.last_incompatible_policy,
        )


def role_subscribe(a: dict[str, Any]) -> None:
    with _node(a) as node:
        got: list[Any] = []
        sub = node.create_subscription(a["type"], a["topic"], got.append, _qos(a))
        emit(event="ready", node_gid=node.gid.hex(), gid=sub.gid.hex())
        want, duration = a.get("count", 1), a.get("duration", 10)
        node.spin(timeout_sec=duration, until=lambda: len(got) >= want)
        if a.get("linger"):
            node.spin(timeout_sec=a["linger"])
        emit(
            event="done",
            messages=[summarize(m) for m in got],
            malformed=sub.malformed_count,
            incompatible=sub.incompatible_qos_count,
            policy=sub.last_incompatible_policy,
        )


def _plain_participant(domain: int) -> Any:
    from cyclonedds.domain import Domain, DomainParticipant

    cfg = (
        "<CycloneDDS><Domain><General><Interfaces>"
        '<NetworkInterface address="127.0.0.1"/></Interfaces></General></Domain></CycloneDDS>'
    )
    dom = Domain(domain, cfg)
    return dom, DomainParticipant(domain)


def _plain_string_type() -> Any:
    """std_msgs/msg/String declared by hand with plain cyclonedds, as a DDS user would."""
    from dataclasses import dataclass

    from cyclonedds.idl import IdlStruct

    @dataclass
    class String_(IdlStruct, typename="std_msgs::msg::dds_::String_"):
        data: str

    return String_


def role_plain_sub(a: dict[str, Any]) -> None:
    from cyclonedds._clayer import ddspy_take
    from cyclonedds.core import InstanceState, ReadCondition, SampleState, ViewState, WaitSet
    from cyclonedds.qos import Policy, Qos
    from cyclonedds.sub import DataReader
    from cyclonedds.topic import Topic

    _dom, dp = _plain_participant(a["domain"])
    if a["type"] == "std_msgs/msg/String":
        cls = _plain_string_type()
    else:  # a hand-made declaration is long; reuse the generated one for big types
        from hprm_bridge.wire import default_registry

        cls = default_registry().idl_struct(a["type"])
    topic = Topic(dp, a["dds_topic"], cls)
    reader = DataReader(
        dp, topic, Qos(Policy.Reliability.Reliable(10**9), Policy.History.KeepLast(10))
    )
    mask = SampleState.Any | ViewState.Any | InstanceState.Any
    ws = WaitSet(dp)
    ws.attach(ReadCondition(reader, mask))
    emit(event="ready", type_name=topic.typename)
    out: list[Any] = []
    deadline = time.monotonic() + a.get("duration", 10)
    while len(out) < a.get("count", 1) and time.monotonic() < deadline:
        ws.wait(200_000_000)
        for data, info in ddspy_take(reader._ref, mask, 16):
            if not info.valid_data:
                continue
            entry: dict[str, Any] = {
                "raw": bytes(data).hex() if len(data) < 4096 else None,
                "len": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
            if a["type"] == "std_msgs/msg/String":
                entry["data"] = cls.deserialize(data).data  # cyclonedds' own codec
            out.append(entry)
    emit(event="done", samples=out)


def role_plain_pub(a: dict[str, Any]) -> None:
    from cyclonedds.pub import DataWriter
    from cyclonedds.qos import Policy, Qos
    from cyclonedds.topic import Topic

    _dom, dp = _plain_participant(a["domain"])
    cls = _plain_string_type()
    topic = Topic(dp, a["dds_topic"], cls)
    writer = DataWriter(
        dp, topic, Qos(Policy.Reliability.Reliable(10**9), Policy.History.KeepLast(10))
    )
    emit(event="ready")
    deadline = time.monotonic() + 15
    while not writer.get_matched_subscriptions() and time.monotonic() < deadline:
        time.sleep(0.01)
    for text in a["texts"]:
        writer.write(cls(data=text))  # cyclonedds-python serializes this, not rosbags
        time.sleep(0.05)
    time.sleep(0.5)
    emit(event="done")


def role_raw_pub(a: dict[str, Any]) -> None:
    """Write given CDR byte strings untouched (to feed a subscription malformed samples)."""
    from cyclonedds._clayer import ddspy_write
    from cyclonedds.pub import DataWriter
    from cyclonedds.qos import Policy, Qos
    from cyclonedds.topic import Topic

    _dom, dp = _plain_participant(a["domain"])
    from hprm_bridge.wire import default_registry

    topic = Topic(dp, a["dds_topic"], default_registry().idl_struct(a["type"]))
    writer = DataWriter(
        dp, topic, Qos(Policy.Reliability.Reliable(10**9), Policy.History.KeepLast(10))
    )
    emit(event="ready")
    deadline = time.monotonic() + 15
    while not writer.get_matched_subscriptions() and time.monotonic() < deadline:
        time.sleep(0.01)
    rcs = []
    for hexdata in a["samples"]:
        rcs.append(ddspy_write(writer._ref, bytes.fromhex(hexdata)))
        time.sleep(0.05)
    time.sleep(0.5)
    emit(event="done", rcs=rcs)


def _dora_node(a: dict[str, Any]) -> Any:
    import warnings

    import dora

    warnings.simplefilter("ignore")
    ctx = dora.Ros2Context(ros_paths=[a["msg_root"]], domain_id=a["domain"])
    node = ctx.new_node("dora_peer", "/dora", dora.Ros2NodeOptions(rosout=False))
    qos = dora.Ros2QosPolicies(reliable=True, keep_last=10)
    return ctx, node, qos


def _dora_type(ros_type: str) -> str:
    pkg, _, name = ros_type.split("/")
    return f"{pkg}/{name}"


def role_dora_pub(a: dict[str, Any]) -> None:
    import pyarrow as pa

    from hprm_bridge.wire import default_registry

    _ctx, node, qos = _dora_node(a)
    topic = node.create_topic(a["topic"], _dora_type(a["type"]), qos)
    pub = node.create_publisher(topic)
    emit(event="ready")
    types = default_registry()
    for i in range(a.get("count", 1)):
        msg = make_message(types, a["kind"], i)
        if a["type"] == "std_msgs/msg/String":
            value = {"data": msg.data}
        else:
            stamp = {
                "sec": np.int32(msg.header.stamp.sec),
                "nanosec": np.uint32(msg.header.stamp.nanosec),
            }
            value = {
                "header": {"stamp": stamp, "frame_id": msg.header.frame_id},
                "height": np.uint32(msg.height),
                "width": np.uint32(msg.width),
                "encoding": msg.encoding,
                "is_bigendian": np.uint8(msg.is_bigendian),
                "step": np.uint32(msg.step),
                "data": msg.data,
            }
        pub.publish(pa.array([value]))
        time.sleep(a.get("period", 0.2))
    emit(event="done")


def role_dora_sub(a: dict[str, Any]) -> None:
    _ctx, node, qos = _dora_node(a)
    topic = node.create_topic(a["topic"], _dora_type(a["type"]), qos)
    sub = node.create_subscription(topic)
    emit(event="ready")
    out: list[Any] = []
    deadline = time.monotonic() + a.get("duration", 15)
    while len(out) < a.get("count", 1) and time.monotonic() < deadline:
        m = sub.next()
        if m is None:
            continue
        value = m.to_pylist()[0] if hasattr(m, "to_pylist") else m
        if "data" in value and isinstance(value["data"], list):
            arr = np.asarray(value["data"], dtype=np.uint8)
            value["data"] = {
                "len": int(arr.size),
                "sha256": hashlib.sha256(arr.tobytes()).hexdigest(),
            }
        out.append(value)
    emit(event="done", messages=out)


def role_discovery_reader(a: dict[str, Any]) -> None:
    """What a ROS 2 tool sees: ros_discovery_info (decoded with rosbags) + DDS builtin topics."""
    from cyclonedds._clayer import ddspy_take
    from cyclonedds.builtin import (
        BuiltinDataReader,
        BuiltinTopicDcpsParticipant,
        BuiltinTopicDcpsPublication,
        BuiltinTopicDcpsSubscription,
    )
    from cyclonedds.core import InstanceState, SampleState, ViewState
    from cyclonedds.pub import DataWriter  # noqa: F401 - keeps import order stable
    from cyclonedds.qos import Policy, Qos
    from cyclonedds.sub import DataReader
    from cyclonedds.topic import Topic
    from rosbags.typesys import Stores, get_typestore

    from hprm_bridge.wire import default_registry

    store = get_typestore(Stores.ROS2_HUMBLE)
    _dom, dp = _plain_participant(a["domain"])
    topic = Topic(
        dp,
        "ros_discovery_info",
        default_registry().idl_struct("rmw_dds_common/msg/ParticipantEntitiesInfo"),
    )
    reader = DataReader(
        dp,
        topic,
        Qos(
            Policy.Reliability.Reliable(10**9),
            Policy.History.KeepAll,
            Policy.Durability.TransientLocal,
        ),
    )
    emit(event="ready", type_name=topic.typename)
    mask = SampleState.Any | ViewState.Any | InstanceState.Any
    infos: dict[str, Any] = {}
    deadline = time.monotonic() + a.get("duration", 10)
    while time.monotonic() < deadline:
        for data, info in ddspy_take(reader._ref, mask, 16):
            if not info.valid_data:
                continue
            msg = store.deserialize_cdr(data, "rmw_dds_common/msg/ParticipantEntitiesInfo")
            infos[bytes(msg.gid.data).hex()] = [
                {
                    "namespace": n.node_namespace,
                    "name": n.node_name,
                    "readers": [bytes(g.data).hex() for g in n.reader_gid_seq],
                    "writers": [bytes(g.data).hex() for g in n.writer_gid_seq],
                }
                for n in msg.node_entities_info_seq
            ]
        if any(
            n["name"] == a["node"] and len(n["readers"]) + len(n["writers"]) >= a["endpoints"]
            for nodes in infos.values()
            for n in nodes
        ):
            break
        time.sleep(0.05)
    time.sleep(0.3)

    def endpoints(builtin: Any) -> list[dict[str, Any]]:
        r = BuiltinDataReader(dp, builtin)
        return [
            {
                "key": e.key.hex,
                "participant": e.participant_key.hex,
                "topic": e.topic_name,
                "type": e.type_name,
            }
            for e in r.take(N=256)
            if e.topic_name.startswith("rt/")
        ]

    parts = BuiltinDataReader(dp, BuiltinTopicDcpsParticipant).take(N=256)
    emit(
        event="done",
        infos=infos,
        publications=endpoints(BuiltinTopicDcpsPublication),
        subscriptions=endpoints(BuiltinTopicDcpsSubscription),
        participants={
            p.key.hex: (p.qos[Policy.Userdata].data.decode() if Policy.Userdata in p.qos else None)
            for p in parts
        },
    )


def _rclpy_node(name: str) -> tuple[Any, Any]:
    import rclpy

    rclpy.init()
    return rclpy, rclpy.create_node(name)


def rclpy_image_data(width: int) -> np.ndarray:
    """The pixels ``rclpy_talker`` sends (mono8, one row)."""
    return (np.arange(width) % 251).astype(np.uint8)


def role_rclpy_talker(a: dict[str, Any]) -> None:
    """Publish String ``rclpy <i>`` and a mono8 Image every 0.1 s until killed."""
    from sensor_msgs.msg import Image
    from std_msgs.msg import String

    rclpy, node = _rclpy_node("rclpy_talker")
    strings = node.create_publisher(String, "/from_rclpy", 10)
    images = node.create_publisher(Image, "/from_rclpy_img", 10)
    width = a.get("width", 1000)
    pixels = rclpy_image_data(width).tobytes()
    emit(event="ready")
    deadline = time.monotonic() + a.get("duration", 240)
    i = 0
    while time.monotonic() < deadline:
        strings.publish(String(data=f"rclpy {i}"))
        img = Image(height=1, width=width, encoding="mono8", step=width)
        img.header.frame_id = f"f{i}"
        img.data = pixels
        images.publish(img)
        i += 1
        rclpy.spin_once(node, timeout_sec=0.1)
    emit(event="done", published=i)


def role_rclpy_listener(a: dict[str, Any]) -> None:
    """Report the first ``count`` Strings and Images (width, encoding, sha256) that arrive."""
    from sensor_msgs.msg import Image
    from std_msgs.msg import String

    rclpy, node = _rclpy_node("rclpy_listener")
    got: dict[str, list[Any]] = {"strings": [], "images": []}
    node.create_subscription(String, "/to_rclpy", lambda m: got["strings"].append(m.data), 10)
    node.create_subscription(
        Image,
        "/to_rclpy_img",
        lambda m: got["images"].append(
            [m.width, m.encoding, hashlib.sha256(bytes(m.data)).hexdigest()]
        ),
        10,
    )
    emit(event="ready")
    want, deadline = a.get("count", 3), time.monotonic() + a.get("duration", 240)
    while time.monotonic() < deadline and min(len(v) for v in got.values()) < want:
        rclpy.spin_once(node, timeout_sec=0.1)
    emit(event="done", **got)


def role_rclpy_echo(a: dict[str, Any]) -> None:
    """Echo String ``/ping`` to ``/pong`` until ``bye <node>`` arrives.

    Then wait until ``<node>`` is in rclpy's graph (graph updates and data
    travel separately), report every ping and the graph, and echo the bye last,
    so the sender stays up (and in the graph) until the report is taken.
    """
    from std_msgs.msg import String

    rclpy, node = _rclpy_node("rclpy_echo")
    pong = node.create_publisher(String, "/pong", 10)
    pings: list[str] = []
    bye: list[Any] = []

    def on_ping(msg: Any) -> None:
        pings.append(msg.data)
        if msg.data.startswith("bye "):
            bye.append(msg)
        else:
            pong.publish(msg)

    node.create_subscription(String, "/ping", on_ping, 10)
    emit(event="ready")
    deadline = time.monotonic() + a.get("duration", 240)

    def graph() -> list[str]:
        return sorted(
            ns.rstrip("/") + "/" + name for name, ns in node.get_node_names_and_namespaces()
        )

    while time.monotonic() < deadline and not bye:
        rclpy.spin_once(node, timeout_sec=0.1)
    sender = bye[0].data.split(" ", 1)[1] if bye else None
    while time.monotonic() < deadline and sender not in graph():
        rclpy.spin_once(node, timeout_sec=0.1)
    nodes = graph()
    if bye:
        pong.publish(bye[0])
        pong.wait_for_all_acked(rclpy.duration.Duration(seconds=30))
    emit(event="done", pings=pings, graph=nodes)


def role_env_ping(a: dict[str, Any]) -> None:
    """Our side of ``rclpy_echo``, configured only by ``ROS_DOMAIN_ID`` / ``ROS_LOCALHOST_ONLY``.

    ``near_node`` (no ``domain_id`` / ``localhost_only`` given) pings until a
    pong comes back; ``far_node`` (on ``far_domain``, when given, created
    first so it has had longer to be discovered) pings too and must match and
    hear nothing.
    """
    from hprm_bridge.wire import Node

    timeout = a.get("timeout", 90)
    far = far_pub = far_sub = None
    if a.get("far_domain") is not None:
        far = Node("far_node", domain_id=a["far_domain"])
        far_pub = far.create_publisher("std_msgs/msg/String", "/ping")
        far_sub = far.create_subscription("std_msgs/msg/String", "/pong")
    with Node("near_node") as near:
        pub = near.create_publisher("std_msgs/msg/String", "/ping")
        sub = near.create_subscription("std_msgs/msg/String", "/pong")
        result: dict[str, Any] = {
            "domain_id": near.domain_id,
            "localhost_only": near.dds_config.localhost_only,
            "matched": pub.wait_for_subscriptions(1, timeout),
        }

        def ping(text: str) -> str | None:
            """Publish ``text`` until it comes back (a pong publisher that has not
            matched us yet drops it); each wait ends as soon as anything arrives."""
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                pub.publish(near.types.new("std_msgs/msg/String", data=text))
                reply_deadline = min(deadline, time.monotonic() + 1.0)
                while (left := reply_deadline - time.monotonic()) > 0:
                    msg = sub.take(timeout_sec=left)
                    if msg is not None and msg.data == text:
                        return msg.data
            return None

        result["pong"] = ping("ping from near_node")
        if far is not None:
            for k in range(3):
                far_pub.publish(far.types.new("std_msgs/msg/String", data=f"far {k}"))
            result["far"] = {
                "subscriptions": far_pub.get_subscription_count(),
                "publishers": far_sub.get_publisher_count(),
                "received": far_sub.take(timeout_sec=0) is not None,
            }
        result["bye"] = ping("bye /near_node")
    if far is not None:
        far.close()
    emit(event="done", **result)


if __name__ == "__main__":
    globals()[f"role_{sys.argv[1]}"](json.loads(sys.argv[2]))
