"""A plain rclpy node that manages /lc_talker (lifecycle_talker.py, unscripted)
through its lifecycle services, one call after another's answer: its state,
deactivate by id, activate by label, a configure its state does not have (refused;
by label: rclpy's service raises out of its executor on an id it lacks),
the transitions it has then, the size of its transition graph. Prints each answer,
the same under rclpy and ported."""

import contextlib

import rclpy
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetAvailableTransitions, GetState
from rclpy.node import Node


class Manager(Node):
    def __init__(self):
        super().__init__("lc_manager")
        self.get_state = self.create_client(GetState, "/lc_talker/get_state")
        self.change = self.create_client(ChangeState, "/lc_talker/change_state")
        self.available = self.create_client(
            GetAvailableTransitions, "/lc_talker/get_available_transitions"
        )
        self.graph = self.create_client(GetAvailableTransitions, "/lc_talker/get_transition_graph")
        self.steps = [
            (self.get_state, GetState.Request(), lambda r: f"STATE {r.current_state.label}"),
            (self.change, self._change(id=Transition.TRANSITION_DEACTIVATE), self._changed),
            (self.get_state, GetState.Request(), lambda r: f"STATE {r.current_state.label}"),
            (self.change, self._change(label="activate"), self._changed),
            (self.change, self._change(label="configure"), self._changed),
            (self.available, GetAvailableTransitions.Request(),
             lambda r: "AVAILABLE " + " ".join(t.transition.label
                                               for t in r.available_transitions)),
            (self.graph, GetAvailableTransitions.Request(),
             lambda r: f"GRAPH {len(r.available_transitions)}"),
        ]  # fmt: skip
        self.timer = self.create_timer(0.2, self.start)

    @staticmethod
    def _change(**transition):
        return ChangeState.Request(transition=Transition(**transition))

    @staticmethod
    def _changed(response):
        return f"CHANGED {response.success}"

    def start(self):
        if all(c.service_is_ready() for c in (self.get_state, self.change, self.available,
                                               self.graph)):  # fmt: skip
            self.timer.cancel()
            self.next()

    def next(self, future=None):
        if future is not None:
            print(self.steps.pop(0)[2](future.result()), flush=True)
        if not self.steps:
            print("STOP", flush=True)
            rclpy.shutdown()
            return
        client, request, _ = self.steps[0]
        client.call_async(request).add_done_callback(self.next)


def main():
    rclpy.init()
    with contextlib.suppress(KeyboardInterrupt):
        rclpy.spin(Manager())


if __name__ == "__main__":
    main()
