"""``rclpy.client.Client`` between ported nodes (:mod:`hprm_bridge.service_ports`).

A call is a tagged message: ``call_async`` sends the request with the node's
other publishes of the tag, and the future completes in the node's callbacks
at the tag the reply arrives (the same logical time, two microsteps later),
so which reply a node sees when is the same in every run.

Example (a node's callback)::

    def tick(self):
        future = self.client.call_async(AddTwoInts.Request(a=self.n, b=1))
        future.add_done_callback(lambda f: self.get_logger().info(f"sum {f.result().sum}"))
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from hprm_bridge.rclpy.exceptions import InvalidHandle, UnsupportedError
from hprm_bridge.rclpy.task import Future

if TYPE_CHECKING:
    from hprm_bridge.rclpy.parameter_calls import Route


def blocking_refused(call: str, name: str, instead: str) -> UnsupportedError:
    """Why a blocking call cannot wait here (see :meth:`Client.call`)."""
    return UnsupportedError(
        f"{call} ({name}) in a callback the node runs directly: the answer comes at a later "
        "microstep, which a callback that blocks for it never reaches (under rclpy it "
        "deadlocks a single-threaded executor the same way); spin the node with a "
        f"MultiThreadedExecutor (its callbacks then run as tasks that may wait), or use "
        f"{instead} and add_done_callback"
    )


class Client:
    """As rclpy's; made by ``Node.create_client``."""

    def __init__(self, srv_type: type, srv_name: str, key: str, requests: Any, replies: Any):
        self.srv_type = srv_type
        self.srv_name = srv_name
        self._key = key  # this client among every client of the federation
        self._requests = requests  # the node's Publisher of the request port
        self._replies = replies  # the reply Input
        self._pending: dict[int, Future] = {}
        self._sequence = 0
        self._destroyed = False
        self._served: bool | None = None  # known at the start: a server is connected
        self._route: Route | None = None  # to a ported node's parameter service
        self._via_route = False  # that route is connected (known at the start)

    def call_async(self, request: Any) -> Future:
        if not isinstance(request, self.srv_type.Request):
            raise TypeError(
                f"Request must be instance of {self.srv_type.Request!r}, got {type(request)!r}"
            )  # rclpy's words
        if self._destroyed:
            raise InvalidHandle(f"the client of {self.srv_name}")
        self._sequence += 1
        future = Future()
        self._pending[self._sequence] = future
        if self._via_route:
            assert self._route is not None
            call = ((self._key, self._sequence), self._route.service, request)
            self._route.calls.publish(call)
        else:
            self._requests.publish((self._key, self._sequence, request))
        return future

    def call(self, request: Any, timeout_sec: float | None = None) -> Any:
        """Call and wait for the response (``timeout_sec`` of logical time: None then, and
        the call forgotten). The response comes at a later microstep, which only a task
        can wait for (:mod:`hprm_bridge.rclpy.logical_sleep`): the callbacks of a node
        spun by a ``MultiThreadedExecutor`` (what rclpy needs for a blocking call in a
        callback too), an action's execute callback, the node file's main. Elsewhere an
        ``UnsupportedError`` says so: under rclpy that call would deadlock."""
        from hprm_bridge.rclpy import logical_sleep

        timeout_ns = None if timeout_sec is None else round(timeout_sec * 1_000_000_000)
        refused = functools.partial(blocking_refused, "Client.call", self.srv_name, "call_async")
        start = functools.partial(self.call_async, request)
        future = logical_sleep.wait_for(start, refused, timeout_ns)
        if not future.done():  # timed out: forgotten
            self.remove_pending_request(future)
            return None
        return future.result()  # raises what the call raised

    def wait_for_service(self, timeout_sec: float | None = None) -> bool:
        """Whether a server answers: a federation's services are connected before its first
        tag, so a server, if the federation has one, answers from the start. Before the
        start (in a node's main, before ``spin``) the answer is not known yet: True, so
        that the main goes on to start the federate; a call no node serves is never
        answered, and the node says so as it starts. From the start on, the truth, at
        once (waiting would change nothing: the federation's graph is fixed)."""
        return self.service_is_ready()

    def service_is_ready(self) -> bool:
        return self._served is not False

    def remove_pending_request(self, future: Future) -> None:
        for seq, pending in list(self._pending.items()):
            if pending is future:
                del self._pending[seq]

    def destroy(self) -> None:
        """Pending calls are forgotten (their futures never complete, as rclpy's);
        ``call_async`` refuses from now on."""
        self._pending.clear()
        self._destroyed = True

    def _receive(self) -> None:
        """The reply port's reaction: complete this client's futures."""
        for key, seq, response in self._replies.value:
            if key == self._key:
                self._complete(seq, response)

    def _complete(self, sequence: int, response: Any) -> None:
        future = self._pending.pop(sequence, None)
        if future is not None and not future.cancelled():
            future.set_result(response)
