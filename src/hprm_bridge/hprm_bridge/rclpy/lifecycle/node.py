"""rclpy's ``LifecycleNode`` (a managed node) as an HPRM federate.

The transitions are rclpy's: ``trigger_configure()`` and the others, or the
node's ``~/change_state`` service (a lifecycle manager's, ``ros2 service
call`` through the gateway), run the node's ``on_*`` callback and move the
state machine on its result; ``~/get_state``, ``~/get_available_states``,
``~/get_available_transitions``, ``~/get_transition_graph`` answer as rcl's
do, and every state change is a ``~/transition_event``. A call of
``~/change_state`` is a tagged message, so the transition happens at the same
logical time in every run.

What differs, and why: a federate's ports are fixed before its federation
starts, and a lifecycle node creates its publishers, subscriptions and
timers in ``on_configure`` (or ``on_activate``). So when ``spin`` starts,
HPRM takes an unconfigured node through configure and activate before it
joins, as a lifecycle manager with ``autostart`` would; the entities those
callbacks create are the node's ports. With the parameter override
``hprm.lifecycle_start:=inactive`` it joins inactive instead, for a manager
to activate at a tag of its choosing. The transitions after that work as
under rclpy: deactivate and activate gate its lifecycle publishers, and
cleanup then configure may destroy and create again what the first
configure made (a re-created entity takes the destroyed one's ports:
:mod:`hprm_bridge.rclpy.late_entities`). A node whose main already
configured or activated it is taken on from where it is.

Example (a node file, unchanged from rclpy)::

    class Talker(LifecycleNode):
        def on_configure(self, state):
            self.pub = self.create_lifecycle_publisher(String, "chatter", 10)
            self.timer = self.create_timer(0.1, self.tick)
            return TransitionCallbackReturn.SUCCESS

        def on_cleanup(self, state):
            self.destroy_timer(self.timer)
            self.destroy_publisher(self.pub)
            return TransitionCallbackReturn.SUCCESS
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any, NamedTuple

from hprm_bridge import messages
from hprm_bridge.rclpy.exceptions import RCLError
from hprm_bridge.rclpy.lifecycle.managed_entity import ManagedEntity
from hprm_bridge.rclpy.lifecycle.publisher import LifecyclePublisher
from hprm_bridge.rclpy.lifecycle.state_machine import (
    GRAPH,
    STATES,
    StateMachine,
    TransitionCallbackReturn,
)
from hprm_bridge.rclpy.node import Node
from hprm_bridge.rclpy.publisher import Publisher
from hprm_bridge.rclpy.qos import QoSProfile
from hprm_core import Reactor

_MSG = "lifecycle_msgs/msg/"
# the transitional state in which each on_* callback runs
_CALLBACK_STATES = {10: "on_configure", 11: "on_cleanup", 12: "on_shutdown",
                    13: "on_activate", 14: "on_deactivate", 15: "on_error"}  # fmt: skip
_SHUTDOWN_FROM = {"unconfigured": 5, "inactive": 6, "active": 7}
# The state an unconfigured node joins in, "active" or "inactive" (then a manager activates
# it): a parameter override, so a launch file or hprm-ros run --param sets it per node
# (rclpy keeps an undeclared override and ignores it).
START_PARAMETER = "hprm.lifecycle_start"


class LifecycleState(NamedTuple):
    label: str
    state_id: int


class LifecycleNodeMixin(ManagedEntity):
    """The lifecycle of a :class:`~hprm_bridge.rclpy.node.Node` (mixed in after it is
    built, as rclpy's)."""

    def __init__(self, *, enable_communication_interface: bool = True, **kwargs: Any) -> None:
        self._state_machine = StateMachine()
        # in the order added (rclpy keeps a set: its order changes from run to run)
        self._managed_entities: dict[ManagedEntity, None] = {}
        self._transition_events: Publisher | None = None
        if enable_communication_interface:
            self._lifecycle_interface()

    def _lifecycle_interface(self) -> None:
        node: Any = self
        event_type = _MSG + "TransitionEvent"
        topic = node.resolve_topic_name("~/transition_event")
        self._transition_events = node._publisher(topic, event_type, "transition_event")
        node._graph.add("pub", topic, event_type, QoSProfile(depth=10))  # rcl_lifecycle's
        srv = "lifecycle_msgs/srv/"
        for name, srv_type, answer in (
            ("change_state", "ChangeState", self._on_change_state),
            ("get_state", "GetState", self._on_get_state),
            ("get_available_states", "GetAvailableStates", self._on_get_available_states),
            ("get_available_transitions", "GetAvailableTransitions",
             self._on_get_available_transitions),
            ("get_transition_graph", "GetAvailableTransitions", self._on_get_transition_graph),
        ):  # fmt: skip
            node.create_service(messages.service_class(srv + srv_type), "~/" + name, answer)

    # -- transitions ------------------------------------------------------------------

    def trigger_configure(self) -> TransitionCallbackReturn:
        return self._change_state(1)

    def trigger_cleanup(self) -> TransitionCallbackReturn:
        return self._change_state(2)

    def trigger_activate(self) -> TransitionCallbackReturn:
        return self._change_state(3)

    def trigger_deactivate(self) -> TransitionCallbackReturn:
        return self._change_state(4)

    def trigger_shutdown(self) -> TransitionCallbackReturn:
        transition = _SHUTDOWN_FROM.get(self._state_machine.current_state[1])
        if transition is None:
            raise RCLError("Shutdown transtion not possible")  # rclpy's words
        return self._change_state(transition)

    def add_managed_entity(self, entity: ManagedEntity) -> None:
        if not isinstance(entity, ManagedEntity):
            raise TypeError("Expected a rclpy.lifecycle.ManagedEntity instance.")
        self._managed_entities[entity] = None

    def _change_state(self, transition_id: int) -> TransitionCallbackReturn:
        start = LifecycleState(*reversed(self._state_machine.current_state))
        self._step(transition_id)
        result = self._run_callback(start)
        self._step(self._state_machine.get_transition_by_label(result.to_label()))
        if result is TransitionCallbackReturn.ERROR:  # errorprocessing: on_error decides
            handled = self._run_callback(start)
            self._step(self._state_machine.get_transition_by_label(handled.to_label()))
        return result

    def _step(self, transition_id: int) -> None:
        t, label, a, a_label, b, b_label = self._state_machine.trigger(transition_id)
        if self._transition_events is None:
            return
        event = messages.message_class(_MSG + "TransitionEvent")()
        # the tag's logical time; 0 before the start (Humble's rcl sends 0 always)
        event.timestamp = self._clock.logical_ns() or 0  # type: ignore[attr-defined]
        event.transition.id, event.transition.label = t, label
        event.start_state.id, event.start_state.label = a, a_label
        event.goal_state.id, event.goal_state.label = b, b_label
        self._transition_events.publish(event)

    def _run_callback(self, previous: LifecycleState) -> TransitionCallbackReturn:
        """The callback of the transitional state the node is in; an exception in it is
        an ERROR (as rclpy's), logged here with its traceback (rclpy logs nothing)."""
        name = _CALLBACK_STATES[self._state_machine.current_state[0]]
        try:
            result = getattr(self, name)(previous)
        except Exception:
            self.get_logger().error(  # type: ignore[attr-defined]
                f"{name} raised, so the transition ends in error:\n{traceback.format_exc()}"
            )
            return TransitionCallbackReturn.ERROR
        if not isinstance(result, TransitionCallbackReturn):
            raise TypeError(
                f"{name}() returned {result!r}: a lifecycle callback returns a "
                "TransitionCallbackReturn (SUCCESS, FAILURE or ERROR)"
            )
        return result

    def _managed(self, name: str, state: LifecycleState) -> TransitionCallbackReturn:
        for entity in list(self._managed_entities):  # one may add another
            result = getattr(entity, name)(state)
            if not isinstance(result, TransitionCallbackReturn):
                raise TypeError(
                    f"{name}() return value of class {type(entity)} should be "
                    "`TransitionCallbackReturn`."
                )
            if result is not TransitionCallbackReturn.SUCCESS:
                return result
        return TransitionCallbackReturn.SUCCESS

    # The default callbacks: each managed entity's, stopping at the first that does not
    # succeed. A node overriding one calls super() to keep its lifecycle publishers' gate.

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._managed("on_configure", state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._managed("on_cleanup", state)

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._managed("on_shutdown", state)

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._managed("on_activate", state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._managed("on_deactivate", state)

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._managed("on_error", state)

    def create_lifecycle_publisher(self, *args: Any, **kwargs: Any) -> LifecyclePublisher:
        if "publisher_class" in kwargs:
            raise TypeError(
                "create_publisher() got an unexpected keyword argument 'publisher_class'"
            )
        pub = Node.create_publisher(self, *args, publisher_class=LifecyclePublisher, **kwargs)  # type: ignore[arg-type]
        self._managed_entities[pub] = None
        return pub  # type: ignore[return-value]

    def destroy_lifecycle_publisher(self, publisher: LifecyclePublisher) -> bool:
        self._managed_entities.pop(publisher, None)
        return Node.destroy_publisher(self, publisher)  # type: ignore[arg-type]

    # -- the services -----------------------------------------------------------------

    def _on_change_state(self, request: Any, response: Any) -> Any:
        """A transition the node's state does not have is answered ``success=False``
        with a warning (rclpy's service raises out of the executor on a bad id)."""
        try:
            transition = request.transition.id
            if request.transition.label:
                transition = self._state_machine.get_transition_by_label(request.transition.label)
            response.success = self._change_state(transition) is TransitionCallbackReturn.SUCCESS
        except RCLError as exc:
            self.get_logger().warning(f"change_state: {exc}")  # type: ignore[attr-defined]
            response.success = False
        return response

    def _on_get_state(self, request: Any, response: Any) -> Any:
        response.current_state.id, response.current_state.label = self._state_machine.current_state
        return response

    def _on_get_available_states(self, request: Any, response: Any) -> Any:
        state = messages.message_class(_MSG + "State")
        response.available_states = [state(id=i, label=label) for i, label in STATES]
        return response

    def _on_get_available_transitions(self, request: Any, response: Any) -> Any:
        response.available_transitions = _descriptions(self._state_machine.available_transitions)
        return response

    def _on_get_transition_graph(self, request: Any, response: Any) -> Any:
        response.available_transitions = _descriptions(GRAPH)
        return response

    # -- joining the federation ---------------------------------------------------------

    def _as_reactor(self) -> Reactor:
        """Before the node's ports are fixed: configure and activate it (see the module)."""
        node: Any = self
        if not node._finalized:
            label = self._state_machine.current_state[1]
            start = node._params.overrides.get(START_PARAMETER, "active")
            if start not in ("active", "inactive"):
                raise ValueError(
                    f"parameter {START_PARAMETER} of {node.get_fully_qualified_name()}: "
                    f"'active' or 'inactive', not {start!r} (a node joins configured: its "
                    "ports are what its on_configure creates)"
                )
            if label == "unconfigured":
                self._autostart("configure", self.trigger_configure)
            if self._state_machine.current_state[1] == "inactive" and start == "active":
                self._autostart("activate", self.trigger_activate)
            if label != self._state_machine.current_state[1]:
                node.get_logger().info(
                    f"lifecycle node {label} -> {self._state_machine.current_state[1]} as it "
                    "joins the federation (its ports are fixed from the start)"
                )
        return super()._as_reactor()  # type: ignore[misc,no-any-return]

    def _autostart(self, what: str, trigger: Callable[[], TransitionCallbackReturn]) -> None:
        result = trigger()
        if result is not TransitionCallbackReturn.SUCCESS:
            self.get_logger().warning(  # type: ignore[attr-defined]
                f"lifecycle node: {what} at the start returned {result.name}; it joins "
                f"{self._state_machine.current_state[1]}, with the ports created so far"
            )


def _descriptions(graph: Any) -> list[Any]:
    described = messages.message_class(_MSG + "TransitionDescription")
    out = []
    for t, label, a, a_label, b, b_label in graph:
        d = described()
        d.transition.id, d.transition.label = t, label
        d.start_state.id, d.start_state.label = a, a_label
        d.goal_state.id, d.goal_state.label = b, b_label
        out.append(d)
    return out


class LifecycleNode(LifecycleNodeMixin, Node):
    """A managed node (rclpy's ``rclpy.lifecycle.LifecycleNode``)."""

    def __init__(
        self, node_name: str, *, enable_communication_interface: bool = True, **kwargs: Any
    ) -> None:
        Node.__init__(self, node_name, **kwargs)
        LifecycleNodeMixin.__init__(
            self, enable_communication_interface=enable_communication_interface
        )
