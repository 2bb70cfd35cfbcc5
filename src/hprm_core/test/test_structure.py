"""A federation's structure as data (hprm_core.structure): built from a
federated @main, or from self-descriptions matched by topic."""

import json
import re

import pytest

from hprm_core import AssemblyError, Input, Output, Reactor
from hprm_core.structure import (
    ConnectionSpec,
    FederatedProgram,
    FederationGraph,
    RefusedConnection,
    describe_ports,
    find_port,
    shortfall,
)
from hprm_core.trigger import type_name


def _port(port, direction, topic, msg_type=None):
    return {"port": port, "direction": direction, "topic": topic, "msg_type": msg_type}


def test_outputs_reach_every_input_of_their_topic_in_other_federates():
    graph = FederationGraph.from_descriptions(
        ["cam", "det", "log"],
        {
            "cam": [_port("image", "out", "/image"), _port("echo", "in", "/image")],
            "det": [_port("img", "in", "/image"), _port("boxes", "out", "/boxes")],
            "log": [_port("a", "in", "/image"), _port("b", "in", "/boxes")],
        },
        after={"/boxes": 5_000_000},
    )
    pairs = [(c.src, c.dst, c.after) for c in graph.connections]
    assert pairs == [
        ("det.boxes", "log.b", 5_000_000),
        ("cam.image", "det.img", None),
        ("cam.image", "log.a", None),
    ]  # cam.image -> cam.echo stays inside cam


def test_a_type_mismatch_names_both_ends():
    with pytest.raises(AssemblyError) as info:
        FederationGraph.from_descriptions(
            ["a", "b"],
            {
                "a": [_port("out", "out", "/t", "std_msgs/msg/String")],
                "b": [_port("inp", "in", "/t", "std_msgs/msg/Int32")],
            },
        )
    assert str(info.value) == (
        "topic '/t': a.out publishes std_msgs/msg/String but b.inp subscribes with "
        "std_msgs/msg/Int32"
    )


def test_an_end_without_a_type_matches_any():
    graph = FederationGraph.from_descriptions(
        ["a", "b"],
        {"a": [_port("out", "out", "/t", "x/msg/Y")], "b": [_port("inp", "in", "/t")]},
    )
    assert [(c.src, c.dst) for c in graph.connections] == [("a.out", "b.inp")]


def test_break_cycles_delays_only_connections_that_close_a_loop():
    """a -> b -> c -> a is a loop, c -> d leaves it; /back already has a delay."""
    ports = {
        "a": [_port("o", "out", "/ab"), _port("i", "in", "/ca"), _port("j", "in", "/back")],
        "b": [_port("i", "in", "/ab"), _port("o", "out", "/bc")],
        "c": [_port("i", "in", "/bc"), _port("o", "out", "/ca"), _port("d", "out", "/cd")],
        "d": [_port("i", "in", "/cd"), _port("o", "out", "/back")],
    }
    names = ["a", "b", "c", "d"]
    plain = FederationGraph.from_descriptions(names, ports, after={"/back": 1_000})
    assert plain.zero_delay_cycle_members() == {0, 1, 2}
    graph = FederationGraph.from_descriptions(
        names, ports, after={"/back": 1_000}, break_cycles=True
    )
    delays = {c.topic: c.after for c in graph.connections}
    assert delays == {"/ab": 0, "/bc": 0, "/ca": 0, "/cd": None, "/back": 1_000}
    assert graph.zero_delay_cycle_members() == set()


