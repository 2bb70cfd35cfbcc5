"""The managed node's state machine, as rcl_lifecycle's default one.

Four primary states (unconfigured, inactive, active, finalized), a
transitional state per transition (configuring, activating...) in which the
node's ``on_*`` callback runs, and errorprocessing, where ``on_error`` decides
between unconfigured and finalized. The ids and labels are lifecycle_msgs'
and rcl's, so a lifecycle manager, ``ros2 lifecycle`` or a node's own code
sees the same numbers as under rclpy.
"""

from __future__ import annotations

import enum

from hprm_bridge.rclpy.exceptions import RCLError


class TransitionCallbackReturn(enum.Enum):
    """What an ``on_*`` callback returns (rclpy's ``TransitionCallbackReturn``)."""

    SUCCESS = 97
    FAILURE = 98
    ERROR = 99

    def to_label(self) -> str:
        return "transition_" + self.name.lower()

    def __int__(self) -> int:
        return self.value


STATES = (
    (0, "unknown"), (1, "unconfigured"), (2, "inactive"), (3, "active"), (4, "finalized"),
    (10, "configuring"), (11, "cleaningup"), (12, "shuttingdown"), (13, "activating"),
    (14, "deactivating"), (15, "errorprocessing"),
)  # fmt: skip
_LABELS = dict(STATES)

# (transition id, label, start state id, goal state id): rcl_lifecycle's default graph.
_EDGES = (
    (1, "configure", 1, 10), (10, "transition_success", 10, 2),
    (11, "transition_failure", 10, 1), (12, "transition_error", 10, 15),
    (2, "cleanup", 2, 11), (20, "transition_success", 11, 1),
    (21, "transition_failure", 11, 2), (22, "transition_error", 11, 15),
    (3, "activate", 2, 13), (30, "transition_success", 13, 3),
    (31, "transition_failure", 13, 2), (32, "transition_error", 13, 15),
    (4, "deactivate", 3, 14), (40, "transition_success", 14, 2),
    (41, "transition_failure", 14, 3), (42, "transition_error", 14, 15),
    (5, "shutdown", 1, 12), (6, "shutdown", 2, 12), (7, "shutdown", 3, 12),
    (50, "transition_success", 12, 4), (51, "transition_failure", 12, 4),
    (52, "transition_error", 12, 15),
    (60, "transition_success", 15, 1), (61, "transition_failure", 15, 4),
    (62, "transition_error", 15, 4),
)  # fmt: skip

# (id, label, start id, start label, goal id, goal label), as rclpy's state machine lists them
Description = tuple[int, str, int, str, int, str]
GRAPH: tuple[Description, ...] = tuple(
    (t, label, a, _LABELS[a], b, _LABELS[b]) for t, label, a, b in _EDGES
)


class StateMachine:
    """One node's state and the transitions it may take from there."""

    def __init__(self) -> None:
        self.current_state: tuple[int, str] = (1, "unconfigured")

    @property
    def available_transitions(self) -> list[Description]:
        return [d for d in GRAPH if d[2] == self.current_state[0]]

    def get_transition_by_label(self, label: str) -> int:
        for d in self.available_transitions:
            if d[1] == label:
                return d[0]
        raise RCLError(f"no transition labelled {label!r} from state {self.current_state[1]}")

    def trigger(self, transition_id: int) -> Description:
        """Take the transition; the description of the step taken. A transition the
        current state does not have raises, as rcl's ``Transition is not registered``."""
        for d in self.available_transitions:
            if d[0] == transition_id:
                self.current_state = (d[4], d[5])
                return d
        raise RCLError(
            f"Failed to trigger lifecycle state machine transition {transition_id}: "
            f"Transition is not registered from state {self.current_state[1]}"
        )
