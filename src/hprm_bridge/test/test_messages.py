"""rclpy-style message classes without ROS 2 (hprm_bridge.messages), and,
where a real Humble is sourced, the same answers as rclpy's classes."""

import array
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from hprm_bridge import messages
from hprm_bridge.wire import default_registry

COMPARED = [
    "example_interfaces/srv/AddTwoInts_Request",  # a service's halves: Name.Request in rclpy
    "std_srvs/srv/SetBool_Response",
    "rcl_interfaces/srv/GetParameters_Response",
    "std_msgs/msg/String",
    "std_msgs/msg/Header",
    "std_msgs/msg/Char",
    "std_msgs/msg/Byte",
    "std_msgs/msg/ByteMultiArray",
    "sensor_msgs/msg/Image",
    "sensor_msgs/msg/Imu",
    "sensor_msgs/msg/CameraInfo",
    "sensor_msgs/msg/LaserScan",
    "sensor_msgs/msg/PointCloud2",
    "geometry_msgs/msg/Twist",
    "geometry_msgs/msg/Quaternion",  # w's default is 1 (its definition's)
    "geometry_msgs/msg/Pose",
    "geometry_msgs/msg/TransformStamped",
    "rcl_interfaces/msg/ParameterDescriptor",
    "rcl_interfaces/msg/ParameterType",  # empty: no fields in Python (DDS has one)
    "std_msgs/msg/Empty",
    "builtin_interfaces/msg/Time",
]


def test_default_and_keyword_construction_with_nested_messages_of_the_same_kind():
    Image = messages.message_class("sensor_msgs/msg/Image")
    Header = messages.message_class("std_msgs/msg/Header")
    img = Image(height=480, width=640, encoding="rgb8")
    assert (img.height, img.width, img.encoding, img.step) == (480, 640, "rgb8", 0)
    assert type(img.header) is Header and img.header.frame_id == ""
    assert isinstance(img.data, array.array) and img.data.typecode == "B" and len(img.data) == 0
    img.data = np.arange(12, dtype=np.uint8)  # assignment, as node code does
    img.header.frame_id = "camera"
    assert img.data[-1] == 11 and img.header.frame_id == "camera"
    assert Image.__module__ == "sensor_msgs.msg" and Image.__qualname__ == "Image"
    # each message its own sub-messages, sequences and fixed-size arrays
    a, b = Image(), Image()
    a.header.stamp.sec = 5
    a.data.append(7)
    assert b.header.stamp.sec == 0 and a.header is not b.header
    assert len(b.data) == 0 and a.data.tolist() == [7]
    Imu = messages.message_class("sensor_msgs/msg/Imu")
    x, y = Imu(), Imu()
    x.orientation_covariance[0] = -1.0  # rclpy's way of saying "no orientation"
    assert y.orientation_covariance[0] == 0.0


def test_fields_start_at_their_definitions_defaults():
    """As rosidl makes them: a Pose() is the identity (its quaternion's w is 1), and a
    definition's own defaults (numbers, strings, arrays) start each message, fresh."""
    Pose = messages.message_class("geometry_msgs/msg/Pose")
    assert Pose().orientation.w == 1.0 and Pose().orientation.x == 0.0
    Empty = messages.message_class("std_msgs/msg/Empty")
    assert repr(Empty()) == "std_msgs.msg.Empty()" and Empty.get_fields_and_field_types() == {}
    reg = default_registry()
    definition = ('float64 gain 1.5\nstring mode "auto"  # or manual\nint32[] ids [1, 2]\n'
                  "bool on true\nfloat64[2] v [0.5, 1]\nint32 LIMIT=3\n")  # fmt: skip
    reg.define("demo_msgs/msg/Tuned", definition)
    Tuned = messages.message_class("demo_msgs/msg/Tuned", reg)
    a, b = Tuned(), Tuned(gain=2.0)
    assert (a.gain, a.mode, a.ids.tolist(), a.on, a.v.tolist()) == (1.5, "auto", [1, 2], True,
                                                                    [0.5, 1.0])  # fmt: skip
    a.ids.append(3)
    assert b.gain == 2.0 and b.ids.tolist() == [1, 2]  # each message its own
    back = reg.decode(bytes(reg.encode(a, "demo_msgs/msg/Tuned")), "demo_msgs/msg/Tuned")
    assert back.ids.tolist() == [1, 2, 3] and back.mode == "auto"


