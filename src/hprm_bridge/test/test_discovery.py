"""ros_discovery_info as a separate process (what ``ros2 node list`` reads) sees it."""

import pytest

from hprm_bridge.wire import Node, TypeRegistry, decode_participant_info, gid_from_guid
from hprm_bridge.wire.discovery import NodeInfo, ParticipantInfo, encode_participant_info


def test_separate_reader_finds_node_and_endpoint_gids(domain, peers):
    with Node("camera_driver", "/robot", domain_id=domain, localhost_only=True) as node:
        pub = node.create_publisher("sensor_msgs/msg/Image", "image", "sensor_data")
        sub = node.create_subscription("std_msgs/msg/String", "~/cmd")
        reader = peers("discovery_reader", {"node": "camera_driver", "endpoints": 2}, domain)
        assert reader.wait_event("ready")["type_name"] == (
            "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_"
        )
        res = reader.result()
        node_gid, pub_gid, sub_gid = node.gid, pub.gid, sub.gid

    assert len(node_gid) == 24 and node_gid[16:] == bytes(8)
    nodes = res["infos"][node_gid.hex()]
    assert nodes == [
        {
            "namespace": "/robot",
            "name": "camera_driver",
            "readers": [sub_gid.hex()],
            "writers": [pub_gid.hex()],
        }
    ]
    # The GIDs are the DDS GUIDs the builtin discovery topics report, padded to 24.
    pubs = {p["topic"]: p for p in res["publications"]}
    subs = {s["topic"]: s for s in res["subscriptions"]}
    assert pubs["rt/robot/image"]["type"] == "sensor_msgs::msg::dds_::Image_"
    assert subs["rt/robot/camera_driver/cmd"]["type"] == "std_msgs::msg::dds_::String_"
    assert gid_from_guid(bytes.fromhex(pubs["rt/robot/image"]["key"])) == pub_gid
    assert gid_from_guid(bytes.fromhex(subs["rt/robot/camera_driver/cmd"]["key"])) == sub_gid
    assert pubs["rt/robot/image"]["participant"] == node_gid[:16].hex()
    assert res["participants"][node_gid[:16].hex()] == "enclave=/;"


def test_participant_info_roundtrip_and_validation():
    types = TypeRegistry(use_ament_prefix_path=False)
    info = ParticipantInfo(
        gid=bytes(range(16)) + bytes(8),
        nodes=[NodeInfo("/", "a", [bytes(24)], []), NodeInfo("/ns", "b", [], [b"\x01" * 24])],
    )
    raw = encode_participant_info(types, info)
    assert bytes(raw[:4]) == b"\x00\x01\x00\x00"
    assert decode_participant_info(types, raw) == info
    with pytest.raises(ValueError):
        encode_participant_info(types, ParticipantInfo(gid=bytes(16), nodes=[]))
    with pytest.raises(ValueError):
        gid_from_guid(bytes(10))
