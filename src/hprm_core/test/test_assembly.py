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


def test_ports_whose_contracts_disagree_stay_apart_and_every_federate_learns_it():
    """The output offers less than the input requests (a best-effort ROS 2 publisher,
    a reliable subscription): no connection, and the graph says which pair and why."""
    assembly = Assembly(["camera", "viewer"])
    offer = [dict(CAMERA[0], contract={"reliable": 0, "deadline": -100})]
    request = [dict(VIEWER[0], contract={"reliable": 1, "deadline": -200})]
    pairs = [socket.socketpair() for _ in range(2)]
    try:
        ours = [Connection(a, "rti") for a, _ in pairs]
        theirs = [Connection(b, "federate") for _, b in pairs]
        assert assembly.add(ours[0], _hello("camera", offer)) is None
        assert assembly.add(ours[1], _hello("viewer", request)) is not None
        assembly.answer()
        for conn in theirs:
            kind, payload = conn.recv()
            assert kind == Frame.GRAPH
            got = FederationGraph.from_json(json.loads(bytes(payload)))
            assert got.connections == []
            assert [(r.src, r.dst, r.topic, r.terms) for r in got.refused] == [
                ("camera.pub0", "viewer.sub0", "/image", ("reliable",))
            ]
    finally:
        for a, b in pairs:
            a.close()
            b.close()


@pytest.mark.parametrize("contract", [["reliable"], {"reliable": "yes"}, {"reliable": True}])
def test_a_malformed_contract_is_refused_at_the_handshake(contract):
    why = Assembly(["camera", "viewer"]).check(
        _hello("camera", [dict(CAMERA[0], contract=contract)])
    )
    assert why == "federate camera: malformed port description"
