"""A ported node's answers to ros2 param (hprm_bridge.rclpy.parameter_service),
without ROS: what the node answers, encoded as the gateway sends it. Humble's
own ros2 param against a running node: test_gateway.py (ros2-marked)."""

from types import SimpleNamespace

import pytest

from hprm_bridge import messages, parameter_services
from hprm_bridge.rclpy.node_parameters import NodeParameters
from hprm_bridge.rclpy.parameter import Parameter
from hprm_bridge.rclpy.parameter_service import answer
from hprm_bridge.wire.service import envelope_types
from hprm_bridge.wire.typesys import default_registry


@pytest.fixture
def params():
    p = NodeParameters("tuner", {})
    for name, value in [("gain", 3), ("ids", [1, 2, 3]), ("names", ["a", "b"]), ("fixed", True),
                        ("pid.kp", 0.5), ("pid.inner.ki", 0.1)]:  # fmt: skip
        descriptor = None
        if name == "fixed":
            descriptor = _descriptor(read_only=True)
        p.declare("", [(name, value, descriptor or _descriptor())], False)
    return p


def _descriptor(**fields):
    return messages.message_class("rcl_interfaces/msg/ParameterDescriptor")(**fields)


def _sent(service, fields):
    """The response as the gateway encodes it (and ros2 param decodes it)."""
    types = default_registry()
    srv = messages.service_class(parameter_services.srv_type(service))
    request, response = (
        types.msg_definition(half._hprm_type) for half in (srv.Request, srv.Response)
    )
    _, resp_type = envelope_types(types, parameter_services.srv_type(service), request, response)
    msg = types.new(resp_type, client_guid=1, sequence_number=2, **fields)
    return types.decode(types.encode(msg, resp_type), resp_type)


def test_get_returns_values_and_nothing_when_a_name_is_undeclared(params):
    """Humble's ParameterService: one undeclared name and the answer is an empty list."""
    fields = answer(params, "get_parameters", SimpleNamespace(names=["gain", "ids"]))
    back = _sent("get_parameters", fields).values
    assert [v.type for v in back] == [2, 7]
    assert back[0].integer_value == 3 and list(back[1].integer_array_value) == [1, 2, 3]
    types = answer(params, "get_parameter_types", SimpleNamespace(names=["names", "gain"]))
    assert list(_sent("get_parameter_types", types).types) == [9, 2]
    for service in ("get_parameters", "get_parameter_types", "describe_parameters"):
        undeclared = answer(params, service, SimpleNamespace(names=["gain", "nope"]))
        assert list(undeclared.values()) == [[]], service


def test_set_goes_through_the_same_checks_as_node_set_parameters(params):
    value = messages.message_class("rcl_interfaces/msg/ParameterValue")
    param = messages.message_class("rcl_interfaces/msg/Parameter")
    calls = SimpleNamespace(parameters=[
        param(name="gain", value=value(type=2, integer_value=7)),
        param(name="fixed", value=value(type=1, bool_value=False)),
        param(name="nope", value=value(type=2, integer_value=1)),
        param(name="gain", value=value(type=4, string_value="seven")),
    ])  # fmt: skip
    results = _sent("set_parameters", answer(params, "set_parameters", calls)).results
    assert [r.successful for r in results] == [True, False, False, False]
    assert "read-only" in results[1].reason and "not declared" in results[2].reason
    assert params.values["gain"].value == 7
    atomic = answer(
        params, "set_parameters_atomically", SimpleNamespace(parameters=calls.parameters)
    )
    assert not _sent("set_parameters_atomically", atomic).result.successful
    assert params.values["gain"].value == 7  # all or none


def test_list_filters_by_prefix_and_depth_as_rclpy(params):
    def listed(prefixes, depth):
        r = answer(params, "list_parameters", SimpleNamespace(prefixes=prefixes, depth=depth))
        result = _sent("list_parameters", r).result
        return list(result.names), list(result.prefixes)

    # in the order the node declared them, as rclpy lists them (ros2 param list sorts)
    names, prefixes = listed([], 0)
    assert names == ["gain", "ids", "names", "fixed", "pid.kp", "pid.inner.ki"]
    assert prefixes == ["pid", "pid.inner"]
    assert listed([], 1) == (["gain", "ids", "names", "fixed"], [])
    assert listed([], 2) == (["gain", "ids", "names", "fixed", "pid.kp"], ["pid"])
    assert listed(["pid"], 0) == (["pid.kp", "pid.inner.ki"], ["pid", "pid.inner"])


