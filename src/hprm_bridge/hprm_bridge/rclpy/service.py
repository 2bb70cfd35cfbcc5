"""``rclpy.service.Service`` of a ported node (:mod:`hprm_bridge.service_ports`).

The callback answers each request at the tag it arrives, one call at a time
in the order of the calling federates, as ``callback(request, response)``
returning the response, the way rclpy calls it. An action server's services
answer through a handler of their own instead (a result request is answered
when the goal ends, at a later tag).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hprm_bridge.rclpy.callback_groups import CallbackGroup, run_in_group
from hprm_bridge.rclpy.logical_sleep import Sleeper, drive

Handler = Callable[[str, int, Any], None]  # (client, sequence number, request)


class Service:
    """As rclpy's; made by ``Node.create_service``."""

    _destroyed = False
    callback_group: CallbackGroup | None = None  # Node.create_service's

    def __init__(
        self, srv_type: type, srv_name: str, callback: Callable[[Any, Any], Any] | None,
        requests: Any, replies: Any, handler: Handler | None = None,
    ) -> None:  # fmt: skip
        self.srv_type = srv_type
        self.srv_name = srv_name
        self.callback = callback
        self._requests = requests  # the request Input
        self._replies = replies  # the node's Publisher of the reply port
        self._handle = handler or self._call_back

    def destroy(self) -> None:
        """Its ports stay; requests from now on go unanswered, as to a server that left."""
        self._destroyed = True

    def _answer(self, tasks: Sleeper | None) -> None:
        """The request port's reaction; with ``tasks``, the callback runs as a task in
        its callback group (:mod:`hprm_bridge.rclpy.callback_groups`)."""
        if self._destroyed:
            return
        requests = self._requests.value
        if tasks is None:
            self._handle_all(requests)
        elif self.callback_group is None:  # an action's: its server has no group here
            tasks.run_now(lambda: self._handle_all(requests))
        else:
            run_in_group(tasks, self, lambda: self._handle_all(requests))

    def _handle_all(self, requests: Any) -> None:
        for key, seq, request in requests:
            if self._destroyed:
                return
            self._handle(key, seq, request)

    def _call_back(self, key: str, seq: int, request: Any) -> None:
        assert self.callback is not None
        response = drive(self.callback(request, self.srv_type.Response()))
        if not isinstance(response, self.srv_type.Response):
            raise TypeError(
                f"service {self.srv_name}: the callback returned {type(response).__name__}, "
                f"not a {self.srv_type.__name__}.Response (return the response it was given, "
                "filled in)"
            )
        self._reply(key, seq, response)

    def _reply(self, key: str, seq: int, response: Any) -> None:
        """Answer the call ``seq`` of client ``key`` (now, or at a later tag)."""
        self._replies.publish((key, seq, response))
