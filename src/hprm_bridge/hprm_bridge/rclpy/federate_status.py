"""A ported node's ``/hprm/federate_status``: where its federate stands, for ROS 2 tools.

``ros2 topic echo /hprm/federate_status`` (with hprm_msgs built) shows, for every
ported node behind the gateway, its federation, its federate name, its state and
the latest tag it completed: which node is lagging, which has finished. A node
with node services reports through an ordinary port, so the report costs one
small message, not one per tag:

- ``RUNNING`` at its first tag, then at the first tag at least
  :data:`PERIOD_NS` of logical time after the previous report (logical time, so
  a replay reports at the same tags);
- ``FINISHED`` at its shutdown tag.

A federate that fails cannot report itself; the RTI tells the others, which
stop (their ``FINISHED`` follows), and ``hprm-ros run`` names it.
"""

from __future__ import annotations

from typing import Any

from hprm_bridge import messages
from hprm_core.tag import NEVER, Tag

TOPIC = "/hprm/federate_status"
MSG_TYPE = "hprm_msgs/msg/FederateStatus"
PERIOD_NS = 1_000_000_000


class StatusReport:
    """One federate's reports: the message due at each tag it processes, if any."""

    def __init__(self, federation: str, federate: str) -> None:
        self.federation = federation
        self.federate = federate
        self._completed = NEVER  # the tag processed before the current one
        self._current = NEVER
        self._last_report: int | None = None

    def at(self, tag: Tag) -> Any | None:
        """Called at every tag the node processes; a RUNNING report when due."""
        if tag != self._current:
            self._completed, self._current = self._current, tag
        if self._last_report is not None and tag.time - self._last_report < PERIOD_NS:
            return None
        self._last_report = tag.time
        return self._message(1)  # RUNNING

    def finished(self, tag: Tag) -> Any:
        """The FINISHED report, at the shutdown tag."""
        if tag != self._current:
            self._completed, self._current = self._current, tag
        return self._message(2)  # FINISHED

    def _message(self, state: int) -> Any:
        tag_msg = messages.message_class("hprm_msgs/msg/Tag")(
            time=self._completed.time, microstep=self._completed.microstep
        )
        return messages.message_class(MSG_TYPE)(
            federation=self.federation, federate=self.federate, state=state, completed=tag_msg
        )
