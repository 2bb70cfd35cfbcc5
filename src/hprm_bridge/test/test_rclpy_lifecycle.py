"""Managed (lifecycle) nodes ported (hprm_bridge.rclpy.lifecycle), and what they lean
on: entities created after the start in the place of destroyed ones
(hprm_bridge.rclpy.late_entities). Each node file is checked against real rclpy."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hprm_bridge import messages
from hprm_bridge import rclpy as hrclpy
from hprm_bridge.message_pickle import received
from hprm_bridge.rclpy.exceptions import InvalidHandle, RCLError
from hprm_bridge.rclpy.lifecycle import (
    LifecycleNode,
    LifecyclePublisher,
    TransitionCallbackReturn,
)
from hprm_bridge.rclpy.lifecycle.state_machine import GRAPH, STATES
from hprm_bridge.rclpy.node import Node
from hprm_bridge.wire.dds_config import random_domain_id

NODES = Path(__file__).parent / "nodes"
TALKER, MANAGER = NODES / "lifecycle_talker.py", NODES / "lifecycle_manager.py"
Int32 = messages.message_class("std_msgs/msg/Int32")
OK, FAIL, ERROR = (TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE,
                   TransitionCallbackReturn.ERROR)  # fmt: skip


class Recorder(LifecycleNode):
    """Records each callback and the state it came from; returns what it is told to."""

    def __init__(self):
        super().__init__("rec")
        self.calls, self.returns = [], {}

    def _cb(self, name, state):
        self.calls.append(f"{name}<{state.label}")
        result = self.returns.get(name, OK)
        if isinstance(result, Exception):
            raise result
        return result

    def on_configure(self, state):
        self._cb("configure", state)
        self.pub = self.create_lifecycle_publisher(Int32, "counts", 10)
        return self.returns.get("configure", OK)

    def on_activate(self, state):
        result = self._cb("activate", state)
        return super().on_activate(state) if result is OK else result

    def on_deactivate(self, state):
        result = self._cb("deactivate", state)
        return super().on_deactivate(state) if result is OK else result

    def on_cleanup(self, state):
        return self._cb("cleanup", state)

    def on_error(self, state):
        return self._cb("error", state)

    def on_shutdown(self, state):
        return self._cb("shutdown", state)


def _events(node):
    """The transition events the node published so far: (start, goal) labels."""
    queue = node._transition_events._queue
    out = [(e.start_state.label, e.goal_state.label) for e in map(received, queue)]
    queue.clear()
    return out


def _state(node):
    return node._on_get_state(None, _srv("GetState").Response()).current_state.label


def _srv(name):
    return messages.service_class(f"lifecycle_msgs/srv/{name}")


def test_transitions_follow_rcl_lifecycles_state_machine():
    """The callbacks run in the transitional state and get the state the node came from;
    SUCCESS/FAILURE/ERROR move on as rcl's graph says (an exception is an ERROR, then
    on_error decides); lifecycle publishers publish only while active; every state change
    is a transition event."""
    node = Recorder()
    assert _state(node) == "unconfigured"
    assert node.trigger_configure() is OK and _state(node) == "inactive"
    queued = node._transition_events._queue  # before the start: no logical time, 0 as rcl's
    assert [received(e).timestamp for e in queued] == [0, 0]
    assert _events(node) == [("unconfigured", "configuring"), ("configuring", "inactive")]
    assert isinstance(node.pub, LifecyclePublisher) and not node.pub.is_activated
    node.pub.publish(Int32(data=1))  # inactive: dropped
    assert node.pub._queue == []
    assert node.trigger_activate() is OK and node.pub.is_activated
    node.pub.publish(Int32(data=2))
    assert [m.data for m in map(received, node.pub._queue)] == [2]
    with pytest.raises(RCLError, match="Transition is not registered from state active"):
        node.trigger_configure()
    node.returns["deactivate"] = FAIL  # stays active
    assert node.trigger_deactivate() is FAIL and _state(node) == "active"
    node.returns["deactivate"] = OK
    node.trigger_deactivate()
    node.returns["cleanup"] = RuntimeError("boom")  # -> errorprocessing -> on_error
    _events(node)
    assert node.trigger_cleanup() is ERROR and _state(node) == "unconfigured"
    assert _events(node) == [("inactive", "cleaningup"), ("cleaningup", "errorprocessing"),
                             ("errorprocessing", "unconfigured")]  # fmt: skip
    assert node.trigger_shutdown() is OK and _state(node) == "finalized"
    with pytest.raises(RCLError, match="Shutdown transtion not possible"):
        node.trigger_shutdown()
    assert node.calls == [
        "configure<unconfigured", "activate<inactive", "deactivate<active",
        "deactivate<active", "cleanup<inactive", "error<inactive", "shutdown<unconfigured",
    ]  # fmt: skip


def test_a_callback_not_returning_a_result_is_named():
    node = Recorder()
    node.returns["configure"] = None
    with pytest.raises(TypeError, match=r"on_configure\(\) returned None: a lifecycle callback"):
        node.trigger_configure()


def test_the_services_answer_as_rcls_and_refuse_what_the_state_lacks():
    """An id or label the current state has no transition for is success=False (rclpy's
    service raises out of its executor on an unknown id); the lists are rcl's."""
    node = Recorder()
    change = _srv("ChangeState")

    def call(**transition):
        request = change.Request()
        for k, v in transition.items():
            setattr(request.transition, k, v)
        return node._on_change_state(request, change.Response()).success

    assert call(id=3) is False and _state(node) == "unconfigured"  # activate: not from here
    assert call(label="activate") is False
    assert call(label="configure") is True and _state(node) == "inactive"
    assert call(id=3) is True and _state(node) == "active"
    listed = _srv("GetAvailableTransitions")
    available = node._on_get_available_transitions(None, listed.Response()).available_transitions
    assert [(t.transition.id, t.transition.label, t.goal_state.label) for t in available] == [
        (4, "deactivate", "deactivating"), (7, "shutdown", "shuttingdown"),
    ]  # fmt: skip
    graph = node._on_get_transition_graph(None, listed.Response()).available_transitions
    assert len(graph) == 25 and len(GRAPH) == 25
    states = node._on_get_available_states(None, _srv("GetAvailableStates").Response())
    assert [(s.id, s.label) for s in states.available_states] == list(STATES)
    names = {s.srv_name for s in node.services}
    assert names == {f"/rec/{n}" for n in ("change_state", "get_state", "get_available_states",
                                           "get_available_transitions",
                                           "get_transition_graph")}  # fmt: skip
    (events,) = node.get_publishers_info_by_topic("~/transition_event")
    assert events.topic_type == "lifecycle_msgs/msg/TransitionEvent"
    assert events.qos_profile.depth == 10


