"""Message types: Humble store, .msg discovery (AMENT_PREFIX_PATH and paths), errors, codec."""

import subprocess
import sys
import time

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore

from hprm_bridge.wire import MsgParseError, TypeRegistry, UnknownTypeError
from hprm_bridge.wire.cdr import pad4


def _pkg(root, pkg, files):
    d = root / pkg / "msg"
    d.mkdir(parents=True)
    for name, text in files.items():
        (d / f"{name}.msg").write_text(text)
    return root / pkg


def test_every_humble_type_loads_and_roundtrips():
    types = TypeRegistry(use_ament_prefix_path=False)
    store = get_typestore(Stores.ROS2_HUMBLE)
    assert len(store.fielddefs) > 100
    for name in store.fielddefs:
        msg = types.new(name)
        raw = types.encode(msg, name)
        assert len(raw) % 4 == 0
        assert bytes(raw) == bytes(pad4(store.serialize_cdr(msg, name)))
        types.decode(raw, name)
        types.idl_struct(name)  # a DDS declaration exists for each


def test_message_types_load_without_dds_and_every_public_name_still_resolves():
    """A ported node (and what launches it) uses message types, never DDS: importing
    cyclonedds cost each such process a quarter of a second. The package's public
    names load on first use."""
    probe = (
        "import sys, hprm_bridge.porting, hprm_bridge.rclpy, hprm_bridge.ros_cli\n"
        "from hprm_bridge.wire import TypeRegistry\n"
        "TypeRegistry(use_ament_prefix_path=False).new('sensor_msgs/msg/Image')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'cyclonedds'))\n"
        "import hprm_bridge.wire as wire\n"
        "assert all(getattr(wire, n) is not None for n in wire.__all__)\n"
        "print('cyclonedds' in sys.modules)\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[]", "True"]  # Node, QoSProfile...: DDS once used
    import hprm_bridge.wire as wire

    assert set(wire.__all__) <= set(dir(wire))
    with pytest.raises(AttributeError, match="has no attribute 'Nodes'"):
        wire.Nodes  # noqa: B018  (a typo fails as on any module)


def test_ament_prefix_path_discovery(tmp_path, monkeypatch):
    prefix = tmp_path / "install"
    share = prefix / "share"
    _pkg(
        share,
        "hprm_test_msgs",
        {
            "Tagged": "# a tag and an image\nint64 time_ns\nuint32 microstep\n"
            "hprm_test_msgs/Ref ref\n"
            "sensor_msgs/Image image\nfloat32[3] xyz\nstring<=8 short\nint32 LIMIT=5\n",
            "Ref": "uint64 arena\nuint64 offset\nuint64[<=4] extra\n",
        },
    )
    monkeypatch.setenv("AMENT_PREFIX_PATH", f"{tmp_path / 'missing'}:{prefix}")
    types = TypeRegistry()
    assert types.resolve("hprm_test_msgs/Tagged") == "hprm_test_msgs/msg/Tagged"
    msg = types.new("hprm_test_msgs/msg/Tagged", time_ns=-5, short="abc")
    assert msg.xyz.dtype == np.float32 and msg.xyz.shape == (3,)
    msg.ref.extra = np.array([1, 2], dtype=np.uint64)
    name = "hprm_test_msgs/msg/Tagged"
    back = types.decode(types.encode(msg, name), name)
    assert back.time_ns == -5 and back.short == "abc" and list(back.ref.extra) == [1, 2]
    assert types.idl_struct("hprm_test_msgs/msg/Tagged").__idl_typename__ == (
        "hprm_test_msgs::msg::dds_::Tagged_"
    )
    assert "hprm_test_msgs/msg/Ref" in types.known()


def test_explicit_paths_file_package_and_tree(tmp_path):
    a = _pkg(tmp_path / "ws", "pkg_a", {"A": "int8 a\n"})
    _pkg(tmp_path / "ws", "pkg_b", {"B": "pkg_a/A inner\n"})
    c = _pkg(tmp_path / "other", "pkg_c", {"C": "string c\n"})
    types = TypeRegistry([c / "msg" / "C.msg", tmp_path / "ws", a], use_ament_prefix_path=False)
    for name in ("pkg_a/msg/A", "pkg_b/msg/B", "pkg_c/msg/C"):
        types.resolve(name)


def test_unknown_type_and_missing_dependency(tmp_path):
    _pkg(tmp_path, "pkg_d", {"D": "pkg_missing/Gone g\n"})
    types = TypeRegistry([tmp_path], use_ament_prefix_path=False)
    with pytest.raises(UnknownTypeError, match="nope/msg/Nope"):
        types.resolve("nope/msg/Nope")
    with pytest.raises(UnknownTypeError, match=r"pkg_missing/msg/Gone.*needed by pkg_d/msg/D"):
        types.resolve("pkg_d/msg/D")
    with pytest.raises(UnknownTypeError):
        types.resolve("///")


def test_unparsable_msg_names_the_file(tmp_path):
    _pkg(tmp_path, "pkg_bad", {"Bad": "uint8[ data garbage\n"})
    types = TypeRegistry([tmp_path], use_ament_prefix_path=False)
    with pytest.raises(MsgParseError, match=r"Bad\.msg"):
        types.resolve("pkg_bad/msg/Bad")


