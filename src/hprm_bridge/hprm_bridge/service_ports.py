"""How a ROS 2 service between ported nodes becomes two tagged ports.

A service ``/add_two_ints`` is two topics of the federation, as DDS makes
it two topics (``rq/...Request``, ``rr/...Reply``): the clients' requests go
out on :func:`request_topic` and into the server, its replies on
:func:`reply_topic` to every client, each keeping its own. The RTI connects
them as any topic, so a call is deterministic the way a message is:

- a request sent at tag ``t`` is answered at ``t``, one microstep later per
  hop (client and server feed each other, a loop that ``hprm-ros run``
  breaks with a microstep per connection): the reply reaches the client at
  the same logical time, two microsteps on;
- the requests of several clients at one tag reach the server in the order
  of the clients' federate ids (:mod:`hprm_core.fan_in`), never in arrival
  order.

Values on the ports: a request is ``(client, sequence_number, request)``,
a reply ``(client, sequence_number, response)``; ``client`` names the
calling client (its node and its index in the node) as rmw's client GUID
does, so a client takes only the replies to its own calls. Both ports carry
the service type (``pkg/srv/Name``) as their message type: a client and a
server that disagree on it are refused before the start, naming both.
"""

from __future__ import annotations

_PREFIX = "/_hprm/services"


def request_topic(service: str) -> str:
    """The port topic of calls to ``service`` (its full name, ``/ns/name``)."""
    return f"{_PREFIX}{service}/request"


def reply_topic(service: str) -> str:
    return f"{_PREFIX}{service}/reply"


def service_of(topic: str) -> str | None:
    """The service whose request or reply topic this is, or None for any other."""
    if not topic.startswith(_PREFIX + "/"):
        return None
    for end in ("/request", "/reply"):
        if topic.endswith(end):
            return topic[len(_PREFIX) : -len(end)]
    return None
