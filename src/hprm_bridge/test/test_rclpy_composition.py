"""Several nodes in one process (hprm_bridge.rclpy.composition): an executor's nodes run
as one federate, hear each other a microstep on, call each other's services, and talk
to the other federates by topic as a node of their own would. The same node file prints
the same under real rclpy."""

import re
from pathlib import Path

import pytest

NODES = Path(__file__).parent / "nodes"
COMPOSED_SAYS = [
    *(line for n in (1, 2, 3) for line in (f"ECHO tick {n}", f"SUM {n} + {n}", f"ANSWER {2 * n}")),
    "STOP",
]


def _lines(out, federate):
    return re.findall(rf"^\[{federate}\] ((?:ECHO|SUM|ANSWER|ADD|HEARD|STOP).*)$", out, re.M)


@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
@pytest.mark.parametrize("executor", ["single", "multi"])
def test_an_executors_three_nodes_run_as_one_federate(ported_run, executor, coordination):
    out = ported_run(NODES / "composed.py", NODES / "listener.py", "--coordination",
                     coordination, "--param", f"composed:executor:={executor}")  # fmt: skip
    assert _lines(out, "composed") == COMPOSED_SAYS
    # another federate hears the ticker by topic, as it would hear a node of its own
    assert _lines(out, "listener") == ["HEARD tick 1", "HEARD tick 2", "HEARD tick 3"]


def test_a_composed_node_calls_a_service_of_another_federate(ported_run):
    out = ported_run(NODES / "composed.py", NODES / "adder.py",
                     "--param", "composed:summer:=false")  # fmt: skip
    assert _lines(out, "composed") == [x for x in COMPOSED_SAYS if not x.startswith("SUM")]
    assert _lines(out, "adder") == ["ADD 1 + 1", "ADD 2 + 2", "ADD 3 + 3"]


def test_each_sibling_gets_its_own_copy_and_sees_the_others_in_the_graph():
    from hprm_bridge import porting

    porting.install_imports()
    from std_msgs.msg import String

    from hprm_bridge.rclpy.composition import compose
    from hprm_bridge.rclpy.node import Node

    nodes = [Node("a"), Node("b"), Node("c")]
    pub = nodes[0].create_publisher(String, "chatter", 10)
    heard = {n.get_name(): [] for n in nodes[1:]}
    for n in nodes[1:]:
        n.create_subscription(String, "chatter", heard[n.get_name()].append, 10)
    nodes[0].create_timer(0.01, lambda: pub.publish(String(data="x")))
    for n in nodes:
        n._as_reactor()
    top = compose(nodes, "proc")
    assert {p.name for p in top._elements if p.kind == "output"} >= {"a_pub0"}
    assert {p.name for p in top._elements if p.kind == "input"} >= {"b_sub0", "c_sub0"}

    from hprm_core import run

    run(top, timeout="25 ms")
    assert [m.data for m in heard["b"]] == ["x", "x"] == [m.data for m in heard["c"]]
    assert heard["b"][0] is not heard["c"][0]  # a copy each, as the network gives
    for n in nodes[1:]:
        n._graph.learn_siblings([m._graph for m in nodes])
    assert sorted(nodes[1].get_node_names()) == ["a", "b", "c"]
    assert nodes[1].count_publishers("/chatter") == 1
    assert nodes[0].count_subscribers("/chatter") == 0  # a learnt the graph never here


@pytest.mark.ros2
def test_the_composed_nodes_say_the_same_under_real_rclpy(rclpy_until_stop):
    said = rclpy_until_stop([NODES / "composed.py", "--ros-args", "-p", "executor:=multi"])
    assert [x for x in said if re.match(r"(ECHO|SUM|ANSWER|STOP)", x)] == COMPOSED_SAYS


def test_a_task_of_an_executor_of_several_nodes_is_refused_naming_them():
    """Whose node would it be? (spin_once and spin_until_future_complete step them all:
    test_rclpy_main_turns.py)"""
    from hprm_bridge import porting

    porting.install_imports()
    from hprm_bridge.rclpy import UnsupportedError
    from hprm_bridge.rclpy.executors import SingleThreadedExecutor
    from hprm_bridge.rclpy.node import Node

    executor = SingleThreadedExecutor()
    for name in ("left", "right"):
        executor.add_node(Node(name))
    with pytest.raises(UnsupportedError, match=r"has 2 \(left, right\): spin\(\) runs them all"):
        executor.create_task(lambda: None)


def test_an_executor_of_several_nodes_spun_on_a_thread_is_refused_saying_why():
    import threading

    from hprm_bridge import porting

    porting.install_imports()
    from hprm_bridge.rclpy import UnsupportedError
    from hprm_bridge.rclpy.executors import MultiThreadedExecutor
    from hprm_bridge.rclpy.node import Node

    executor = MultiThreadedExecutor()
    for name in ("left", "right"):
        executor.add_node(Node(name))
    raised = []

    def spin():
        try:
            executor.spin()
        except UnsupportedError as exc:
            raised.append(str(exc))

    t = threading.Thread(target=spin)
    t.start()
    t.join(60)
    assert raised and "spin it from the main (the nodes then run as one federate)" in raised[0]


def test_another_federate_sees_each_composed_node_with_its_own_endpoints():
    """A composed federate's label names each sibling's endpoints by their node, so a
    ported node elsewhere answers by-node queries as for nodes of their own processes."""
    from hprm_bridge.porting import ROS_NODE_LABEL, ROS_SIBLINGS_LABEL
    from hprm_bridge.rclpy.graph import ROS_TOPICS_LABEL, Graph
    from hprm_core.structure import FederationGraph

    ticker, echo = Graph("/ticker"), Graph("/echo")
    ticker.add("pub", "/chatter", "std_msgs/msg/String")
    echo.add("sub", "/chatter", "std_msgs/msg/String")
    echo.add("cli", "/add_two_ints", "example_interfaces/srv/AddTwoInts")
    graph = FederationGraph.from_descriptions(["proc", "other"], {"proc": [], "other": []})
    graph.labels = {"proc": {ROS_NODE_LABEL: "/ticker", ROS_SIBLINGS_LABEL: "/echo",
                             ROS_TOPICS_LABEL: ticker.label(echo)}}  # fmt: skip
    viewer = Graph("/viewer")
    viewer.learn(graph, "other", ROS_NODE_LABEL)
    assert viewer.names_and_types(("pub", "sub"), "/ticker") == [
        ("/chatter", ["std_msgs/msg/String"])
    ]
    assert viewer.names_and_types(("sub", "cli"), "/echo") == [
        ("/add_two_ints", ["example_interfaces/srv/AddTwoInts"]),
        ("/chatter", ["std_msgs/msg/String"]),
    ]
    assert viewer.count("sub", "/chatter") == 1 and viewer.count("pub", "/chatter") == 1
    assert sorted(n for n, _ in viewer.node_names_and_namespaces()) == ["echo", "ticker", "viewer"]
