"""How messages cross between federates (hprm_bridge.message_pickle): flat, one rebuild
per message, arrays in band or out of band, and nothing lost for a message that does not
fit its class's layout. Real pickle, every message type the registry knows."""

import array
import copy
import pickle
import pickletools

import numpy as np
import pytest

from hprm_bridge import message_pickle, messages, pickle_extension
from hprm_bridge.wire import default_registry

# Humble's built-in types: the same list with or without a ROS 2 sourced
MESSAGE_TYPES = sorted(t for t in default_registry().store.fielddefs if "/msg/" in t)


def _filled(cls, depth=0):
    """A message of ``cls`` with every field set to something other than its default."""
    msg = cls()
    for i, (field, desc) in enumerate(cls._hprm_fields):
        value = getattr(msg, field)
        if hasattr(type(value), "_hprm_type") and depth < 4:
            setattr(msg, field, _filled(type(value), depth + 1))
        elif isinstance(value, np.ndarray):
            n = value.shape[0] if int(desc[0]) == 3 else 3  # fixed arrays keep their length
            new = (np.arange(n) % 2).astype(value.dtype)
            setattr(msg, field, new)
        elif isinstance(value, bool):
            setattr(msg, field, not value)
        elif isinstance(value, int):
            setattr(msg, field, 1 + i)
        elif isinstance(value, float):
            setattr(msg, field, 0.5 + i)
        elif isinstance(value, str):
            setattr(msg, field, f"v{i}")
    return msg


@pytest.mark.parametrize("ros_type", MESSAGE_TYPES)
def test_every_message_type_comes_back_equal_and_of_its_classes(ros_type):
    cls = messages.message_class(ros_type)
    for msg in (cls(), _filled(cls)):
        for protocol in (2, 5):
            data = pickle.dumps(msg, protocol=protocol)
            assert b"_rebuild_fields" not in data  # the generated layout fits every type
            back = pickle.loads(data)
            assert back == msg and type(back) is cls
            assert back.__dict__.keys() == msg.__dict__.keys()
        assert copy.deepcopy(msg) == msg


def _rebuilds(data: bytes) -> int:
    """How many rebuild calls a pickle makes (the function travels as its extension code)."""
    ops = [(op.name, arg) for op, arg, _ in pickletools.genops(data)]
    assert not any("GLOBAL" in name for name, _ in ops)  # no name looked up on arrival
    return ops.count(("EXT2", pickle_extension.REBUILD_FLAT))


def test_a_message_is_one_rebuild_call_whatever_its_depth():
    JointState = messages.message_class("sensor_msgs/msg/JointState")
    msg = JointState(name=["throttle"], position=[0.5])
    msg.header.stamp.sec, msg.header.frame_id = 7, "base"
    data = pickle.dumps(msg, protocol=5)
    assert _rebuilds(data) == 1  # Header and Time inline, not rebuilt each
    back = pickle.loads(data)
    assert back == msg and type(back.header.stamp).__name__ == "Time"
    # a list of messages: each element flat inside its parent's rebuild
    PointCloud2 = messages.message_class("sensor_msgs/msg/PointCloud2")
    PointField = messages.message_class("sensor_msgs/msg/PointField")
    cloud = PointCloud2(fields=[PointField(name=n, offset=4 * i, datatype=7, count=1)
                                for i, n in enumerate("xyz")])  # fmt: skip
    data = pickle.dumps(cloud, protocol=5)
    assert _rebuilds(data) == 1 and pickle.loads(data) == cloud