def test_a_node_recreates_what_it_destroyed_after_the_start(monkeypatch):
    """After the start a subscription or timer may be created in the place of a destroyed
    one (same topic and type; any timer, with its own period): the new callback takes
    over the port. One on a topic the node did not have at the start is a late one
    (test_rclpy_late_subscriptions.py): it hears the node's process, here nobody."""
    monkeypatch.setenv("HPRM_TIMEOUT", "1 s")
    node = Node("again")
    pub = node.create_publisher(Int32, "loop", 10)
    heard, ticks, refused = [], [], []
    state = {"sub": node.create_subscription(Int32, "loop", lambda m: heard.append(("a", m.data)),
                                             10)}  # fmt: skip

    def tick():
        ticks.append(node.get_clock().now().nanoseconds)
        n = len(ticks)
        pub.publish(Int32(data=n))
        if n == 2:
            node.destroy_subscription(state["sub"])
            state["sub"] = node.create_subscription(
                Int32, "loop", lambda m: heard.append(("b", m.data)), 10
            )
            old = state["timer"]
            node.destroy_timer(old)
            state["timer"] = node.create_timer(0.03, tick)  # its own period, from now
            try:  # the old handle stays destroyed: it cannot cancel the new one's timer
                old.cancel()
            except InvalidHandle as exc:
                refused.append(type(exc).__name__)
            state["late"] = node.create_subscription(Int32, "elsewhere", print, 10)
        if n == 4:
            hrclpy.shutdown()

    state["timer"] = node.create_timer(0.01, tick)
    hrclpy.init()
    hrclpy.spin(node)
    assert heard == [("a", 1), ("b", 2), ("b", 3), ("b", 4)]
    assert [t - ticks[0] for t in ticks] == [0, 10_000_000, 40_000_000, 70_000_000]
    assert refused == ["InvalidHandle"]
    assert list(node.subscriptions) == [state["sub"], state["late"]]


# -- a lifecycle node file, ported and under rclpy -----------------------------------------