def test_an_unknown_field_is_refused_as_rclpy_does():
    String = messages.message_class("std_msgs/msg/String")
    with pytest.raises(AssertionError, match="Invalid arguments passed to constructor: foo"):
        String(data="x", foo=1)


def test_equality_compares_arrays_by_value_and_repr_reads_like_rclpy():
    Image = messages.message_class("sensor_msgs/msg/Image")
    a = Image(height=2, data=np.zeros(6, np.uint8))
    assert a == Image(height=2, data=np.zeros(6, np.uint8))
    assert a != Image(height=2, data=np.ones(6, np.uint8))
    assert a != Image(height=3, data=np.zeros(6, np.uint8))
    String = messages.message_class("std_msgs/msg/String")
    assert repr(String(data="hi")) == "std_msgs.msg.String(data='hi')"


def test_messages_pickle_by_name_and_encode_as_cdr():
    Image = messages.message_class("sensor_msgs/msg/Image")
    img = Image(height=2, width=3, encoding="mono8", step=3, data=np.arange(6, dtype=np.uint8))
    assert pickle.loads(pickle.dumps(img)) == img
    reg = default_registry()
    back = reg.decode(reg.encode(img, "sensor_msgs/msg/Image"), "sensor_msgs/msg/Image")
    assert (back.height, back.encoding, back.data.tolist()) == (2, "mono8", list(range(6)))


def test_field_types_use_rclpy_names():
    types = messages.message_class("sensor_msgs/msg/CameraInfo").get_fields_and_field_types()
    assert types["d"] == "sequence<double>" and types["k"] == "double[9]"
    assert types["roi"] == "sensor_msgs/RegionOfInterest"
    assert messages.message_class("std_msgs/msg/Byte").get_fields_and_field_types() == {
        "data": "octet"
    }


