"""The command line around a ported node, as rcl reads it (hprm_bridge.rclpy.arguments):
``remove_ros_args`` for the node's own argparse, ``--log-level`` and the log outputs at
``rclpy.init``, and logger levels by name. The probe node file runs under real rclpy
too, where one is installed: the two must print the same."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hprm_bridge import rclpy
from hprm_bridge.rclpy import logging
from hprm_bridge.rclpy.arguments import InvalidROSArgsError, UnknownROSArgsError, parse_ros_args
from hprm_bridge.rclpy.logging import LoggingSeverity, get_logger
from hprm_bridge.rclpy.utilities import remove_ros_args

PROBE = Path(__file__).parent / "nodes" / "arg_probe.py"
PROBE_ARGS = ["--ros-args", "--log-level", "ns.probe.child:=debug", "--log-level", "warn"]


@pytest.fixture(autouse=True)
def fresh_logging():
    yield
    logging.clear_config()
    rclpy.shutdown()


def test_ros_args_sections_are_split_off_and_read():
    a = parse_ros_args(["node", "in", "--ros-args", "-p", "gain:=[1, 2]", "-r", "__ns:=/r1",
                        "--params-file", "p.yaml", "--log-level", "cam:=Error", "--", "out",
                        "--ros-args", "--disable-rosout-logs", "-e", "/enclave"])  # fmt: skip
    assert a.rest == ["node", "in", "out"]
    assert a.param_sources == [("param", "/**", "gain", [1, 2]), ("file", "p.yaml")]
    assert a.remaps == [("", "__ns", "/r1")] and a.log_levels == {"cam": LoggingSeverity.ERROR}
    assert a.log_outputs == {"rosout": False}
    assert remove_ros_args(["x", "-p", "--", "y"]) == ["x", "-p", "--", "y"]  # no section


@pytest.mark.parametrize("argv,match", [
    (["--ros-args", "--bogus", "-p", "a:=1", "stray"],
     r"unknown --ros-args argument\(s\) \['--bogus', 'stray'\]"),
    (["--ros-args", "-p"], "-p is the last argument: it needs a value"),
    (["--ros-args", "-p", "a=1"], "-p expects NAME:=VALUE, got 'a=1'"),
    (["--ros-args", "-p", "/ns/cam:a:=1"], "NODE:NAME:=VALUE takes a node's name, without"),
    (["--ros-args", "-p", "**:a:=1"], "wildcard '\\*\\*' is not implemented"),
    (["--ros-args", "--remap", "a"], "--remap expects FROM:=TO"),
    (["--ros-args", "--log-level", "cam:=loud"], "'loud' is not a severity"),
    (["--ros-args", "--log-config-file", "log.conf"], "takes no configuration file"),
])  # fmt: skip
def test_what_rcl_refuses_is_refused_naming_the_argument(argv, match):
    with pytest.raises(InvalidROSArgsError, match=match):
        parse_ros_args(["node", *argv])
    with pytest.raises(InvalidROSArgsError, match=match):  # rclpy.init fails as rcl's does
        rclpy.init(args=["node", *argv])


def test_unknown_arguments_are_listed_on_the_error():
    with pytest.raises(UnknownROSArgsError) as e:
        remove_ros_args(["n", "--ros-args", "--", "--ros-args", "z"])
    assert e.value.unknown == ["z"]


def test_an_enclave_is_refused_only_where_sros2_security_is_on(monkeypatch):
    assert parse_ros_args(["n", "--ros-args", "--enclave", "/e"]).rest == ["n"]
    monkeypatch.setenv("ROS_SECURITY_ENABLE", "true")
    with pytest.raises(InvalidROSArgsError, match="SROS2 security does not apply"):
        parse_ros_args(["n", "--ros-args", "--enclave", "/e"])


def test_init_sets_levels_by_logger_name_with_rcutils_inheritance():
    rclpy.init(args=["n", "--ros-args", "--log-level", "error", "--log-level", "cam:=debug"])
    assert get_logger("cam.driver").get_effective_level() == LoggingSeverity.DEBUG
    assert get_logger("lidar").get_effective_level() == LoggingSeverity.ERROR
    node = rclpy.create_node("probe", namespace="/robot1")
    assert node.get_logger().name == "robot1.probe"  # rcl's node logger name
    node.get_logger().set_level(LoggingSeverity.INFO)  # every logger of that name, children too
    assert get_logger("robot1.probe").get_child("x").get_effective_level() == LoggingSeverity.INFO
    logging.set_logger_level("robot1.probe", LoggingSeverity.UNSET)
    assert node.get_logger().get_effective_level() == LoggingSeverity.ERROR
    with pytest.raises(RuntimeError, match="'loud' is not a logging severity"):
        logging.get_logging_severity_from_string("loud")


def test_disable_stdout_logs_silences_the_console_but_lines_still_count(capsys):
    rclpy.init(args=["n", "--ros-args", "--disable-stdout-logs"])
    assert get_logger("quiet").info("not printed") is True
    rclpy.init(args=["n", "--ros-args", "--enable-stdout-logs"])
    get_logger("loud").warning("printed")
    assert re.fullmatch(r"\[WARN\] \[[0-9.]+\] \[loud\]: printed\n", capsys.readouterr().err)


def _run_probe(real: bool) -> subprocess.CompletedProcess:
    if real:
        cmd = [sys.executable, str(PROBE), *PROBE_ARGS]
    else:  # as hprm-ros run imports a node file: rclpy and the messages are HPRM's
        code = ("import runpy, sys; from hprm_bridge import porting; porting.install_imports(); "
                f"sys.argv = [{str(PROBE)!r}, *{PROBE_ARGS!r}]; "
                f"runpy.run_path({str(PROBE)!r}, run_name='__main__')")  # fmt: skip
        cmd = [sys.executable, "-c", code]
    env = {k: v for k, v in os.environ.items() if k != "ROS_SECURITY_ENABLE"}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    return r


def test_the_probe_runs_ported_and_prints_what_rclpy_would():
    r = _run_probe(real=False)
    lines = r.stdout.splitlines()
    assert "remove_ros_args ['prog', 'a', '--ros-args', '-p', 'b:=2', '--', 'c', '--ros-args', " \
        "'-r', 'x:=y'] -> ['prog', 'a', 'c']" in lines  # fmt: skip
    assert "cdr String 0001000003000000686900" in lines  # unpadded, as rmw_serialize
    assert "sequence True [1.0, 2.0]" in lines
    assert "logged [False, True, True, True, False]" in lines
    assert re.sub(r"\[[0-9.]+\] ", "", r.stderr).splitlines() == [
        "[WARN] [ns.probe]: warn line", "[ERROR] [ns.probe]: error line",
        "[DEBUG] [ns.probe.child]: child debug line",
    ]  # fmt: skip


@pytest.mark.ros2
def test_the_probe_prints_the_same_under_real_rclpy(require_ros2_cli):
    require_ros2_cli()
    real, ported = _run_probe(real=True), _run_probe(real=False)
    assert ported.stdout == real.stdout
    stamps = re.compile(r"\[[0-9.]+\] ")
    assert stamps.sub("", ported.stderr) == stamps.sub("", real.stderr)


# A params file in every shape rcl reads: a namespace nesting its nodes, wildcards for one
# token (*) and for any number (**), a later section overriding an earlier one.
NESTED = """
robot1:
  talker:
    ros__parameters: {rate: 5, x: 1}
  front:
    camera:
      ros__parameters: {fps: 30}
