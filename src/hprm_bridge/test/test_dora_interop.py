"""Interop with an implementation nobody here wrote: dora-rs's ROS 2 client (Rust, RustDDS).

RustDDS discovers peers by multicast on every interface, so both sides run in a
private network namespace (``unshare -n``) whose only interface is loopback.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hprm_bridge.wire import TypeRegistry
from hprm_bridge.wire.dds_config import random_domain_id

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("hprm_bridge_test_peer", HERE / "peer.py")
peer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer)

pytest.importorskip("dora", reason="dora-rs (the test extra) is not installed")

IMAGE = "image:30000"


@pytest.fixture(scope="module")
def exchange(tmp_path_factory, in_netns):
    """Both directions, String and Image, all at once in one network namespace."""
    root = tmp_path_factory.mktemp("dora_msgs")
    TypeRegistry(use_ament_prefix_path=False).write_msg_tree(
        root, ["std_msgs/msg/String", "sensor_msgs/msg/Image"]
    )
    domain = random_domain_id()
    common = {"domain": domain, "msg_root": str(root)}
    s, i = "std_msgs/msg/String", "sensor_msgs/msg/Image"
    jobs = [
        [
            "publish",
            {
                **common,
                "type": s,
                "topic": "/to_dora_s",
                "kind": "string",
                "count": 5,
                "period": 0.2,
                "match_timeout": 30,
            },
        ],
        ["dora_sub", {**common, "type": s, "topic": "/to_dora_s", "count": 5, "duration": 40}],
        [
            "publish",
            {
                **common,
                "type": i,
                "topic": "/to_dora_i",
                "kind": IMAGE,
                "count": 3,
                "period": 0.2,
                "match_timeout": 30,
            },
        ],
        ["dora_sub", {**common, "type": i, "topic": "/to_dora_i", "count": 3, "duration": 40}],
        [
            "dora_pub",
            {
                **common,
                "type": s,
                "topic": "/from_dora_s",
                "kind": "string",
                "count": 60,
                "period": 0.1,
            },
        ],
        ["subscribe", {**common, "type": s, "topic": "/from_dora_s", "count": 3, "duration": 40}],
        [
            "dora_pub",
            {
                **common,
                "type": i,
                "topic": "/from_dora_i",
                "kind": IMAGE,
                "count": 60,
                "period": 0.1,
            },
        ],
        ["subscribe", {**common, "type": i, "topic": "/from_dora_i", "count": 3, "duration": 40}],
    ]
    r = subprocess.run(
        in_netns([sys.executable, str(HERE / "netns_pair.py"), json.dumps(jobs)]),
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    results = json.loads(r.stdout)
    for res in results:
        assert res["done"] is not None, f"{res['role']} failed: {res['stderr']}"
    return results


def _expected(kind: str, i: int) -> dict:
    return peer.summarize(peer.make_message(TypeRegistry(use_ament_prefix_path=False), kind, i))


def test_our_string_to_dora(exchange):
    got = exchange[1]["done"]["messages"]
    assert got == [_expected("string", i) for i in range(5)]


def test_our_image_to_dora(exchange):
    got = exchange[3]["done"]["messages"]
    assert len(got) == 3
    for i, m in enumerate(got):
        assert m == _expected(IMAGE, i)


def test_dora_string_to_us(exchange):
    got = exchange[5]["done"]["messages"]
    assert len(got) == 3
    for m in got:
        i = int(m["data"].split()[1])
        assert m == _expected("string", i)


def test_dora_image_to_us(exchange):
    got = exchange[7]["done"]["messages"]
    assert len(got) == 3
    for m in got:
        assert m == _expected(IMAGE, m["header"]["stamp"]["sec"] - 1000)