SCRIPT = [  # lifecycle_talker.py's own script: ticks every 30 ms, its script every 100 ms
    "on_configure from unconfigured", "on_activate from inactive",
    *["PUB sent"] * 6, "on_deactivate from active", "TRIGGER deactivate SUCCESS",
    *["PUB dropped"] * 3, "on_cleanup from inactive", "TRIGGER cleanup SUCCESS",
    "on_configure from unconfigured", "TRIGGER configure SUCCESS",
    *["PUB dropped"] * 3, "on_activate from inactive", "TRIGGER activate SUCCESS",
    *["PUB sent"] * 3, "TRIGGER activate RCLError", *["PUB sent"] * 3,
    "on_shutdown from active", "TRIGGER shutdown SUCCESS", "STOP",
]  # fmt: skip
MANUAL = ["TRIGGER configure SUCCESS", "TRIGGER activate SUCCESS"]
LINE = r"(?:on_|PUB|TRIGGER|STOP|STATE|CHANGED|AVAILABLE|GRAPH).*"


def _ported(*args):
    r = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", *map(str, args), "--timeout", "10 s"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def _lines(stdout, federate):
    return re.findall(rf"^\[{federate}\] ({LINE})$", stdout, re.M)


def _until_stop(lines):
    return lines[: lines.index("STOP") + 1] if "STOP" in lines else lines


def _without_pub_counts(lines):
    """The lines with each run of equal PUB lines as one (how many ticks fall between two
    script steps depends on the wall clock under rclpy)."""
    return [x for i, x in enumerate(lines) if not (x.startswith("PUB") and lines[i - 1] == x)]


@pytest.mark.parametrize("manual", [False, True], ids=["joined", "main-started"])
def test_a_lifecycle_node_runs_its_transitions_ported(manual):
    """Unconfigured at spin, it is configured and activated as it joins (and says so);
    started by its own main, it is taken on as it is. Its cleanup destroys its publisher
    and timer, its next configure makes them again: the same ports carry on. The run is
    the same every time: every line is checked."""
    args = ["--param", "lifecycle_talker:manual:=true"] if manual else []
    r = _ported(TALKER, *args)
    assert _until_stop(_lines(r.stdout, "lifecycle_talker")) == _expected(manual)
    joined = "lifecycle node unconfigured -> active as it joins the federation" in r.stdout
    assert joined is not manual


def _expected(manual):
    if not manual:
        return SCRIPT
    # main's triggers print after their callbacks
    return [SCRIPT[0], MANUAL[0], SCRIPT[1], MANUAL[1], *SCRIPT[2:]]


@pytest.mark.ros2
def test_the_lifecycle_node_runs_the_same_under_real_rclpy(rclpy_until_stop):
    out = rclpy_until_stop([TALKER, "--ros-args", "-p", "manual:=true"])
    lines = [x for x in out if re.fullmatch(LINE, x)]
    assert _without_pub_counts(lines) == _without_pub_counts(_expected(True)), out


MANAGED = ["STATE active", "CHANGED True", "STATE inactive", "CHANGED True", "CHANGED False",
           "AVAILABLE deactivate shutdown", "GRAPH 25", "STOP"]  # fmt: skip


def test_a_manager_node_drives_a_ported_lifecycle_node_through_its_services():
    """change_state and the queries as tagged service calls between two federates; a
    transition the state lacks is refused with success=False and a warning."""
    r = _ported(TALKER, MANAGER, "--param", "lifecycle_talker:scripted:=false")
    assert _lines(r.stdout, "lifecycle_manager") == MANAGED
    talker = [x for x in _lines(r.stdout, "lifecycle_talker") if not x.startswith("PUB")]
    assert talker == ["on_configure from unconfigured", "on_activate from inactive",
                      "on_deactivate from active", "on_activate from inactive"]  # fmt: skip
    assert "change_state: no transition labelled 'configure' from state active" in r.stdout


@pytest.mark.ros2
def test_the_manager_sees_the_same_under_real_rclpy(rclpy_until_stop):
    out = rclpy_until_stop(
        [MANAGER], [TALKER, "--ros-args", "-p", "scripted:=false", "-p", "manual:=true"]
    )
    assert [x for x in out if re.fullmatch(LINE, x)] == MANAGED, out


@pytest.mark.ros2
def test_the_state_machine_is_the_one_rcl_has(require_ros2_cli):
    """rcl_lifecycle's states and transition graph, read from a real rclpy node."""
    require_ros2_cli()
    code = (
        "import rclpy; from rclpy.lifecycle import LifecycleNode; rclpy.init(); "
        "sm = LifecycleNode('g')._state_machine; "
        "print(repr((sm.available_states, sm.transition_graph)))"
    )
    env = dict(os.environ, ROS_DOMAIN_ID=str(random_domain_id()))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr
    states, graph = ast.literal_eval(r.stdout.strip())
    assert tuple(states) == STATES
    assert tuple(graph) == GRAPH