@pytest.mark.parametrize(
    "names, ports, after, message",
    [
        (["a", "b"], {"a": []}, None, "no description of federate(s) b"),
        (["a"], {"a": []}, {"/nope": 1}, "after names no topic of any federate: /nope"),
        (["a", "a"], {"a": []}, None, "federate 'a' is named twice"),
        (["a.b"], {"a.b": []}, None, "without '.'"),
    ],
)
def test_bad_graphs_are_refused_by_name(names, ports, after, message):
    with pytest.raises(AssemblyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        FederationGraph.from_descriptions(names, ports, after=after)


def test_a_graph_goes_through_json_unchanged_and_malformed_data_is_refused():
    graph = FederationGraph(
        ["a", "b"], [ConnectionSpec("a.out", "b.inp", 1000, 64, "safe", "/t")], "decentralized"
    )
    assert FederationGraph.from_json(json.loads(json.dumps(graph.to_json()))) == graph
    with pytest.raises(AssemblyError, match="malformed federation graph"):
        FederationGraph.from_json({"federates": ["a"]})
    with pytest.raises(AssemblyError, match=re.escape("'c.x' is not 'federate.port'")):
        FederationGraph(["a"], [ConnectionSpec("a.out", "c.x")])


def test_describe_gives_upstreams_and_zero_delay_cycles():
    graph = FederationGraph(
        ["a", "b", "c"],
        [
            ConnectionSpec("a.out", "b.inp"),
            ConnectionSpec("b.out", "a.inp"),  # a <-> b without delay: a cycle
            ConnectionSpec("b.out", "c.inp", 10),
            ConnectionSpec("c.out", "b.back", 10),  # b <-> c only with delays
        ],
    )
    described = graph.describe()
    assert [f["upstream"] for f in described["federates"]] == [
        [(1, None)],
        [(0, None), (2, 10)],
        [(1, 10)],
    ]
    assert [f["cycle"] for f in described["federates"]] == [True, True, False]


class _Node(Reactor):
    def __init__(self):
        super().__init__()
        self.scan = Output(topic="/scan", msg_type="sensor_msgs/msg/LaserScan")
        self.cmd = Input()
        self.lanes = Output(width=2)


def test_a_reactor_describes_its_top_level_ports_with_topic_and_type():
    node = _Node()
    assert describe_ports(node) == [
        _port("scan", "out", "/scan", "sensor_msgs/msg/LaserScan"),
        _port("cmd", "in", "cmd"),  # no topic: its name
        _port("lanes[0]", "out", "lanes[0]"),
        _port("lanes[1]", "out", "lanes[1]"),
    ]
    assert find_port(node, "lanes[1]") is node.lanes[1]
    with pytest.raises(AssemblyError, match="has no port 'lanes\\[2\\]'"):
        find_port(node, "lanes[2]")


def test_a_program_binds_only_the_reactors_it_built():
    graph = FederationGraph(["me", "other"], [ConnectionSpec("other.out", "me.cmd", 7)])
    node = _Node()
    program = FederatedProgram(graph, {"me": node})
    (c,) = program.connections
    assert (c.src, c.dst, c.delay, c.src_fed, c.dst_fed) == (None, node.cmd, 7, 1, 0)
    assert c.src_name == "other.out"
    assert program.by_name["other"].reactor is None
    assert program.federates[1].downstream == [0]
    with pytest.raises(AssemblyError, match="the federation has no federate stranger"):
        FederatedProgram(graph, {"stranger": node})


def test_two_ends_built_here_must_agree_on_the_type():
    class Typed(Reactor):
        def __init__(self, t):
            super().__init__()
            self.io = Output(msg_type=t)
            self.ii = Input(msg_type=t)

    graph = FederationGraph(["a", "b"], [ConnectionSpec("a.io", "b.ii")])
    why = "connection a.io -> b.ii: x/msg/A does not match y"
    with pytest.raises(AssemblyError, match=re.escape(why)):
        FederatedProgram(graph, {"a": Typed("x/msg/A"), "b": Typed("y")})


def test_type_names_follow_ros_2_for_message_classes():
    ros_like = type("LaserScan", (), {"__module__": "sensor_msgs.msg._laser_scan"})
    assert type_name(ros_like) == "sensor_msgs/msg/LaserScan"
    hprm_like = type("Image", (), {"__module__": "sensor_msgs.msg"})  # hprm_bridge.messages
    assert type_name(hprm_like) == "sensor_msgs/msg/Image"
    assert type_name(type("X", (), {"__module__": "a.msg.b"})) == "a.msg.b.X"
    assert type_name(int) == "builtins.int"
    assert type_name("pkg/msg/T") == "pkg/msg/T"
    with pytest.raises(AssemblyError, match="msg_type must be a type or a type name"):
        Output(msg_type=3)
    with pytest.raises(AssemblyError, match="topic must be a non-empty string"):
        Input(topic="")


def test_a_federation_is_drawn_with_topics_types_delays_and_loose_ends():
    from hprm_core.diagram import render_federation

    ports = {
        "cam": [_port("image", "out", "/image", "sensor_msgs/msg/Image")],
        "det": [_port("img", "in", "/image"), _port("boxes", "out", "/boxes"),
                _port("cfg", "in", "/config", "std_msgs/msg/String")],
        "log": [_port("b", "in", "/boxes"), _port("internal", "in", "/untyped"),
                _port("echo_out", "out", "/echo", "std_msgs/msg/String"),
                _port("echo_in", "in", "/echo")],
    }  # fmt: skip
    graph = FederationGraph.from_descriptions(
        ["cam", "det", "log"], ports, after={"/boxes": 5_000_000}
    )
    assert render_federation(graph, ports).splitlines() == [
        "federation of 3 (centralized): cam, det, log",
        "  det -> log  /boxes [any type] (after 5 ms)",
        "  cam -> det  /image [sensor_msgs/msg/Image]",
        "  det <- /config [std_msgs/msg/String] (subscribed, no publisher inside)",
        # a federate hearing itself (a node, or the nodes of one process)
        "  log <- /echo [std_msgs/msg/String] (subscribed, no publisher inside but itself)",
        "  log -> /echo [std_msgs/msg/String] (published, no subscriber inside but itself)",
    ]  # a loose end of no type is not drawn: nothing outside could carry it
    dot = render_federation(graph, ports, "dot")
    assert dot.startswith("digraph federation {") and dot.endswith("}")
    assert 'det -> log [label="/boxes\\nany type (after 5 ms)"];' in dot
    assert "topic_config -> det [style=dashed];" in dot
    with pytest.raises(ValueError, match="unknown diagram format 'svg'"):
        render_federation(graph, ports, "svg")


def test_a_boundary_federate_is_given_the_topics_the_others_leave_open():
    from hprm_core.assembly import open_ports

    ports = {
        "a": [_port("o", "out", "/ab", "x/msg/T"), _port("i", "in", "/cmd", "x/msg/C")],
        "b": [_port("i", "in", "/ab"), _port("o", "out", "/status", "x/msg/S"),
              _port("u", "in", "/untyped")],
    }  # fmt: skip
    given = open_ports(ports)
    assert given == [
        {"port": "into0", "direction": "out", "topic": "/cmd", "msg_type": "x/msg/C"},
        {"port": "outof0", "direction": "in", "topic": "/status", "msg_type": "x/msg/S"},
    ]
    graph = FederationGraph.from_descriptions(["a", "b", "gw"], {**ports, "gw": given})
    assert sorted((c.src, c.dst) for c in graph.connections) == [
        ("a.o", "b.i"), ("b.o", "gw.outof0"), ("gw.into0", "a.i")]  # fmt: skip
    assert FederationGraph.from_json({**graph.to_json(), "assigned": {"gw": given}}).assigned == {
        "gw": given
    }


def test_a_port_shared_with_the_boundary_is_given_to_it_beside_its_other_ends():
    """A server's request input and reply output (``boundary=True``): the federation's
    client publishes and subscribes them, and the gateway is given both too, so that
    it can call the same server (fan-in) and take its answers (fan-out)."""
    from hprm_core import Input, Output, Reactor
    from hprm_core.assembly import open_ports
    from hprm_core.structure import describe_ports

    class Server(Reactor):
        def __init__(self):
            super().__init__()
            self.attach("req", Input(topic="/req", msg_type="x/srv/S", boundary=True))
            self.attach("rep", Output(topic="/rep", msg_type="x/srv/S", boundary=True))

    server = describe_ports(Server())
    assert [p.get("boundary") for p in server] == [True, True]
    client = [_port("o", "out", "/req", "x/srv/S"), _port("i", "in", "/rep", "x/srv/S")]
    ports = {"server": server, "client": client}
    given = open_ports(ports)
    assert given == [
        {"port": "into0", "direction": "out", "topic": "/req", "msg_type": "x/srv/S"},
        {"port": "outof0", "direction": "in", "topic": "/rep", "msg_type": "x/srv/S"},
    ]
    graph = FederationGraph.from_descriptions(["server", "client", "gw"], {**ports, "gw": given})
    assert sorted((c.src, c.dst) for c in graph.connections) == [
        ("client.o", "server.req"), ("gw.into0", "server.req"),
        ("server.rep", "client.i"), ("server.rep", "gw.outof0")]  # fmt: skip
    without = {"server": [{k: v for k, v in p.items() if k != "boundary"} for p in server],
               "client": client}  # fmt: skip
    assert open_ports(without) == []  # both ends inside: nothing for a boundary


def test_a_loop_through_a_boundary_federate_is_broken_where_it_leaves_the_boundary():
    """a -> b -> gw -> a, gw a gateway: what gw receives leaves the federation,
    what it sends came from outside. ``break_cycles`` delays only gw -> a (by
    a microstep): a -> b keeps its zero delay, and no federate is left on a
    cycle. The same loop through an ordinary federate is delayed throughout."""
    ports = {
        "a": [_port("o", "out", "/ab", "x/msg/T"), _port("i", "in", "/cmd", "x/msg/C")],
        "b": [_port("i", "in", "/ab"), _port("o", "out", "/status", "x/msg/S")],
        "gw": [_port("into0", "out", "/cmd", "x/msg/C"),
               _port("outof0", "in", "/status", "x/msg/S")],
    }  # fmt: skip
    names = ["a", "b", "gw"]
    through = FederationGraph.from_descriptions(names, ports, break_cycles=True,
                                                boundaries=["gw"])  # fmt: skip
    assert [(c.topic, c.after) for c in through.connections] == [
        ("/ab", None), ("/cmd", 0), ("/status", None)]  # fmt: skip
    assert through.zero_delay_cycle_members() == set()
    assert [f["boundary"] for f in through.describe()["federates"]] == [False, False, True]
    assert FederationGraph.from_json(through.to_json()).boundaries == ["gw"]
    ordinary = FederationGraph.from_descriptions(names, ports, break_cycles=True)
    assert sorted(c.after for c in ordinary.connections if c.after is not None) == [0, 0, 0]
    assert FederationGraph.from_descriptions(names, ports).zero_delay_cycle_members() == {0, 1, 2}


def test_an_input_its_federate_never_waits_for_holds_nothing_back():
    """Input(wait=False) (a ros2 param call into a ported node): described as
    such, its connection is no upstream of its federate for grants or STP
    waits, and closes no zero-delay cycle."""
    from hprm_core import Input, Output, Reactor
    from hprm_core.structure import describe_ports

    node = Reactor()
    node.attach("calls", Input(topic="/calls", msg_type="x/msg/C", wait=False))
    node.attach("out", Output(topic="/status", msg_type="x/msg/S"))
    described = describe_ports(node)
    assert described[0] == {"port": "calls", "direction": "in", "topic": "/calls",
                            "msg_type": "x/msg/C", "wait": False}  # fmt: skip
    assert "wait" not in described[1]
    ports = {"node": described, "gw": [_port("into0", "out", "/calls", "x/msg/C"),
                                       _port("outof0", "in", "/status", "x/msg/S")]}  # fmt: skip
    graph = FederationGraph.from_descriptions(["node", "gw"], ports, break_cycles=True)
    assert [(c.topic, c.wait, c.after) for c in graph.connections] == [
        ("/calls", False, None), ("/status", True, None)]  # fmt: skip
    assert graph.upstream() == [[], [(0, None)]]  # node waits for nobody
    assert graph.zero_delay_cycle_members() == set()
    assert FederationGraph.from_json(graph.to_json()).connections == graph.connections


def test_an_output_connects_only_where_it_offers_what_the_input_requests():
    """Each term both contracts name: offered level >= requested level (DDS's rule); a
    term only one names binds nothing; refused pairs are kept, with their terms."""
    assert shortfall({"a": 1, "b": 0}, {"a": 1, "b": 0}) == []
    assert shortfall({"a": 2}, {"a": 1, "c": 5}) == []  # c: the output does not say
    assert shortfall({"a": 0, "b": -5}, {"b": -3, "a": 1}) == ["b", "a"]  # request's order
    ports = {
        "pub": [dict(_port("out", "out", "/t"), contract={"a": 0})],
        "strict": [dict(_port("inp", "in", "/t"), contract={"a": 1})],
        "lax": [dict(_port("inp", "in", "/t"), contract={"a": 0})],
        "silent": [_port("inp", "in", "/t")],
    }
    graph = FederationGraph.from_descriptions(list(ports), ports)
    assert [(c.src, c.dst) for c in graph.connections] == [
        ("pub.out", "lax.inp"), ("pub.out", "silent.inp")
    ]  # fmt: skip
    assert graph.refused == [RefusedConnection("pub.out", "strict.inp", "/t", ("a",))]
    back = FederationGraph.from_json(json.loads(json.dumps(graph.to_json())))
    assert back.refused == graph.refused


def test_a_port_describes_its_contract_and_refuses_a_malformed_one():
    class Node(Reactor):
        def __init__(self):
            super().__init__()
            self.out = Output(topic="/t", contract={"reliability": 1})
            self.inp = Input(topic="/u")

    described = describe_ports(Node())
    assert [p.get("contract") for p in described] == [{"reliability": 1}, None]
    for bad in ({"reliability": "reliable"}, {"a": True}, ["a"]):
        with pytest.raises(AssemblyError, match="contract maps terms to int levels"):
            Output(contract=bad)