def test_a_node_that_allows_undeclared_parameters_answers_for_any_name():
    """Node(allow_undeclared_parameters=True): ros2 param get of any name answers (NOT_SET
    where undeclared), and a set declares the parameter, dynamically typed."""
    p = NodeParameters("open", {}, allow_undeclared=True)
    p.declare("", [("gain", 3, _descriptor())], False)
    names = SimpleNamespace(names=["gain", "nope"])
    assert [v.type for v in _sent("get_parameters", answer(p, "get_parameters", names)).values] == [
        2, 0]  # fmt: skip
    assert list(_sent("get_parameter_types", answer(p, "get_parameter_types", names)).types) == [
        2, 0]  # fmt: skip
    described = _sent("describe_parameters", answer(p, "describe_parameters", names)).descriptors
    assert [(d.name, d.type) for d in described] == [("gain", 2), ("", 0)]
    value = messages.message_class("rcl_interfaces/msg/ParameterValue")
    param = messages.message_class("rcl_interfaces/msg/Parameter")
    calls = SimpleNamespace(parameters=[param(name="nope", value=value(type=4, string_value="x"))])
    assert [r.successful for r in answer(p, "set_parameters", calls)["results"]] == [True]
    assert p.values["nope"].value == "x" and p.descriptors["nope"].dynamic_typing
    # a statically typed parameter without a value reads as nothing, as an undeclared one
    p.declare("", [("typed", Parameter.Type.INTEGER)], False)
    assert answer(p, "get_parameters", SimpleNamespace(names=["gain", "typed"])) == {"values": []}


@pytest.mark.parametrize("value", [True, 5, 2.5, "s", [True, False], [1, 2], [0.5], ["x", "y"],
                                   [b"\x01", b"\x02"], b"\x01\x02"])  # fmt: skip
def test_values_round_trip_through_parameter_messages(value):
    p = Parameter("p", value=value)
    back = Parameter.from_parameter_msg(p.to_parameter_msg())
    assert back.type_ == p.type_
    if isinstance(value, bytes):  # HPRM takes bytes; it comes back as rclpy's 1-byte list
        assert back.value == [b"\x01", b"\x02"]
    elif isinstance(value, list) and isinstance(value[0], (int, float)) and value[0] is not True:
        assert type(back.value).__name__ == "array" and list(back.value) == value  # as rclpy
    else:
        assert back.value == value


def test_a_parameter_refuses_a_value_of_another_type():
    with pytest.raises(ValueError, match="not a value of type DOUBLE"):
        Parameter("rate", Parameter.Type.DOUBLE, 1)
    with pytest.raises(ValueError, match="not a value of type INTEGER"):
        Parameter("count", Parameter.Type.INTEGER, True)
    with pytest.raises(TypeError, match="not a parameter value"):
        Parameter("mixed", value=[1, "a"])
    assert Parameter("ids", Parameter.Type.INTEGER_ARRAY, [1, 2]).value == [1, 2]


def test_parameter_events_tell_new_from_changed_and_deleted():
    """What /parameter_events carries (rclpy's rule): a parameter is new when it had no
    value before (a declaration, a first set of one declared with only a type, an
    undeclared one set where allowed), changed otherwise; a NOT_SET value deletes it."""
    p = NodeParameters("open", {}, allow_undeclared=True)
    events = []
    p.on_change = lambda new, changed, deleted: events.append(
        tuple([q.name for q in group] for group in (new, changed, deleted))
    )
    p.declare("", [("gain", 3, _descriptor()), ("typed", Parameter.Type.INTEGER)], False)
    p.set_each([Parameter("gain", value=4), Parameter("typed", value=1)])
    p.set_atomically([Parameter("fresh", value="x"), Parameter("gain", value=5)])
    p.set_each([Parameter("fresh")])
    assert events == [
        (["gain"], [], []), (["typed"], [], []), ([], ["gain"], []), (["typed"], [], []),
        (["fresh"], ["gain"], []), ([], [], ["fresh"]),
    ]  # fmt: skip
