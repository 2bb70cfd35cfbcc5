"""The repository's src/ builds with a real colcon on a real ROS 2 Humble (README, "ROS 2").

A scratch workspace gets a copy of src/ and one ``colcon build`` with Humble sourced:
every package must build (hprm_msgs through rosidl's C, C++ and Python generators); the
generated Python messages must round-trip through rclpy's own serialization and match the
runtime's types (``hprm_core.tag.Tag``, ``hprm_core.object_store.Ref``); and
``hprm_bridge.wire`` must import from the install once the documented dependency step
(``pip install -r requirements.txt``) is done, here by this virtual environment.

Needs Humble at /opt/ros/humble (``../shared/ros2/install.sh``) and colcon (installed by
tools/venv.sh from tools/requirements-dev.txt); sources Humble itself, so it runs whether
or not the calling shell did.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[3]
HUMBLE = Path("/opt/ros/humble")
COLCON = shutil.which("colcon", path=str(Path(sys.executable).parent)) or shutil.which("colcon")

pytestmark = [
    pytest.mark.ros2,
    pytest.mark.slow,
    pytest.mark.skipif(
        not (HUMBLE / "setup.bash").exists(),
        reason="needs ROS 2 Humble at /opt/ros/humble (../shared/ros2/install.sh installs it)",
    ),
    pytest.mark.skipif(
        COLCON is None, reason="colcon is not installed (tools/venv.sh installs it)"
    ),
]

PACKAGES = sorted(ET.parse(p).findtext("name") for p in (ROOT / "src").glob("*/package.xml"))


def _ros_python() -> str:
    """The Python Humble was built with: rosidl's generators run in it (they import its
    ament_package and empy 3), not in this virtual environment (empy 4, no ament_package)."""
    first = (HUMBLE / "bin" / "ros2").read_text().splitlines()[0]
    return first[2:] if first.startswith("#!/") and " " not in first else "/usr/bin/python3"


def _in_ros(ws: Path, *command: str, **env: str) -> subprocess.CompletedProcess:
    """``command`` in ``ws`` with Humble sourced, and the workspace's install once built."""
    script = (
        'source "$0/setup.bash"'
        " && { [ ! -f install/setup.bash ] || source install/setup.bash; }"
        ' && exec "$@"'
    )
    return subprocess.run(
        ["bash", "-c", script, str(HUMBLE), *command],
        cwd=ws,
        env=dict(os.environ, **env),
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("ros2_ws")
    shutil.copytree(
        ROOT / "src",
        ws / "src",
        # what builds in place leave (hprm_core.compiled): colcon must build its own
        ignore=shutil.ignore_patterns(
            "*.egg-info", "__pycache__", "build", ".mypy_cache", "*.so", "compiled.json"
        ),
    )
    python = _ros_python()
    start = time.monotonic()
    build = _in_ros(
        ws,
        COLCON,
        "build",
        "--event-handlers",
        "console_direct-",
        "--cmake-args",
        f"-DPython3_EXECUTABLE={python}",
        f"-DPYTHON_EXECUTABLE={python}",
        # test_colcon.py covers hprm_core's compiled colcon build; here it only costs time
        HPRM_PURE_PYTHON="1",
    )
    print(f"colcon build of {', '.join(PACKAGES)}: {time.monotonic() - start:.1f} s")
    assert build.returncode == 0, build.stdout[-6000:] + build.stderr[-6000:]
    return ws


def _python_in_install(ws: Path, code: str) -> dict:
    """Run ``code`` with this venv's Python in the sourced install; it prints one JSON line."""
    run = _in_ros(ws, sys.executable, "-c", code)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_every_package_in_src_builds(workspace):
    assert PACKAGES == ["carla_demo", "hprm_bridge", "hprm_core", "hprm_msgs"]
    for name in PACKAGES:
        marker = workspace / "install" / name / "share/ament_index/resource_index/packages" / name
        assert marker.exists(), f"{name} did not install"
    # rosidl generated the C and C++ headers as well as the Python package
    include = workspace / "install/hprm_msgs/include/hprm_msgs/hprm_msgs/msg"
    assert {"tag.h", "tag.hpp", "object_ref.hpp", "federate_status.hpp"} <= {
        p.name for p in include.iterdir()
    }


ROUND_TRIP = """
import json
import hprm_msgs
from hprm_msgs.msg import FederateStatus, ObjectRef, Tag
from rclpy.serialization import deserialize_message, serialize_message
from hprm_core import tag as T
from hprm_core.object_store import Ref

def round_trip(msg):
    data = serialize_message(msg)
    back = deserialize_message(data, type(msg))
    assert back == msg, (back, msg)
    return data

assert list(Tag.get_fields_and_field_types()) == list(T.Tag._fields)
assert (Tag.FOREVER_TIME, Tag.FOREVER_MICROSTEP) == tuple(T.FOREVER)
for t in (T.NEVER, T.FOREVER, T.Tag(1_700_000_000_123_456_789, 3)):
    round_trip(Tag(time=t.time, microstep=t.microstep))

fields = list(Ref._fields)
assert list(ObjectRef.get_fields_and_field_types()) == fields
ref = Ref(arena_id=2**64 - 1, offset=4160, length=1 << 30, generation=7, block=4096)
data = round_trip(ObjectRef(**{f: getattr(ref, f) for f in fields}))
# CDR: a 4-byte encapsulation header, then five little-endian uint64: HPRM's own 40 bytes
assert bytes(data[4:]) == ref.pack(), bytes(data)

completed = Tag(time=T.NEVER.time, microstep=0)
round_trip(FederateStatus(federation="robot1", federate="camera", completed=completed))
round_trip(FederateStatus(state=FederateStatus.FAILED, completed=Tag(time=5, microstep=1)))
print(json.dumps({"hprm_msgs": hprm_msgs.__file__, "hprm_core": T.__file__}))
"""


def test_hprm_msgs_round_trip_through_rclpy_and_match_the_runtime(workspace):
    where = _python_in_install(workspace, ROUND_TRIP)
    for module, path in where.items():
        assert Path(path).is_relative_to(workspace / "install"), f"{module} from {path}"


def test_hprm_bridge_wire_imports_once_requirements_txt_is_installed(workspace):
    wanted = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            req = Requirement(line)
            wanted[canonicalize_name(req.name)] = req.specifier
    # requirements.txt lists what every built package requires, with the same versions
    ours = {canonicalize_name(p) for p in PACKAGES}
    built = sorted(workspace.glob("install/*/lib/python3*/site-packages/*.egg-info/requires.txt"))
    assert len(built) == 3, built  # the ament_python packages
    for requires in built:
        for line in map(str.strip, requires.read_text().splitlines()):
            if line.startswith("["):  # the extras come last
                break
            if not line:
                continue
            req = Requirement(line)
            name = canonicalize_name(req.name)
            if name not in ours:
                assert name in wanted, f"{requires.parent.name}: {line} not in requirements.txt"
                assert wanted[name] == req.specifier, f"{line} vs requirements.txt {wanted[name]}"
    # the documented step is done in this environment: pip has nothing left to install
    dry_run = ["install", "--dry-run", "--no-index", "-r", "requirements.txt"]
    pip = subprocess.run(
        [sys.executable, "-m", "pip", *dry_run],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert pip.returncode == 0 and "Would install" not in pip.stdout, pip.stdout + pip.stderr
    where = _python_in_install(
        workspace,
        "import json, hprm_bridge.wire as w; print(json.dumps({'hprm_bridge': w.__file__}))",
    )
    assert Path(where["hprm_bridge"]).is_relative_to(workspace / "install"), where


def test_the_example_nodes_run_and_launch_from_the_install(workspace):
    """``ros2 run``/``ros2 launch`` find the example nodes and launch file in the
    install (lib/hprm_bridge/, share/hprm_bridge/launch/), and the installed
    launch file runs them as one HPRM federation."""
    lib = workspace / "install/hprm_bridge/lib/hprm_bridge"
    names = {f"example_{n}" for n in ("camera", "detector", "planner", "controller")}
    assert names | {"hprm-ros"} <= {p.name for p in lib.iterdir()}
    listed = _in_ros(workspace, "ros2", "pkg", "executables", "hprm_bridge")
    assert {f"hprm_bridge {n}" for n in names} <= set(listed.stdout.splitlines()), listed
    ros2 = str(HUMBLE / "bin" / "ros2")
    run = _in_ros(workspace, sys.executable, ros2, "launch", "hprm_bridge", "pipeline.launch.py",
                  "timeout:=200 ms")  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert len(re.findall(r"^\[controller-\d+\] CMD ", run.stdout, re.M)) == 6, run.stdout


def test_colcon_test_runs_the_bridges_tests(workspace):
    """``colcon test`` of hprm_bridge in the workspace: one quick module (the
    outer session runs them all; this proves colcon runs them from the install)."""
    args = ["--pytest-args", "-k", "test_numpy", "-p", "no:launch_testing"]
    test = _in_ros(workspace, COLCON, "test", "--packages-select", "hprm_bridge",
                   "--event-handlers", "console_direct-", *args)  # fmt: skip
    assert test.returncode == 0, test.stdout[-4000:] + test.stderr[-4000:]
    result = _in_ros(workspace, COLCON, "test-result", "--all", "--verbose")
    m = re.search(r"Summary: (\d+) tests, (\d+) errors, (\d+) failures", result.stdout)
    assert m, result.stdout
    tests, errors, failures = map(int, m.groups())
    assert tests >= 40 and errors == failures == 0, result.stdout