/**:
  ros__parameters: {shared: 1, x: 0}
/robot1/*:
  ros__parameters: {in_robot1: true}
/**/talker:
  ros__parameters: {x: 3, talker: true}
"""
LATER = """
/**:
  ros__parameters: {x: 7}
/robot1/*:
  ros__parameters: {x: 5}
"""


def _params_files(tmp_path):
    (tmp_path / "nested.yaml").write_text(NESTED)
    (tmp_path / "later.yaml").write_text(LATER)
    return [
        ["--params-file", str(tmp_path / "nested.yaml")],
        ["-p", "x:=9", "--params-file", str(tmp_path / "later.yaml")],
        ["--params-file", str(tmp_path / "later.yaml"), "-p", "x:=9"],
        ["--params-file", str(tmp_path / "nested.yaml"), "--params-file",
         str(tmp_path / "later.yaml")],
        ["-p", "talker:x:=8", "--params-file", str(tmp_path / "later.yaml"), "-p", "y:=1"],
    ]  # fmt: skip


def _probe_params(runtime, args, name="params_file_probe.py"):
    probe = str(Path(__file__).parent / "nodes" / name)
    argv = [probe, "--ros-args", *args]
    if runtime == "hprm":  # as hprm_bridge.porting runs a node file
        cmd = [sys.executable, "-c",
               "import sys, runpy; from hprm_bridge import porting; porting.install_imports(); "
               f"sys.argv = {argv!r}; runpy.run_path({probe!r}, run_name='__main__')"]  # fmt: skip
    else:
        cmd = [sys.executable, *argv]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_params_files_nest_namespaces_match_wildcards_and_apply_in_rcls_order(tmp_path):
    nested, p_first, p_last, both, scoped = (
        _probe_params("hprm", a) for a in _params_files(tmp_path)
    )
    assert nested["/robot1/talker"] == {"rate": 5, "x": 3, "shared": 1, "in_robot1": True,
                                        "talker": True}  # fmt: skip
    assert nested["/talker"] == {"x": 3, "shared": 1, "talker": True}
    assert nested["/robot1/listener"] == {"x": 0, "shared": 1, "in_robot1": True}
    assert nested["/robot1/front/camera"] == {"fps": 30, "x": 0, "shared": 1}  # * is one token
    assert nested["/a/b/talker"] == {"x": 3, "shared": 1, "talker": True}
    # -p goes into /**, where that name first appears: a file's /** after it replaces its
    # value; after the file, -p replaces the file's /** value, still before /robot1/*
    assert p_first["/robot1/talker"] == {"x": 5} and p_first["/talker"] == {"x": 7}
    assert p_last["/robot1/talker"] == {"x": 5} and p_last["/talker"] == {"x": 9}
    # a second file's sections update the first's in place: /**/talker still comes last
    assert both["/robot1/talker"]["x"] == 3 and both["/robot1/listener"]["x"] == 5
    # -p NODE:NAME:=VALUE: that node of the root namespace only
    assert scoped["/talker"] == {"x": 7, "y": 1} and scoped["/robot1/talker"] == {"x": 5, "y": 1}


