"""``rclpy.action.ActionServer`` of a ported node.

An action is what rcl_action makes it: three services and two topics under
``<name>/_action/`` (``send_goal``, ``get_result``, ``cancel_goal``;
``feedback``, ``status``) with the types rosidl derives from the
``.action`` file. Built on the node's services and publishers, it crosses
between federates (and, through the gateway, to ROS 2) as they do.

What runs when, at tags (so the same in every run):

- a goal request is decided (``goal_callback``) and answered at the tag it
  arrives; an accepted goal goes to ``handle_accepted_callback`` right after,
  whose default executes it at once;
- the execute callback runs as a task (:mod:`hprm_bridge.rclpy.logical_sleep`),
  from the microstep after ``execute()`` (as rclpy hands it to the executor):
  ``time.sleep(d)`` inside it resumes it ``d`` later in logical time, with the
  node's other callbacks (a cancel request, a new goal) run in between; its
  feedback is delivered at the tag it is published;
- a result request is answered when its goal ends (at once if it has);
- a cancel request asks ``cancel_callback`` about each goal it names that can
  still be canceled; an accepted one reads ``is_cancel_requested`` on its
  execute callback's next step.

Example (the ROS 2 tutorial's server, unchanged)::

    class FibonacciActionServer(Node):
        def __init__(self):
            super().__init__("fibonacci_action_server")
            self._action_server = ActionServer(self, Fibonacci, "fibonacci", self.execute)

        def execute(self, goal_handle):
            sequence = [0, 1]
            for i in range(1, goal_handle.request.order):
                sequence.append(sequence[i] + sequence[i - 1])
                goal_handle.publish_feedback(Fibonacci.Feedback(sequence=sequence))
                time.sleep(1)
            goal_handle.succeed()
            return Fibonacci.Result(sequence=sequence)
"""

from __future__ import annotations

import enum
import traceback
from collections.abc import Callable
from typing import Any

from hprm_bridge import action_ports, messages
from hprm_bridge.rclpy.logical_sleep import drive
from hprm_bridge.rclpy.qos import QoSProfile, qos_profile_action_status_default

_GoalStatus = messages.message_class("action_msgs/msg/GoalStatus")
_GoalInfo = messages.message_class("action_msgs/msg/GoalInfo")
_UNKNOWN, _ACCEPTED = _GoalStatus.STATUS_UNKNOWN, _GoalStatus.STATUS_ACCEPTED
_EXECUTING, _CANCELING = _GoalStatus.STATUS_EXECUTING, _GoalStatus.STATUS_CANCELING
_SUCCEEDED, _CANCELED = _GoalStatus.STATUS_SUCCEEDED, _GoalStatus.STATUS_CANCELED
_ABORTED = _GoalStatus.STATUS_ABORTED
TERMINAL = (_SUCCEEDED, _CANCELED, _ABORTED)  # a goal's last states
# rcl_action's goal state machine: (state, event) -> state
_EXECUTE, _CANCEL_GOAL, _SUCCEED, _ABORT, _CANCELED_EVENT = range(5)
_TRANSITIONS = {
    (_ACCEPTED, _EXECUTE): _EXECUTING,
    (_ACCEPTED, _CANCEL_GOAL): _CANCELING,
    (_EXECUTING, _CANCEL_GOAL): _CANCELING,
    (_EXECUTING, _SUCCEED): _SUCCEEDED,
    (_EXECUTING, _ABORT): _ABORTED,
    (_CANCELING, _SUCCEED): _SUCCEEDED,
    (_CANCELING, _ABORT): _ABORTED,
    (_CANCELING, _CANCELED_EVENT): _CANCELED,
}
_EVENT_NAMES = ("EXECUTE", "CANCEL_GOAL", "SUCCEED", "ABORT", "CANCELED")


class GoalResponse(enum.Enum):
    REJECT = 1
    ACCEPT = 2


class CancelResponse(enum.Enum):
    REJECT = 1
    ACCEPT = 2


def default_handle_accepted_callback(goal_handle: ServerGoalHandle) -> None:
    goal_handle.execute()


def default_goal_callback(goal_request: Any) -> GoalResponse:
    return GoalResponse.ACCEPT


def default_cancel_callback(cancel_request: Any) -> CancelResponse:
    return CancelResponse.REJECT


class InvalidTransitionError(RuntimeError):
    """A goal asked to move where rcl_action's state machine has no edge (succeed a
    goal twice, cancel one that was not asked to cancel)."""