@pytest.mark.ros2
def test_ros2_service_call_manages_a_ported_lifecycle_node(ctrl_c, bridge_env, require_ros2_cli):
    """With --bridge the node's lifecycle services are ROS 2 services: the ros2 CLI
    deactivates it (its publishes are dropped from then on) and reads its state."""
    require_ros2_cli()
    env = bridge_env("rclpy")
    fed = subprocess.Popen(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", str(TALKER), "--bridge",
         "--param", "lifecycle_talker:scripted:=false", "--timeout", "120 s"],
        env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip

    def call(service, srv_type, request="{}"):
        r = subprocess.run(["ros2", "service", "call", f"/lc_talker/{service}",
                            f"lifecycle_msgs/srv/{srv_type}", request],
                           env=env, capture_output=True, text=True, timeout=90)  # fmt: skip
        return r.stdout + r.stderr

    try:
        changed = call("change_state", "ChangeState", "{transition: {id: 4}}")
        state = call("get_state", "GetState")
        refused = call("change_state", "ChangeState", "{transition: {label: deactivate}}")
    finally:
        out = ctrl_c(fed)
    assert "ChangeState_Response(success=True)" in changed, changed + out
    assert "State(id=2, label='inactive')" in state, state
    assert "ChangeState_Response(success=False)" in refused, refused
    lines = _lines(out, "lifecycle_talker")
    deactivated = lines.index("on_deactivate from active")
    assert "PUB sent" in lines[:deactivated] and set(lines[deactivated + 1 :]) == {"PUB dropped"}


def test_a_lifecycle_node_may_join_inactive_for_its_manager_to_activate():
    """With hprm.lifecycle_start:=inactive it is only configured as it joins: its
    publishes are dropped until the manager's activate, at the same tag every run; a start
    state it cannot join in is refused before the start, naming the parameter."""
    start = "lifecycle_talker:hprm.lifecycle_start:="
    r = _ported(TALKER, MANAGER, "--param", "lifecycle_talker:scripted:=false",
                "--param", start + "inactive")  # fmt: skip
    assert _lines(r.stdout, "lifecycle_manager") == [
        "STATE inactive", "CHANGED False", "STATE inactive", "CHANGED True", "CHANGED False",
        "AVAILABLE deactivate shutdown", "GRAPH 25", "STOP",
    ]  # fmt: skip
    talker = _lines(r.stdout, "lifecycle_talker")
    activated = talker.index("on_activate from inactive")
    # ticks at 30, 60... 180 ms; the manager's calls all answer at 200 ms, and it stops there
    assert talker[:activated] == ["on_configure from unconfigured", *["PUB dropped"] * 6]
    bad = subprocess.run(
        [sys.executable, "-m", "hprm_bridge.ros_cli", "run", str(TALKER), "--param",
         start + "unconfigured", "--timeout", "1 s"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode != 0
    assert "parameter hprm.lifecycle_start of /lc_talker: 'active' or 'inactive'" in bad.stdout


# lifecycle_deadline.py: a deadline subscription made in on_configure, again after cleanup
DEADLINE_SCRIPT = [
    "on_configure from unconfigured", "on_activate from inactive", "HEARD 1", "HEARD 2",
    "HEARD 3", "MISSED 1", "MISSED 2", "MISSED 3", "on_deactivate from active", "MISSED 4",
    "on_cleanup from inactive", "on_configure from unconfigured", "HEARD 15",
    "on_activate from inactive", "HEARD 16", "HEARD 17", "MISSED 1", "MISSED 2", "STOP",
]  # fmt: skip
DEADLINE_LINE = r"(?:on_|HEARD|MISSED|STOP).*"


def test_a_node_configured_again_watches_its_new_subscriptions_deadline():
    """The subscription on_configure makes again after the start watches its QoS
    deadline (on the node's timer wheel), from its own first message: it was refused."""
    out = _ported(NODES / "lifecycle_deadline.py").stdout
    assert re.findall(rf"^\[lifecycle_deadline\] ({DEADLINE_LINE})$", out, re.M) == (
        DEADLINE_SCRIPT
    ), out


@pytest.mark.ros2
def test_the_node_configured_again_sees_the_same_under_real_rclpy(rclpy_until_stop):
    lines = rclpy_until_stop([NODES / "lifecycle_deadline.py"])
    assert [x for x in lines if re.fullmatch(DEADLINE_LINE, x)] == DEADLINE_SCRIPT, lines
