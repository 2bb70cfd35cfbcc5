"""The example pipeline under ``ros2 launch``, ported or plain.

    ros2 launch hprm_bridge pipeline.launch.py          # installed (colcon build)
    ros2 launch pipeline.launch.py                      # one HPRM federation
    ros2 launch pipeline.launch.py ported:=none         # four plain rclpy nodes
    ros2 launch pipeline.launch.py ported:=detector,planner   # half ported
    ros2 launch pipeline.launch.py coordination:=decentralized timeout:="5 s"

Porting is the one-word change the launch file shows: ``Node`` ->
``PortedNode``, inside a ``Federation``; with some nodes plain, the
federation's gateway carries the topics between the two sides. ``frames``
makes the camera stop after that many frames (0: never)."""

import sys
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.descriptions import Parameter

HERE = Path(__file__).resolve().parent
NODES = ("camera", "detector", "planner", "controller")


def _nodes(context):
    def arg(name):
        return LaunchConfiguration(name).perform(context)

    choice = arg("ported").lower()
    ported = set(NODES) if choice in ("all", "true") else set() if choice in ("none", "false") \
        else set(choice.split(","))  # fmt: skip
    if not ported <= set(NODES):
        raise RuntimeError(f"ported:= all, none or some of {', '.join(NODES)}; got {choice!r}")
    params = {"camera": {"frames": int(arg("frames"))}}

    def where(n):
        """Next to the node files (the source tree), or the installed package's."""
        if (HERE / f"{n}.py").exists():
            return dict(executable=str(HERE / f"{n}.py"))
        return dict(package="hprm_bridge", executable=f"example_{n}")

    plain = [
        Node(**(dict(executable=sys.executable, arguments=[str(HERE / f"{n}.py")])
                if (HERE / f"{n}.py").exists() else where(n)),
             name=n, exec_name=n, output="screen",  # parameters as -p rules: a dict
             # would leave a file in /tmp (ros2/launch_ros#5)
             parameters=[Parameter(k, v, value_type=type(v))
                         for k, v in params.get(n, {}).items()])
        for n in NODES if n not in ported
    ]  # fmt: skip
    if not ported:
        return plain
    from hprm_bridge.launch import Federation, PortedNode

    coordination = arg("coordination")
    federation = Federation(
        [PortedNode(**where(n), name=n, parameters=[params[n]] if n in params else None,
                    output="screen")
         for n in NODES if n in ported],
        coordination=coordination,
        stp_offset="40 ms" if coordination == "decentralized" else None,
        timeout=arg("timeout") or None,
        bridge=bool(plain),
    )  # fmt: skip
    return [federation, *plain]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("ported", default_value="all",
                              description="all, none, or the ported nodes: camera,detector,..."),
        DeclareLaunchArgument("coordination", default_value="centralized"),
        DeclareLaunchArgument("timeout", default_value="", description="e.g. '5 s'; empty: none"),
        DeclareLaunchArgument("frames", default_value="0"),
        OpaqueFunction(function=_nodes),
    ])  # fmt: skip