class ServerGoalHandle:
    """As rclpy's: what the execute callback gets."""

    def __init__(self, server: ActionServer, info: Any, request: Any) -> None:
        self._server = server
        self._info = info
        self._request = request
        self._status = _ACCEPTED

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ServerGoalHandle) and self.goal_id == other.goal_id

    __hash__ = None  # type: ignore[assignment]  # as rclpy's: compared by goal id

    @property
    def request(self) -> Any:
        return self._request

    @property
    def goal_id(self) -> Any:
        return self._info.goal_id

    @property
    def is_active(self) -> bool:
        return self._status in (_ACCEPTED, _EXECUTING, _CANCELING)

    @property
    def is_cancel_requested(self) -> bool:
        return self._status == _CANCELING

    @property
    def status(self) -> int:
        return self._status

    def execute(self, execute_callback: Callable[[ServerGoalHandle], Any] | None = None) -> None:
        """Run the execute callback as a task, from the next microstep (see the module
        docstring)."""
        if not self.is_cancel_requested:
            self._update_state(_EXECUTE)
        self._server._execute(self, execute_callback)

    def publish_feedback(self, feedback: Any) -> None:
        action = self._server._action_type
        if not isinstance(feedback, action.Feedback):
            raise TypeError(f"feedback must be a {action.Feedback!r}, got {type(feedback)!r}")
        self._server._feedback.publish(
            action.Impl.FeedbackMessage(goal_id=self.goal_id, feedback=feedback)
        )

    def succeed(self) -> None:
        self._update_state(_SUCCEED)

    def abort(self) -> None:
        self._update_state(_ABORT)

    def canceled(self) -> None:
        self._update_state(_CANCELED_EVENT)

    def destroy(self) -> None:
        pass

    def _update_state(self, event: int) -> None:
        new = _TRANSITIONS.get((self._status, event))
        if new is None:
            raise InvalidTransitionError(
                f"goal {_uuid_text(self.goal_id)} of {self._server._name}: no transition from "
                f"state {self._status} with event {_EVENT_NAMES[event]} (rcl_action's goal "
                "state machine)"
            )
        self._status = new
        self._server._publish_status()


