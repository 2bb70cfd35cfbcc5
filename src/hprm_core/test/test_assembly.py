"""The RTI's assembly of self-described federates (hprm_core.assembly): ports
matched by topic, and the labels a federate gives of itself carried to every
federate in the graph, over real socket connections."""

import json
import socket

import pytest

from hprm_core.assembly import MAX_LABELS, Assembly
from hprm_core.structure import FederationGraph
from hprm_core.transport import Connection, Frame


def _hello(name, ports, **extra):
    return {"federation": "f", "name": name, "describe": ports, **extra}


CAMERA = [{"port": "pub0", "direction": "out", "topic": "/image", "msg_type": "a/msg/B"}]
VIEWER = [{"port": "sub0", "direction": "in", "topic": "/image", "msg_type": "a/msg/B"}]


def test_labels_reach_every_federate_in_the_graph_and_leave_the_structure_alone():
    assembly = Assembly(["camera", "viewer"])
    pairs = [socket.socketpair() for _ in range(2)]
    try:
        ours = [Connection(a, "rti") for a, _ in pairs]
        theirs = [Connection(b, "federate") for _, b in pairs]
        labelled = _hello("camera", CAMERA, labels={"ros_node": "/robot/camera"})
        assert assembly.check(labelled) is None
        assert assembly.add(ours[0], labelled) is None  # waits for the viewer
        graph = assembly.add(ours[1], _hello("viewer", VIEWER))
        assert graph is not None
        assembly.answer()
        for conn in theirs:
            kind, payload = conn.recv()
            assert kind == Frame.GRAPH
            got = FederationGraph.from_json(json.loads(bytes(payload)))
            assert got.labels == {"camera": {"ros_node": "/robot/camera"}}
            assert [c.topic for c in got.connections] == ["/image"]
        # what the federates must agree on (checked at their join) does not hold labels
        assert "labels" not in json.dumps(graph.describe())
    finally:
        for a, b in pairs:
            a.close()
            b.close()


@pytest.mark.parametrize(
    "labels",
    [["ros_node"], {"ros_node": 3}, {str(i): "x" for i in range(MAX_LABELS + 1)}],
)  # fmt: skip
def test_malformed_labels_are_refused_at_the_handshake_naming_the_federate(labels):
    assembly = Assembly(["camera", "viewer"])
    why = assembly.check(_hello("camera", CAMERA, labels=labels))
    assert why is not None and why.startswith("federate camera: malformed labels")
