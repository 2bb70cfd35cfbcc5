"""A plain rclpy node that calls another node's parameter services (/tuner, tuner.py),
one call after another's answer: lists its parameters, reads them, sets some (one out
of its range, one its callback refuses, one read-only, one it takes), reads again,
describes one, asks their types, sets two at once. Prints each answer, the same under
rclpy and ported."""

import contextlib

import rclpy
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import (
    DescribeParameters,
    GetParameters,
    GetParameterTypes,
    ListParameters,
    SetParameters,
    SetParametersAtomically,
)
from rclpy.node import Node

TYPES = {ParameterType.PARAMETER_INTEGER: "integer_value", ParameterType.PARAMETER_DOUBLE:
         "double_value", ParameterType.PARAMETER_STRING: "string_value"}  # fmt: skip


def _param(name, **value):
    return Parameter(name=name, value=ParameterValue(**value))


def _int(name, v):
    return _param(name, type=ParameterType.PARAMETER_INTEGER, integer_value=v)


def _values(response):
    return " ".join(str(getattr(v, TYPES[v.type])) if v.type in TYPES else "NOT_SET"
                    for v in response.values)  # fmt: skip


def _results(results):
    return " | ".join(f"{r.successful} {r.reason}" for r in results)


class Peer(Node):
    def __init__(self):
        super().__init__("param_peer")
        call = {srv: self.create_client(srv, f"/tuner/{name}") for srv, name in (
            (ListParameters, "list_parameters"), (GetParameters, "get_parameters"),
            (SetParameters, "set_parameters"), (DescribeParameters, "describe_parameters"),
            (GetParameterTypes, "get_parameter_types"),
            (SetParametersAtomically, "set_parameters_atomically"))}  # fmt: skip
        self.clients_ = list(call.values())
        string = ParameterType.PARAMETER_STRING
        self.steps = [
            (call[ListParameters], ListParameters.Request(),
             lambda r: "LIST " + " ".join(sorted(r.result.names))),
            (call[GetParameters], GetParameters.Request(names=["gain", "label", "nope"]),
             lambda r: f"GET {_values(r)}"),
            (call[SetParameters], SetParameters.Request(parameters=[
                _int("gain", 42), _param("label", type=string, string_value="forbidden"),
                _int("fixed", 2), _int("gain", 7)]), lambda r: f"SET {_results(r.results)}"),
            (call[GetParameters], GetParameters.Request(names=["gain", "label"]),
             lambda r: f"GET {_values(r)}"),
            (call[DescribeParameters], DescribeParameters.Request(names=["gain", "fixed"]),
             lambda r: "DESCRIBE " + " ".join(
                 f"{d.name}:{d.read_only}:{[x.to_value for x in d.integer_range]}"
                 for d in r.descriptors)),
            (call[GetParameterTypes], GetParameterTypes.Request(names=["gain", "pid.kp", "x"]),
             lambda r: f"TYPES {list(r.types)}"),
            (call[SetParametersAtomically], SetParametersAtomically.Request(parameters=[
                _param("label", type=string, string_value="rear"),
                _param("pid.kp", type=ParameterType.PARAMETER_DOUBLE, double_value=1.5)]),
             lambda r: f"ATOMIC {_results([r.result])}"),
            (call[GetParameters], GetParameters.Request(names=["label", "pid.kp"]),
             lambda r: f"GET {_values(r)}"),
        ]  # fmt: skip
        self.timer = self.create_timer(0.2, self.start)

    def start(self):
        if all(c.service_is_ready() for c in self.clients_):
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
        rclpy.spin(Peer())


if __name__ == "__main__":
    main()