class ActionServer:
    """As rclpy's (Humble); see the module docstring for when each callback runs."""

    def __init__(
        self,
        node: Any,
        action_type: Any,
        action_name: str,
        execute_callback: Callable[[ServerGoalHandle], Any],
        *,
        callback_group: Any = None,
        goal_callback: Callable[[Any], Any] = default_goal_callback,
        handle_accepted_callback: Callable[[ServerGoalHandle], Any] = (
            default_handle_accepted_callback
        ),
        cancel_callback: Callable[[ServerGoalHandle], Any] = default_cancel_callback,
        result_timeout: float = 900,
        **qos_profiles: Any,
    ) -> None:
        self._node = node
        self._action_type = cls = action_ports.action_class(action_type)
        self._name = name = node.resolve_service_name(action_name)
        topics = action_ports.topics(name)
        self._execute_callback = execute_callback
        self._goal_callback = goal_callback
        self._handle_accepted_callback = handle_accepted_callback
        self._cancel_callback = cancel_callback
        self._result_timeout_ns = round(result_timeout * 1_000_000_000)
        self._tasks = node._tasks()
        self._goal_service = node._serve(cls.Impl.SendGoalService, topics["send_goal"], None,
                                         self._on_goal)  # fmt: skip
        self._results = node._serve(cls.Impl.GetResultService, topics["get_result"], None,
                                    self._on_result_request)  # fmt: skip
        node._serve(cls.Impl.CancelGoalService, topics["cancel_goal"], self._on_cancel)
        self._feedback = node.create_publisher(
            cls.Impl.FeedbackMessage, topics["feedback"],
            qos_profiles.get("feedback_pub_qos_profile", QoSProfile(depth=10)),
        )  # fmt: skip
        self._status = node.create_publisher(
            cls.Impl.GoalStatusMessage, topics["status"],
            qos_profiles.get("status_pub_qos_profile", qos_profile_action_status_default),
        )  # fmt: skip
        self._goals: dict[bytes, ServerGoalHandle] = {}  # in the order they were accepted
        self._ended: dict[bytes, tuple[int, Any]] = {}  # (when, GetResult response)
        self._waiting: dict[bytes, list[tuple[str, int]]] = {}  # result calls not answered

    @property
    def action_type(self) -> Any:
        return self._action_type

    def register_goal_callback(self, goal_callback: Callable[[Any], Any]) -> None:
        self._goal_callback = goal_callback or default_goal_callback

    def register_cancel_callback(self, cancel_callback: Callable[[Any], Any]) -> None:
        self._cancel_callback = cancel_callback or default_cancel_callback

    def register_handle_accepted_callback(self, callback: Callable[[Any], Any]) -> None:
        self._handle_accepted_callback = callback or default_handle_accepted_callback

    def register_execute_callback(self, execute_callback: Callable[[Any], Any]) -> None:
        self._execute_callback = execute_callback

    def destroy(self) -> None:
        pass

    # -- the three services ---------------------------------------------------------

    def _on_goal(self, key: str, seq: int, request: Any) -> None:
        uuid = bytes(request.goal_id.uuid)
        accepted = False
        if uuid not in self._goals:
            decision = drive(self._goal_callback(request.goal))
            if isinstance(decision, GoalResponse):
                accepted = decision == GoalResponse.ACCEPT
            else:
                self._node.get_logger().warning(
                    "Goal request callback did not return a GoalResponse type. Rejecting goal."
                )
        response = self._action_type.Impl.SendGoalService.Response(accepted=accepted)
        if accepted:
            response.stamp = self._node.get_clock().now().to_msg()
            info = _GoalInfo(goal_id=request.goal_id, stamp=response.stamp)
            handle = ServerGoalHandle(self, info, request.goal)
            self._goals[uuid] = handle
        self._goal_service._reply(key, seq, response)
        if accepted:
            drive(self._handle_accepted_callback(handle))

    def _on_result_request(self, key: str, seq: int, request: Any) -> None:
        uuid = bytes(request.goal_id.uuid)
        if uuid in self._ended:
            self._results._reply(key, seq, self._ended[uuid][1])
        elif uuid in self._goals:
            self._waiting.setdefault(uuid, []).append((key, seq))
        else:  # never accepted here, or expired
            response = self._action_type.Impl.GetResultService.Response(status=_UNKNOWN)
            self._results._reply(key, seq, response)

    def _on_cancel(self, request: Any, response: Any) -> Any:
        uuid = bytes(request.goal_info.goal_id.uuid)
        stamp = request.goal_info.stamp
        before = stamp.sec * 1_000_000_000 + stamp.nanosec
        everything = not any(uuid) and not before
        asked = [
            handle
            for key, handle in self._goals.items()
            if everything or (any(uuid) and key == uuid) or (before and _stamp_ns(handle) <= before)
        ]
        candidates = [h for h in asked if h.status in (_ACCEPTED, _EXECUTING)]
        for handle in candidates:
            if drive(self._cancel_callback(handle)) == CancelResponse.ACCEPT:
                handle._update_state(_CANCEL_GOAL)
                response.goals_canceling.append(handle._info)
        if response.goals_canceling:
            response.return_code = response.ERROR_NONE
        elif any(uuid) and uuid not in self._goals:
            response.return_code = response.ERROR_UNKNOWN_GOAL_ID
        elif asked and not candidates:
            response.return_code = response.ERROR_GOAL_TERMINATED
        else:
            response.return_code = response.ERROR_REJECTED
        return response

    # -- execution ------------------------------------------------------------------

    def _execute(self, handle: ServerGoalHandle, callback: Callable[..., Any] | None) -> None:
        execute = callback or self._execute_callback
        self._tasks.start(lambda: self._run(execute, handle))

    def _run(self, execute: Callable[..., Any], handle: ServerGoalHandle) -> None:
        """A goal's task: the execute callback, then the result to whoever asked."""
        logger = self._node.get_logger()
        action = self._action_type
        try:
            result = drive(execute(handle))
        except Exception as exc:  # as rclpy: logged, and the goal aborted with no result
            logger.error(f"Error raised in execute callback: {exc}")
            traceback.print_exc()
            result = action.Result()
        if not isinstance(result, action.Result):
            raise TypeError(
                f"action {self._name}: the execute callback returned {type(result).__name__}, "
                f"not a {action.__name__}.Result"
            )
        if handle.is_active:
            logger.warning(
                f"Goal state not set, assuming aborted. Goal ID: {_uuid_text(handle.goal_id)}"
            )
            handle.abort()
        uuid = bytes(handle.goal_id.uuid)
        response = action.Impl.GetResultService.Response(status=handle.status, result=result)
        self._ended[uuid] = (self._node.get_clock().now_ns(), response)
        for key, seq in self._waiting.pop(uuid, []):
            self._results._reply(key, seq, response)

    def _publish_status(self) -> None:
        """Every goal's status, at each change, as rcl_action publishes it; a goal ended
        longer than ``result_timeout`` ago (logical time) is forgotten first."""
        now = self._node.get_clock().now_ns()
        for uuid, (ended, _) in list(self._ended.items()):
            if now - ended > self._result_timeout_ns:
                del self._ended[uuid], self._goals[uuid]
        goals = [_GoalStatus(goal_info=h._info, status=h.status) for h in self._goals.values()]
        self._status.publish(self._action_type.Impl.GoalStatusMessage(status_list=goals))


def _stamp_ns(handle: ServerGoalHandle) -> int:
    return handle._info.stamp.sec * 1_000_000_000 + handle._info.stamp.nanosec


def _uuid_text(goal_id: Any) -> str:
    return bytes(goal_id.uuid).hex()