@pytest.mark.ros2
def test_params_files_resolve_as_real_rclpy_resolves_them(tmp_path):
    pytest.importorskip(
        "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
    )
    for args in _params_files(tmp_path):
        assert _probe_params("hprm", args) == _probe_params("rclpy", args), args


def test_a_params_file_of_the_wrong_shape_is_refused_naming_the_place(tmp_path):
    from hprm_bridge.rclpy import parameter_overrides

    bad = tmp_path / "bad.yaml"
    bad.write_text("robot1:\n  talker: 3\n")
    with pytest.raises(ValueError, match=r"bad.yaml: /robot1/talker holds 3"):
        parameter_overrides.read_file(str(bad))


REMAPS = [
    ["-r", "talker:chatter:=words", "-r", "talker:__ns:=/t", "-r", "listener:__node:=ear"],
    ["-r", "talker:__node:=mouth", "-r", "mouth:chatter:=a", "-r", "talker:chatter:=b"],
    ["-r", "chatter:=c", "-r", "talker:chatter:=b", "-r", "chatter:=d"],
    ["-r", "__node:=x", "-r", "talker:__node:=y"],
]


def test_remapping_rules_apply_per_node_first_match_first_and_the_nodes_own_before():
    seen = [_probe_params("hprm", args, "remap_probe.py") for args in REMAPS]
    # talker:...: that node only (its namespace first, by its name before remapping)
    assert seen[0][:2] == [["talker", "/t", "/t/words", "/t/talker/status"],
                           ["ear", "/", "/chatter", "/ear/status"]]  # fmt: skip
    # a topic rule names the node by its remapped name
    assert seen[1][0] == ["mouth", "/", "/a", "/mouth/status"]
    # the first rule that applies wins; a node's own cli_args come before the process's
    assert [s[2] for s in seen[2]] == ["/c", "/c", "/mine/own"]
    assert [s[0] for s in seen[3]] == ["x", "x", "x"]


@pytest.mark.ros2
def test_remapping_rules_resolve_as_real_rclpy_resolves_them():
    pytest.importorskip(
        "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
    )
    for args in REMAPS:
        hprm = _probe_params("hprm", args, "remap_probe.py")
        assert hprm == _probe_params("rclpy", args, "remap_probe.py"), args