def _python_calls(function, *args):
    """What ``function(*args)`` (a C function) returns, and the Python functions it ran."""
    import sys

    seen = []

    def profile(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        out = function(*args)
    finally:
        sys.setprofile(None)
    return out, seen


def test_a_message_crosses_in_five_python_calls_whatever_its_shape():
    """A message is built, sent, decoded and read right after a model evicted the caches,
    where each Python call costs microseconds: its publish runs published, reduce and the
    generated flat, its send none, its rebuild _rebuild_flat and the generated build; no
    message class's __setattr__, NumericSequence's __new__, element's flat or build; a read
    of a field none."""
    JointState = messages.message_class("sensor_msgs/msg/JointState")
    PointCloud2 = messages.message_class("sensor_msgs/msg/PointCloud2")
    PointField = messages.message_class("sensor_msgs/msg/PointField")
    joints = JointState(name=["a", "b"], position=[0.5, 1.5], velocity=[2.0], effort=[])
    cloud = PointCloud2(fields=[PointField(name=n, offset=4 * i, datatype=7, count=1)
                                for i, n in enumerate("xyz")], data=[1, 2, 3])  # fmt: skip
    for msg in (joints, cloud):
        data = pickle.dumps(msg, protocol=5)
        pickle.loads(data)  # the codec is generated on the first
        # a publish takes it flat (its elements inline), its send runs no Python at all
        queued, ran = _python_calls(message_pickle.published, msg)
        assert ran == ["published", "reduce", "flat"]
        sent, ran = _python_calls(pickle.dumps, queued, 5)
        assert ran == [] and sent == data
        back, ran = _python_calls(pickle.loads, data)
        assert ran == ["_rebuild_flat", "build"]
        assert back == msg
        # the receiver reads its fields in C (checked fields have no getter)
        stamp = back.header.stamp
        assert _python_calls(getattr, stamp, "sec") == (0, [])
        assert _python_calls(getattr, back, "header")[1] == []
        # an assignment still runs the class's checks (its __setattr__, the field's __set__)
        assert _python_calls(setattr, stamp, "sec", 7) == (None, ["__setattr__", "__set__"])
        with pytest.raises(AssertionError, match="The 'sec' field must be of type 'int'"):
            stamp.sec = 7.5
        assert type(back.position if msg is joints else back.data).__name__ == "NumericSequence"
    assert [type(f) for f in back.fields] == [PointField] * 3
    assert [f.name for f in back.fields] == ["x", "y", "z"]
    back.fields[1].offset = 9  # each element its own
    assert [f.offset for f in back.fields] == [0, 9, 8]
    with pytest.raises(AttributeError, match="has no attribute 'offest'"):
        back.fields[0].offest = 1  # the class's own check still guards the node's code


def test_a_new_message_runs_only_its_classes_init():
    """Built by node code right after its model ran, as cold as its rebuild: a JointState
    runs its own, its Header's and its Time's __init__, its three numeric sequences made
    by array's C __new__, each of the field's typed NumericSequence and its own."""
    JointState = messages.message_class("sensor_msgs/msg/JointState")
    JointState()
    msg, ran = _python_calls(JointState)
    assert ran == ["__init__"] * 3
    assert [type(s).__name__ for s in (msg.position, msg.velocity, msg.effort)] == [
        "NumericSequence"
    ] * 3
    assert msg.position.typecode == "d" and len(msg.position) == 0
    other = JointState()
    other.position.append(1.0)
    assert len(msg.position) == 0  # each message its own


def test_a_list_of_nested_messages_comes_back_whole():
    """Elements with messages or lists of their own are built by their own build."""
    DiagnosticArray = messages.message_class("diagnostic_msgs/msg/DiagnosticArray")
    DiagnosticStatus = messages.message_class("diagnostic_msgs/msg/DiagnosticStatus")
    KeyValue = messages.message_class("diagnostic_msgs/msg/KeyValue")
    msg = DiagnosticArray(status=[
        DiagnosticStatus(name="cpu", level=b"\x01",
                         values=[KeyValue(key="load", value="0.5"), KeyValue(key="t", value="40")]),
        DiagnosticStatus(name="disk", values=[]),
    ])  # fmt: skip
    back = pickle.loads(pickle.dumps(msg, protocol=5))
    assert back == msg
    assert [kv.key for kv in back.status[0].values] == ["load", "t"]
    assert type(back.status[0].values[0]) is KeyValue


def test_a_message_that_does_not_fit_its_layout_is_pickled_as_it_is():
    Image = messages.message_class("sensor_msgs/msg/Image")
    PointCloud2 = messages.message_class("sensor_msgs/msg/PointCloud2")
    extra = Image(height=2)
    with pytest.raises(AttributeError, match="'Image' object has no attribute 'note'"):
        extra.note = "misspelt"  # refused, as rclpy's slots refuse it
    extra.__dict__["note"] = "added by hand"  # past the check: pickling must not drop it
    assert b"_rebuild_fields" in pickle.dumps(extra)
    assert pickle.loads(pickle.dumps(extra)).note == "added by hand"
    odd = PointCloud2()
    odd.fields = ["not a PointField"]  # sequences of messages are not checked on assignment
    assert pickle.loads(pickle.dumps(odd, protocol=5)).fields == ["not a PointField"]
    foreign = Image()
    foreign.__dict__["header"] = messages.message_class("builtin_interfaces/msg/Time")(sec=3)
    assert pickle.loads(pickle.dumps(foreign)).header.sec == 3


def test_a_type_defined_differently_on_the_two_sides_is_an_error_naming_it(monkeypatch):
    String = messages.message_class("std_msgs/msg/String")
    data = pickle.dumps(String(data="hi"))
    pickle.loads(data)  # the receiver's entry now exists
    build, layout = message_pickle._builders["std_msgs/msg/String"]
    monkeypatch.setitem(message_pickle._builders, "std_msgs/msg/String", (build, layout ^ 1))
    with pytest.raises(
        pickle.UnpicklingError, match="std_msgs/msg/String: the sender's definition"
    ):
        pickle.loads(data)


def test_small_numeric_arrays_pickle_as_bytes_and_come_back_as_writable_arrays():
    Imu = messages.message_class("sensor_msgs/msg/Imu")
    imu = Imu()
    imu.orientation_covariance = [float(i) for i in range(9)]
    data = pickle.dumps(imu, protocol=5)
    assert b"_frombuffer" not in data  # not numpy's own (slow) pickling
    back = pickle.loads(data)
    assert back == imu and back.angular_velocity_covariance.shape == (9,)
    cov = back.orientation_covariance
    assert cov.dtype == np.float64 and cov.flags.writeable
    cov[0] = 7.0  # the receiver's own copy, as with numpy's pickle
    assert imu.orientation_covariance[0] == 0.0
    # empty sequences, and a large array kept as an array for the out-of-band path
    Image = messages.message_class("sensor_msgs/msg/Image")
    empty = pickle.loads(pickle.dumps(Image())).data
    assert isinstance(empty, array.array) and empty.typecode == "B" and len(empty) == 0
    big = Image(data=np.arange(5000, dtype=np.uint16).view(np.uint8))
    bufs = []
    data = pickle.dumps(big, protocol=5, buffer_callback=bufs.append)
    assert len(bufs) == 1 and b"_frombuffer" not in data
    shared = memoryview(bytes(bufs[0].raw()))  # as the data plane hands it: read-only
    back = pickle.loads(data, buffers=[shared])
    assert back == big and np.shares_memory(back.data, np.frombuffer(shared, np.uint8))
    assert not back.data.flags.writeable  # a view of the sender's memory
    for protocol in (2, 4):  # no out-of-band buffers before protocol 5: numpy's pickling
        assert pickle.loads(pickle.dumps(big, protocol=protocol)) == big
    # the data plane hands a shared-memory buffer over as a read-only uint8 array: a
    # float64 field is a view of it as float64, not a copy and not bytes
    JointState = messages.message_class("sensor_msgs/msg/JointState")
    joints = JointState(position=[float(i) for i in range(500)])
    bufs = []
    data = pickle.dumps(joints, protocol=5, buffer_callback=bufs.append)
    as_uint8 = np.frombuffer(bytes(bufs[0].raw()), np.uint8)
    back = pickle.loads(data, buffers=[as_uint8])
    assert back == joints and back.position.dtype == np.float64
    assert np.shares_memory(back.position, as_uint8)
    assert copy.deepcopy(imu) == imu and copy.deepcopy(big) == big


def test_a_receiver_that_never_imported_the_message_classes_rebuilds_them():
    """The rebuild function travels as a copyreg extension code (two bytes, no import per
    message); a process that never imported hprm_bridge learns it from the entry point
    as its data plane starts (serialization.load_pickle_extensions), and until then says
    what is missing."""
    import subprocess
    import sys

    from hprm_core.serialization import serialize

    JointState = messages.message_class("sensor_msgs/msg/JointState")
    msg = JointState(name=["steer"], position=[0.25])
    with serialize(msg) as s:
        header = s.pack_header()
    assert b"message_pickle" not in header and b"_rebuild_flat" not in header
    code = (
        "import sys\n"
        "from hprm_core import serialization\n"
        "header = bytes.fromhex(sys.argv[1])\n"
        "try:\n"
        "    serialization.deserialize(header)\n"
        "except serialization.SerializationError as exc:\n"
        "    print('before:', 'extension code' in str(exc), 'hprm_bridge' in sys.modules)\n"
        "serialization.load_pickle_extensions()\n"
        "m = serialization.deserialize(header)\n"
        "print('after:', type(m).__module__, type(m).__name__, list(m.name), m.position.tolist())\n"
    )
    r = subprocess.run([sys.executable, "-c", code, header.hex()], capture_output=True,
                       text=True, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "before: True False",
        "after: sensor_msgs.msg JointState ['steer'] [0.25]",
    ]


def test_a_published_message_keeps_what_it_held_at_the_call():
    """publish() takes a message's contents then (message_pickle.published): changed
    after, or reused, it still crosses as it was, strings in lists included."""
    JointState = messages.message_class("sensor_msgs/msg/JointState")
    js = JointState(name=["a"], position=[1.0])
    js.header.frame_id = "base"
    snap = message_pickle.published(js)
    js.name.append("b")
    js.position.append(2.0)
    js.header.frame_id = "changed"
    back = pickle.loads(pickle.dumps(snap, protocol=5))
    assert (back.name, back.position.tolist(), back.header.frame_id) == (["a"], [1.0], "base")
    assert message_pickle.published(b"raw") == b"raw"  # anything else: as it is
