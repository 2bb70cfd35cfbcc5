"""A node's services and clients (``create_service``, ``create_client``), a mixin of
:class:`hprm_bridge.rclpy.node.Node`.

Each is a pair of ports named by the service (:mod:`hprm_bridge.service_ports`): a
service reads requests and publishes replies, a client the other way round, so the RTI
connects a client to the services of its name as it connects topics, and a call is
answered at the tag it arrives, the same in every run. A service's ports are offered
to the gateway too (``boundary``): with ``--bridge`` plain ROS 2 may call it. An
entity made after the start takes the place and ports of a destroyed one
(:mod:`hprm_bridge.rclpy.late_entities`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hprm_bridge import messages, service_ports
from hprm_bridge.rclpy import late_entities, parameter_calls
from hprm_bridge.rclpy.callback_groups import CallbackGroup
from hprm_bridge.rclpy.client import Client
from hprm_bridge.rclpy.service import Handler, Service
from hprm_bridge.wire.naming import InvalidNameError
from hprm_core import Input
from hprm_core.errors import AssemblyError

_ACTION_SERVICES = ("_SendGoal", "_GetResult")  # an action's services (pkg/action/Name_...)


class NodeServiceMethods:
    """``Node``'s services and clients (it provides ``_publisher``, ``_reactor``,
    ``_graph``, ``_in_group``, ``_finalized``, ``resolve_service_name``)."""

    _publisher: Any
    _reactor: Any
    _graph: Any
    _in_group: Any
    _finalized: bool
    _unique_name: Any
    resolve_service_name: Any
    services: list[Service]
    clients: list[Client]

    def create_service(
        self, srv_type: Any, srv_name: str, callback: Callable[[Any, Any], Any], *,
        callback_group: CallbackGroup | None = None, **kw: Any,
    ) -> Service:  # fmt: skip
        return self._in_group(self._serve(srv_type, srv_name, callback), callback_group)

    def _serve(
        self, srv_type: Any, srv_name: str, callback: Callable[[Any, Any], Any] | None,
        handler: Handler | None = None,
    ) -> Service:  # fmt: skip
        """A service answered by ``callback`` as rclpy calls it, or by ``handler``, which
        answers each call through ``Service._reply``, then or at a later tag."""
        name, cls = self.resolve_service_name(srv_name), self._service_class(srv_type)
        if self._finalized:  # in the place of a destroyed one
            i = late_entities.place(self.services, "create_service", name, cls)
            old = self.services[i]
            service = Service(cls, name, callback, old._requests, old._replies, handler)
            self.services[i] = service
            return service
        # boundary: with --bridge, plain ROS 2 may call it too, beside the ported callers
        requests = Input(topic=service_ports.request_topic(name), msg_type=cls._hprm_type,
                         boundary=True)  # fmt: skip
        index = len(self.services)
        self._reactor.attach(f"srv{index}_request", requests)
        replies = self._publisher(service_ports.reply_topic(name), cls._hprm_type,
                                  f"srv{index}_reply", boundary=True)  # fmt: skip
        service = Service(cls, name, callback, requests, replies, handler)
        self._graph.add("srv", name, cls._hprm_type)
        self.services.append(service)
        return service

    def create_client(
        self, srv_type: Any, srv_name: str, *, callback_group: CallbackGroup | None = None,
        **kw: Any,
    ) -> Client:  # fmt: skip
        return self._in_group(self._client(srv_type, srv_name), callback_group)

    def _client(self, srv_type: Any, srv_name: str) -> Client:
        name, cls = self.resolve_service_name(srv_name), self._service_class(srv_type)
        if self._finalized:  # in the place of a destroyed one
            i = late_entities.place(self.clients, "create_client", name, cls)
            old = self.clients[i]
            client = self.clients[i] = Client(cls, name, old._key, old._requests, old._replies)
            client._served, client._route, client._via_route = (old._served, old._route,
                                                                 old._via_route)  # fmt: skip
            return client
        index = len(self.clients)
        requests = self._publisher(service_ports.request_topic(name), cls._hprm_type,
                                   f"client{index}_request")  # fmt: skip
        replies = Input(topic=service_ports.reply_topic(name), msg_type=cls._hprm_type)
        self._reactor.attach(f"client{index}_reply", replies)
        client = Client(cls, name, f"{self._unique_name()}#{index}", requests, replies)
        client._route = parameter_calls.route(self, cls, name, index)
        self._graph.add("cli", name, cls._hprm_type)
        self.clients.append(client)
        return client

    @staticmethod
    def _service_class(srv_type: Any) -> Any:
        """HPRM's class of the service (rclpy's generated one, when the node imported
        that, names the same type): its Request and Response cross between federates."""
        try:
            name = messages.ros_type_name(srv_type)
        except (AssemblyError, InvalidNameError):
            name = repr(srv_type)
        if "/srv/" not in name and not name.endswith(_ACTION_SERVICES):
            raise TypeError(f"{name} is not a service type (pkg/srv/Name)")
        return messages.service_class(name)