def test_imports_resolve_to_these_classes_once_installed_even_with_ros_sourced():
    """In a fresh interpreter (with whatever PYTHONPATH this one has: a sourced
    Humble's message packages come first there), the finder wins."""
    code = (
        "from hprm_bridge import messages; messages.install(); "
        "from sensor_msgs.msg import Image; import std_msgs.msg as m; "
        "print(Image.__module__, hasattr(Image, '__dataclass_fields__'), "
        "type(Image().header) is m.Header, 'Header' in m.__all__)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["sensor_msgs.msg", "True", "True", "True"]


def test_service_imports_give_request_and_response_classes_that_pickle():
    messages.install()
    try:
        from example_interfaces.srv import AddTwoInts
        from std_srvs import srv

        assert AddTwoInts is messages.service_class("example_interfaces/srv/AddTwoInts")
        assert "Trigger" in srv.__all__
        with pytest.raises(AttributeError, match=r"module 'std_srvs\.srv' has no service 'Nope'"):
            srv.Nope  # noqa: B018
    finally:
        messages.uninstall()
    request = AddTwoInts.Request(a=2, b=40)
    assert repr(request) == "example_interfaces.srv.AddTwoInts_Request(a=2, b=40)"
    assert pickle.loads(pickle.dumps(request)) == request
    with pytest.raises(AssertionError, match="Invalid arguments"):
        AddTwoInts.Response(total=1)


def test_uninstall_forgets_the_modules():
    messages.install()
    try:
        import std_msgs.msg as first

        assert first.String is messages.message_class("std_msgs/msg/String")
    finally:
        messages.uninstall()
    assert "std_msgs.msg" not in sys.modules or sys.modules["std_msgs.msg"] is not first


@pytest.mark.ros2
def test_field_types_and_default_reprs_match_real_rclpy():
    _need_rclpy()
    code = (
        "import importlib, json, sys\n"
        "out = {}\n"
        "for t in json.loads(sys.argv[1]):\n"
        "    pkg, kind, name = t.split('/')\n"
        "    module = importlib.import_module(pkg + '.' + kind)\n"
        "    srv, _, half = name.rpartition('_')\n"
        "    cls = getattr(module, name) if kind == 'msg' else "
        "getattr(getattr(module, srv), half)\n"
        "    out[t] = [cls.get_fields_and_field_types(), repr(cls())]\n"
        "print(json.dumps(out))\n"
    )
    env = dict(os.environ)
    r = subprocess.run(
        [sys.executable, "-c", code, json.dumps(COMPARED)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    real = json.loads(r.stdout)
    for t in COMPARED:
        ours = messages.message_class(t)
        assert ours.get_fields_and_field_types() == real[t][0], t
        if "array(" not in real[t][1]:  # (numpy's repr of fixed arrays is not compared)
            assert repr(ours()) == real[t][1], t


# (type, field, value as Python source): assignments rclpy accepts or refuses
ASSIGNMENTS = [
    ("geometry_msgs/msg/Vector3", "x", "1"),
    ("geometry_msgs/msg/Vector3", "x", "1.0"),
    ("geometry_msgs/msg/Vector3", "x", "True"),
    ("geometry_msgs/msg/Vector3", "x", "numpy.float32(1)"),
    ("sensor_msgs/msg/Image", "width", "1.5"),
    ("sensor_msgs/msg/Image", "width", "-1"),
    ("sensor_msgs/msg/Image", "width", "True"),
    ("sensor_msgs/msg/Image", "encoding", "b'rgb8'"),
    ("sensor_msgs/msg/Image", "data", "b'abc'"),
    ("sensor_msgs/msg/Image", "data", "[300]"),
    ("sensor_msgs/msg/Image", "data", "(1, 2)"),
    ("sensor_msgs/msg/Image", "data", "'abc'"),
    ("sensor_msgs/msg/Image", "data", "array.array('B', [7, 8])"),
    ("sensor_msgs/msg/Image", "data", "array.array('f', [7.0])"),
    ("sensor_msgs/msg/Image", "header", "3"),
    ("sensor_msgs/msg/Imu", "orientation_covariance", "[1.0] * 3"),
    ("sensor_msgs/msg/Imu", "orientation_covariance", "[1] * 9"),
    ("sensor_msgs/msg/Imu", "orientation_covariance", "[0.5] * 9"),
    ("sensor_msgs/msg/PointCloud2", "is_dense", "1"),
    ("sensor_msgs/msg/LaserScan", "ranges", "[1.0, 2.5]"),
]

_ASSIGN = (
    "import array, importlib, json, sys, numpy\n"
    "out = []\n"
    "for t, f, v in json.loads(sys.argv[1]):\n"
    "    pkg, _, name = t.split('/')\n"
    "    msg = getattr(importlib.import_module(pkg + '.msg'), name)()\n"
    "    try:\n"
    "        setattr(msg, f, eval(v))\n"
    "        out.append(['ok', numpy.asarray(getattr(msg, f)).tolist()])\n"
    "    except AssertionError as exc:\n"
    "        out.append(['refused', str(exc)[:60]])\n"
    "print(json.dumps(out))\n"
)


def _assign_all(env=None, hprm=False):
    prelude = "from hprm_bridge import messages; messages.install()\n" if hprm else ""
    r = subprocess.run(
        [sys.executable, "-c", prelude + _ASSIGN, json.dumps(ASSIGNMENTS)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_assignments_are_checked_as_rclpy_checks_them():
    ours = dict(
        zip((f"{t}.{f}={v}" for t, f, v in ASSIGNMENTS), _assign_all(hprm=True), strict=True)
    )
    assert ours["geometry_msgs/msg/Vector3.x=1"] == [
        "refused", "The 'x' field must be of type 'float'"]  # fmt: skip
    assert ours["sensor_msgs/msg/Image.width=-1"][1].startswith(
        "The 'width' field must be an unsigned integer in [0, 4294967295]"[:60]
    )
    assert ours["sensor_msgs/msg/Image.data=b'abc'"] == ["ok", [97, 98, 99]]
    assert ours["sensor_msgs/msg/Image.data=[300]"][0] == "refused"
    assert ours["sensor_msgs/msg/Imu.orientation_covariance=[1] * 9"][0] == "refused"
    assert ours["sensor_msgs/msg/LaserScan.ranges=[1.0, 2.5]"] == ["ok", [1.0, 2.5]]


def test_numeric_sequences_keep_the_array_given_without_a_copy():
    Image = messages.message_class("sensor_msgs/msg/Image")
    frame = np.arange(640 * 480 * 3, dtype=np.uint64).astype(np.uint8).reshape(480, 640, 3)
    raw = array.array("B", frame.tobytes())  # what a portable rclpy node assigns
    msg = Image(data=raw)
    assert msg.data is raw  # as in rclpy
    msg.data = frame  # a numpy array too (rclpy refuses it): flattened, not copied
    assert msg.data.shape == (frame.size,) and np.shares_memory(msg.data, frame)


def test_numeric_sequences_grow_in_place_as_rclpy_arrays_do():
    """The action tutorial's feedback: ``partial_sequence = [0, 1]`` then ``.append``."""
    Feedback = messages.action_class("example_interfaces/action/Fibonacci").Feedback
    fb = Feedback()
    fb.sequence = [0, 1]
    for i in range(1, 5):
        fb.sequence.append(fb.sequence[i] + fb.sequence[i - 1])
    assert fb.sequence.tolist() == [0, 1, 1, 2, 3, 5]
    JointState = messages.message_class("sensor_msgs/msg/JointState")
    js = JointState(position=[1.0])
    js.position.extend([2.0, 3.0])
    js.velocity.frombytes(array.array("d", [4.0]).tobytes())  # as cv_bridge fills an Image
    js.effort += array.array("d", [5.0])
    assert (js.position.tolist(), js.velocity.tolist(), js.effort.tolist()) == (
        [1.0, 2.0, 3.0], [4.0], [5.0])  # fmt: skip
    assert repr(js).endswith("position=[1.0, 2.0, 3.0], velocity=[4.0], effort=[5.0])")
    with pytest.raises(OverflowError):  # array.array's own check, as under rclpy
        messages.message_class("sensor_msgs/msg/Image")().data.append(300)


def test_sequences_cross_pickle_and_cdr_as_arrays_whoever_made_them():
    JointState = messages.message_class("sensor_msgs/msg/JointState")
    js = JointState(name=["a", "b"], position=[1.0, 2.0])
    js.velocity = array.array("d", [3.0, 4.0])  # a plain array.array, kept as it is
    js.effort = np.array([5.0, 6.0])  # numpy, kept as it is
    back = pickle.loads(pickle.dumps(js, protocol=5))
    assert back == js
    for f in ("position", "velocity", "effort"):  # small: the receiver's own array.array
        assert isinstance(getattr(back, f), array.array), f
    back.position.append(9.0)
    assert js.position.tolist() == [1.0, 2.0]
    reg = default_registry()
    raw = bytes(reg.encode(js, "sensor_msgs/msg/JointState"))
    assert type(js.velocity) is array.array  # the encoder's numpy views left it as it was
    decoded = reg.decode(raw, "sensor_msgs/msg/JointState")
    assert decoded.velocity.tolist() == [3.0, 4.0] and decoded.effort.tolist() == [5.0, 6.0]


@pytest.mark.ros2
def test_assignments_are_accepted_and_refused_exactly_as_by_real_rclpy():
    _need_rclpy()
    real = _assign_all()
    ours = _assign_all(hprm=True)
    for case, r, o in zip(ASSIGNMENTS, real, ours, strict=True):
        assert o == r, case


# What node code does with numeric sequences: the same lines under rclpy and under HPRM
_SEQUENCE_OPS = """
import array, json
from example_interfaces.action import Fibonacci
from sensor_msgs.msg import Image, JointState
out = []
fb = Fibonacci.Feedback()
fb.sequence = [0, 1]
for i in range(1, 6):
    fb.sequence.append(fb.sequence[i] + fb.sequence[i - 1])
out.append(repr(fb))
js = JointState(position=[1.5])
js.position.extend([2.5])
js.velocity += array.array("d", [3.0])
js.effort.insert(0, 4.0)
out.append(repr(js))
out.append([isinstance(getattr(js, f), array.array) for f in ("position", "velocity", "effort")])
out.append([js.position.typecode, js.position.pop(), len(js.position), js.position.tolist()])
img = Image()
img.data.frombytes(bytes(range(4)))
img.data.reverse()
out.append([repr(img), img.data.tobytes().hex(), list(img.data[1:3])])
a = array.array("d", [1.0])
js.velocity = a
a.append(2.0)
out.append([js.velocity is a, js.velocity.tolist()])
img.data = b"xyz"
img.data.append(1)
out.append(img.data.tolist())
for bad in ("img.data.append(256)", "js.position.append('x')", "img.data.append(-1)"):
    try:
        exec(bad)
        out.append([bad, "ok"])
    except Exception as exc:
        out.append([bad, type(exc).__name__, str(exc)])
print(json.dumps(out))
"""


def _need_rclpy() -> None:
    pytest.importorskip(
        "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
    )


def _same_under_real_rclpy(snippet: str) -> None:
    _need_rclpy()
    assert _printed(snippet, hprm=True) == _printed(snippet, hprm=False)


def _printed(snippet: str, hprm: bool) -> list:
    """The JSON ``snippet`` prints, run with HPRM's rclpy and messages, or (``hprm``
    False) with whatever ``import rclpy`` finds: a sourced Humble's."""
    prelude = "from hprm_bridge import porting; porting.install_imports()\n" if hprm else ""
    r = subprocess.run([sys.executable, "-c", prelude + snippet], capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_sequence_operations_of_node_code_work_on_these_classes():
    out = _printed(_SEQUENCE_OPS, hprm=True)
    assert out[0] == "example_interfaces.action.Fibonacci_Feedback(sequence=[0, 1, 1, 2, 3, 5, 8])"
    assert out[2] == [True, True, True] and out[3] == ["d", 2.5, 1, [1.5]]
    assert out[5] == [True, [1.0, 2.0]] and out[6] == [120, 121, 122, 1]
    assert [o[1] for o in out[7:]] == ["OverflowError", "TypeError", "OverflowError"]


@pytest.mark.ros2
def test_sequence_operations_give_what_real_rclpy_gives():
    _same_under_real_rclpy(_SEQUENCE_OPS)


# What code that walks messages does with rosidl_runtime_py (ROS 2's own, where installed)
_RUNTIME_PY = """
import json
from rosidl_runtime_py import (message_to_csv, message_to_ordereddict, message_to_yaml,
                               set_message_fields)
from rosidl_runtime_py.convert import get_message_slot_types
from rosidl_runtime_py.utilities import get_message
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import Image, Imu, JointState
out = [message_to_yaml(PoseStamped()), message_to_csv(JointState(name=['a'], position=[1.0]))]
for cls, values in ((JointState, {'name': ['a', 'b'], 'position': [1.0, 2.0],
                                  'header': {'frame_id': 'base'}}),
                    (Imu, {'orientation_covariance': [1.0] * 9}),
                    (Image, {'data': [1, 2, 3], 'encoding': 'mono8'}),
                    (PoseStamped, {'pose': {'position': {'x': 1.5}}})):
    msg = cls()
    set_message_fields(msg, values)
    out.append(json.dumps(message_to_ordereddict(msg)))
out.append([[k, type(v).__name__] for k, v in get_message_slot_types(Imu).items()])
out.append(repr(get_message('geometry_msgs/msg/Twist')()))
print(json.dumps(out))
"""


@pytest.mark.ros2
def test_rosidl_runtime_py_walks_and_fills_these_messages_as_rclpys():
    """message_to_yaml/csv/ordereddict and set_message_fields read __slots__ and
    SLOT_TYPES and rebuild sequences from their type: the same results as with rclpy."""
    pytest.importorskip("rosidl_runtime_py", reason="needs ROS 2's rosidl_runtime_py (source a "
                        "Humble install)")  # fmt: skip
    ours = _printed(_RUNTIME_PY, hprm=True)
    assert ours == _printed(_RUNTIME_PY, hprm=False)
    assert '"position": [1.0, 2.0]' in ours[2]


def test_a_numeric_sequence_is_built_anew_from_its_type():
    """type(msg.position)(items): a sequence of the field's type code (what code that
    fills a message from plain values does)."""
    js = messages.message_class("sensor_msgs/msg/JointState")(position=[1.0])
    again = type(js.position)([2.0, 3.0])
    assert again.typecode == "d" and again.tolist() == [2.0, 3.0]
    assert type(js.position)().tolist() == [] and "_position" in type(js).__slots__
    js._position = again  # rclpy's slot name reads and writes the field
    assert js.position.tolist() == [2.0, 3.0]
    assert pickle.loads(pickle.dumps(again)).tolist() == [2.0, 3.0]


# What node code does with byte fields (rclpy holds each byte as a 1-byte ``bytes``)
_BYTE_OPS = """
import json, pickle
from rclpy.serialization import deserialize_message, serialize_message
from std_msgs.msg import Byte, ByteMultiArray
out = [repr(Byte()), repr(ByteMultiArray().data), repr(Byte(data=b"\\x07"))]
for make in ("Byte(data=5)", "Byte(data=b'ab')", "Byte(data='a')",
             "ByteMultiArray(data=[1, 2])", "ByteMultiArray(data=b'12')"):
    try:
        eval(make)
        out.append([make, "ok"])
    except AssertionError as exc:
        out.append([make, str(exc)])
many = ByteMultiArray(data=[b"\\x01", b"\\xff", b"\\x80"])
for msg in (Byte(data=b"\\xff"), Byte(data=b"\\x7f"), many):
    cdr = serialize_message(msg)
    back = deserialize_message(cdr, type(msg))
    out.append([cdr.hex(), repr(back), back == msg, repr(pickle.loads(pickle.dumps(msg)))])
print(json.dumps(out))
"""


def test_byte_fields_hold_bytes_as_rclpys_do():
    """A ``byte`` field holds a 1-byte ``bytes`` (a list of them for many), checked as
    rclpy checks it; it crosses CDR (the codec's int8s and uint8 arrays) and pickle back
    as bytes."""
    out = _printed(_BYTE_OPS, hprm=True)
    assert out[:3] == ["std_msgs.msg.Byte(data=b'\\x00')", "[]", "std_msgs.msg.Byte(data=b'\\x07')"]
    one = "The 'data' field must be of type 'bytes' or 'ByteString' with length 1"
    many = "The 'data' field must be a set or sequence and each value of type 'bytes'"
    assert [o[1] for o in out[3:8]] == [one, one, one, many, many]
    assert out[8][:3] == ["00010000ff", "std_msgs.msg.Byte(data=b'\\xff')", True]
    assert out[10][0].endswith("03000000" + "01ff80") and out[10][2] is True
    assert out[10][1] == out[10][3] and "data=[b'\\x01', b'\\xff', b'\\x80']" in out[10][1]


@pytest.mark.ros2
def test_byte_fields_behave_as_real_rclpys():
    _same_under_real_rclpy(_BYTE_OPS)


# Copies and attribute typos, as node code meets them
_COPY_OPS = """
import copy, json
from geometry_msgs.msg import PoseStamped, Twist
from sensor_msgs.msg import JointState
out = []
p = PoseStamped()
p.header.frame_id = "map"
q = copy.deepcopy(p)
q.pose.position.x = 2.0
c = copy.copy(p)
c.pose.position.y = 3.0
out.append([p.pose.position.x, q.pose.position.x, q.header.frame_id, p == q])
out.append([p.pose.position.y, c == p, c is p, c.pose is p.pose])
js = JointState(name=["a"], position=[1.0])
js2 = copy.deepcopy(js)
js2.position.append(2.0)
js2.name.append("b")
out.append([list(js.position), list(js2.position), js.name, js2.name])
for typo in ("Twist().linear.X", "Twist().angualr"):
    target, _, attr = typo.rpartition(".")
    try:
        setattr(eval(target), attr, 1.0)
        out.append([typo, "set"])
    except AttributeError as exc:
        out.append([typo, str(exc)])
print(json.dumps(out))
"""


def test_copies_share_or_not_and_a_misspelt_field_is_refused_as_under_rclpy():
    """``copy.copy`` shares nested messages (it rebuilt them, as pickling does, before),
    ``copy.deepcopy`` does not; assigning a field the message lacks is rclpy's
    AttributeError (it made a new attribute nothing read)."""
    out = _printed(_COPY_OPS, hprm=True)
    assert out[0] == [0.0, 2.0, "map", False]
    assert out[1] == [3.0, True, False, True]
    assert out[2] == [[1.0], [1.0, 2.0], ["a"], ["a", "b"]]
    assert out[3] == ["Twist().linear.X", "'Vector3' object has no attribute 'X'"]
    assert out[4] == ["Twist().angualr", "'Twist' object has no attribute 'angualr'"]


@pytest.mark.ros2
def test_copies_and_misspelt_fields_behave_as_real_rclpys():
    _same_under_real_rclpy(_COPY_OPS)
