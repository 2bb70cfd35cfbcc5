"""``rclpy.action.ActionClient`` of a ported node (:mod:`hprm_bridge.action_ports`).

Its goals, result and cancel requests are service calls of the node, so they
are answered at tags as any call (:mod:`hprm_bridge.rclpy.client`): a goal
sent at ``t`` is accepted or rejected at ``t``, a result comes when the
server's execute callback ends (later, when it sleeps in logical time), and
feedback arrives at the tag it was published, the same in every run. Goal
ids are derived from the node, the action and a count (rclpy draws random
ones), so they too are the same in every run.

Example (the ROS 2 tutorial's client, unchanged)::

    future = self._action_client.send_goal_async(goal, feedback_callback=self.feedback)
    future.add_done_callback(self.goal_response_callback)
    ...
    def goal_response_callback(self, future):
        self._get_result_future = future.result().get_result_async()
        self._get_result_future.add_done_callback(self.get_result_callback)
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import uuid as _uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from hprm_bridge import action_ports, messages
from hprm_bridge.rclpy.action.server import TERMINAL
from hprm_bridge.rclpy.client import blocking_refused
from hprm_bridge.rclpy.logical_sleep import drive, wait_for
from hprm_bridge.rclpy.qos import QoSProfile, qos_profile_action_status_default
from hprm_bridge.rclpy.task import Future

_UUID = messages.message_class("unique_identifier_msgs/msg/UUID")
_GoalInfo = messages.message_class("action_msgs/msg/GoalInfo")


class ClientGoalHandle:
    """As rclpy's: what ``send_goal_async``'s future gives."""

    def __init__(self, client: ActionClient, goal_id: Any, goal_response: Any) -> None:
        self._client = client
        self._goal_id = goal_id
        self._goal_response = goal_response

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClientGoalHandle) and self._goal_id == other.goal_id

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"ClientGoalHandle <id={self.goal_id.uuid}, accepted={self.accepted}, "
            f"status={self.status}>"
        )

    @property
    def goal_id(self) -> Any:
        return self._goal_id

    @property
    def stamp(self) -> Any:
        return self._goal_response.stamp

    @property
    def accepted(self) -> bool:
        return bool(self._goal_response.accepted)

    @property
    def status(self) -> int:
        """The goal's last status from the server's status topic (or its result)."""
        return self._client._statuses.get(bytes(self._goal_id.uuid), 0)

    def get_result_async(self) -> Future:
        return self._client._get_result_async(self)

    def cancel_goal_async(self) -> Future:
        return self._client._cancel_goal_async(self)

    def get_result(self) -> Any:
        """Wait for the result (in a task: see ``Client.call``)."""
        return self._client._wait(self.get_result_async, "ClientGoalHandle.get_result",
                                  "get_result_async")  # fmt: skip

    def cancel_goal(self) -> Any:
        """Wait for the cancel response (in a task: see ``Client.call``)."""
        return self._client._wait(self.cancel_goal_async, "ClientGoalHandle.cancel_goal",
                                  "cancel_goal_async")  # fmt: skip


class ActionClient:
    """As rclpy's (Humble); see the module docstring for when each answer comes."""

    def __init__(
        self, node: Any, action_type: Any, action_name: str, *, callback_group: Any = None,
        **qos_profiles: Any,
    ) -> None:  # fmt: skip
        self._node = node
        self._action_type = cls = action_ports.action_class(action_type)
        self._name = name = node.resolve_service_name(action_name)
        topics = action_ports.topics(name)
        self._goals = node.create_client(cls.Impl.SendGoalService, topics["send_goal"])
        self._results = node.create_client(cls.Impl.GetResultService, topics["get_result"])
        self._cancels = node.create_client(cls.Impl.CancelGoalService, topics["cancel_goal"])
        node.create_subscription(
            cls.Impl.FeedbackMessage, topics["feedback"], self._on_feedback,
            qos_profiles.get("feedback_sub_qos_profile", QoSProfile(depth=10)),
        )  # fmt: skip
        node.create_subscription(
            cls.Impl.GoalStatusMessage, topics["status"], self._on_status,
            qos_profiles.get("status_sub_qos_profile", qos_profile_action_status_default),
        )  # fmt: skip
        self._feedback_callbacks: dict[bytes, Callable[[Any], Any]] = {}
        self._statuses: dict[bytes, int] = {}  # every goal this client sent
        self._count = itertools.count(1)

    def send_goal_async(
        self, goal: Any, feedback_callback: Callable[[Any], Any] | None = None,
        goal_uuid: Any = None,
    ) -> Future:  # fmt: skip
        if not isinstance(goal, self._action_type.Goal):
            raise TypeError(f"goal must be a {self._action_type.Goal!r}, got {type(goal)!r}")
        goal_id = self._next_uuid() if goal_uuid is None else goal_uuid
        key = bytes(goal_id.uuid)
        request = self._action_type.Impl.SendGoalService.Request(goal_id=goal_id, goal=goal)
        if feedback_callback is not None:
            self._feedback_callbacks[key] = feedback_callback
        self._statuses[key] = 0
        answered = Future()

        def goal_response(reply: Future) -> None:
            if reply.cancelled():
                answered.cancel()
                return
            handle = ClientGoalHandle(self, goal_id, reply.result())
            if handle.accepted:
                self._statuses[key] = max(self._statuses[key], 1)  # ACCEPTED at least
            answered.set_result(handle)

        self._goals.call_async(request).add_done_callback(goal_response)
        return answered

    def send_goal(self, goal: Any, **kwargs: Any) -> Any:
        """Send the goal and wait for its result (rclpy's: the result's response), in a
        task (see ``Client.call``)."""
        start = functools.partial(self.send_goal_async, goal, **kwargs)
        handle = self._wait(start, "ActionClient.send_goal", "send_goal_async")
        return handle.get_result()

    def server_is_ready(self) -> bool:
        return self._goals.service_is_ready()

    def wait_for_server(self, timeout_sec: float | None = None) -> bool:
        """As ``Client.wait_for_service`` (of its goal service): True before the start,
        then whether a node (or the gateway) serves the action."""
        return self.server_is_ready()

    def destroy(self) -> None:
        self._feedback_callbacks.clear()

    def _get_result_async(self, handle: ClientGoalHandle) -> Future:
        request = self._action_type.Impl.GetResultService.Request(goal_id=handle.goal_id)
        future = self._results.call_async(request)
        key = bytes(handle.goal_id.uuid)

        def ended(done: Future) -> None:
            self._feedback_callbacks.pop(key, None)  # as rclpy: no feedback after the result
            if not done.cancelled() and done.result().status:
                self._statuses[key] = done.result().status

        future.add_done_callback(ended)
        return future

    def _cancel_goal_async(self, handle: ClientGoalHandle) -> Future:
        request = self._action_type.Impl.CancelGoalService.Request(
            goal_info=_GoalInfo(goal_id=handle.goal_id)
        )
        return self._cancels.call_async(request)

    def _on_feedback(self, msg: Any) -> None:
        callback = self._feedback_callbacks.get(bytes(msg.goal_id.uuid))
        if callback is not None:
            drive(callback(msg))

    def _on_status(self, msg: Any) -> None:
        for status in msg.status_list:
            key = bytes(status.goal_info.goal_id.uuid)
            if key in self._statuses and self._statuses[key] not in TERMINAL:
                self._statuses[key] = int(status.status)

    def _next_uuid(self) -> Any:
        """A goal id that is the same in every run: a hash of the node, the action and
        the goal's count, shaped as a version-4 UUID."""
        seed = f"{self._node._unique_name()}|{self._name}|{next(self._count)}"
        raw = _uuid.UUID(bytes=hashlib.sha256(seed.encode()).digest()[:16], version=4).bytes
        return _UUID(uuid=np.frombuffer(raw, dtype=np.uint8).copy())

    def _wait(self, start: Callable[[], Future], call: str, instead: str) -> Any:
        refused = functools.partial(blocking_refused, call, self._name, instead)
        return wait_for(start, refused).result()  # raises what the call raised