def test_services_load_from_srv_files_and_the_humble_few(tmp_path):
    """A ``.srv`` file's halves are ``_Request`` and ``_Response`` types (a relative
    field type names the package's own message); an empty half gets rosidl's one member,
    so its CDR is what ROS 2 sends."""
    pkg = _pkg(tmp_path, "pkg_s", {"Pose2": "float64 x\nfloat64 y\n"})
    (pkg / "srv").mkdir()
    (pkg / "srv" / "Go.srv").write_text("Pose2 goal  # where\n---\nbool ok\n")
    (pkg / "srv" / "Kick.srv").write_text("---\n")
    (pkg / "srv" / "Bad.srv").write_text("int8 a\n---\nint8 b\n---\nint8 c\n")
    types = TypeRegistry([tmp_path], use_ament_prefix_path=False)
    assert {"pkg_s/srv/Go", "std_srvs/srv/Trigger"} <= set(types.services())
    assert "pkg_s/srv/Go" not in types.known()  # a service is no message
    request, response = types.service_halves("pkg_s/srv/Go")
    assert (request, response) == ("pkg_s/srv/Go_Request", "pkg_s/srv/Go_Response")
    assert [f for f, _ in types.fields(request)] == ["goal"]
    goal = types.new("pkg_s/msg/Pose2", x=1.5, y=-2.0)
    back = types.decode(types.encode(types.new(request, goal=goal), request), request)
    assert (back.goal.x, back.goal.y) == (1.5, -2.0)
    kick = types.service_halves("pkg_s/srv/Kick")[0]
    assert [f for f, _ in types.fields(kick)] == ["structure_needs_at_least_one_member"]
    assert [f for f, _ in types.fields("std_srvs/srv/SetBool_Response")] == ["success", "message"]
    with pytest.raises(MsgParseError, match=r"Bad\.srv.*one '---' line.*found 2"):
        types.service_halves("pkg_s/srv/Bad")
    with pytest.raises(UnknownTypeError, match=r"unknown service type 'pkg_s/srv/Nope'.*Nope\.srv"):
        types.service_halves("pkg_s/srv/Nope")
    with pytest.raises(UnknownTypeError, match="pkg_s/srv/Go is a service, not a message type"):
        types.resolve("pkg_s/srv/Go")


def test_new_rejects_unknown_fields():
    types = TypeRegistry(use_ament_prefix_path=False)
    with pytest.raises(TypeError, match="no field"):
        types.new("std_msgs/msg/String", text="x")


def test_msg_export_is_parsable_again(tmp_path):
    types = TypeRegistry(use_ament_prefix_path=False)
    written = types.write_msg_tree(tmp_path, ["sensor_msgs/msg/CameraInfo"])
    assert (tmp_path / "sensor_msgs" / "package.xml").exists()
    assert any(p.name == "Header.msg" for p in written)
    again = TypeRegistry([tmp_path], use_ament_prefix_path=False)
    # the exported definitions describe the same layout as the built-in ones
    assert again.fields("sensor_msgs/msg/CameraInfo") == types.fields("sensor_msgs/msg/CameraInfo")


def test_10mb_image_codec_is_fast():
    """Encode + decode of a 10 MB image is buffer work, not a per-element loop."""
    types = TypeRegistry(use_ament_prefix_path=False)
    data = np.random.default_rng(0).integers(0, 255, 10_000_000, dtype=np.uint8)
    msg = types.new(
        "sensor_msgs/msg/Image", height=1000, width=10_000, step=10_000, encoding="mono8", data=data
    )
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        back = types.decode(types.encode(msg, "sensor_msgs/msg/Image"), "sensor_msgs/msg/Image")
        best = min(best, time.perf_counter() - t0)
    assert np.array_equal(back.data, data)
    assert best < 0.25, f"10 MB encode+decode took {best * 1e3:.0f} ms"


def test_defaults_of_msg_and_srv_files_start_new_messages(tmp_path):
    """Defaults written in .msg and .srv files (rosidl's rules): comments and '#' inside
    quotes, constants left alone, bad ones refused with the file named."""
    pkg = tmp_path / "demo_msgs"
    (pkg / "msg").mkdir(parents=True)
    (pkg / "srv").mkdir()
    (pkg / "msg" / "Mode.msg").write_text(
        "uint8 AUTO=1\nuint8 mode 1  # AUTO\nstring label 'a#b'\nstring[] tags [\"x, y\", z]\n"
        "float32 scale -2.5e-1\nint64 big 0x10\n"
    )
    (pkg / "srv" / "SetMode.srv").write_text("uint8 mode 2\n---\nbool ok true\n")
    (pkg / "msg" / "Bad.msg").write_text("bool flag maybe\n")
    types = TypeRegistry([tmp_path], use_ament_prefix_path=False)
    m = types.new("demo_msgs/msg/Mode")
    assert (m.mode, m.label, m.tags, m.scale, m.big) == (1, "a#b", ["x, y", "z"], -0.25, 16)
    assert types.new("demo_msgs/srv/SetMode_Request").mode == 2
    assert types.new("demo_msgs/srv/SetMode_Response").ok is True
    with pytest.raises(MsgParseError, match=r"Bad\.msg"):
        types.new("demo_msgs/msg/Bad")
