"""The example pipeline under ``ros2 launch``, ported or plain.

    ros2 launch hprm_bridge pipeline.launch.py          # installed (colcon build)
    ros2 launch pipeline.launch.py                      # one HPRM federation
    ros2 launch pipeline.launch.py ported:=false        # four plain rclpy nodes
    ros2 launch pipeline.launch.py coordination:=decentralized timeout:="5 s"

Porting is the one-word change the launch file shows: ``Node`` ->
``PortedNode``, inside a ``Federation``. ``frames`` makes the camera stop
after that many frames (0: never)."""

import sys
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

HERE = Path(__file__).resolve().parent
NODES = ("camera", "detector", "planner", "controller")


def _nodes(context):
    def arg(name):
        return LaunchConfiguration(name).perform(context)

    ported = arg("ported").lower() in ("true", "1", "yes")
    params = {"camera": [{"frames": int(arg("frames"))}]}

    def where(n):
        """Next to the node files (the source tree), or the installed package's."""
        if (HERE / f"{n}.py").exists():
            return dict(executable=str(HERE / f"{n}.py"))
        return dict(package="hprm_bridge", executable=f"example_{n}")

    if not ported:  # plain ROS 2
        return [
            Node(**(dict(executable=sys.executable, arguments=[str(HERE / f"{n}.py")])
                    if (HERE / f"{n}.py").exists() else where(n)),
                 name=n, exec_name=n, parameters=params.get(n), output="screen")
            for n in NODES
        ]  # fmt: skip
    from hprm_bridge.launch import Federation, PortedNode

    coordination = arg("coordination")
    return [
        Federation(
            [PortedNode(**where(n), name=n, parameters=params.get(n), output="screen")
             for n in NODES],
            coordination=coordination,
            stp_offset="40 ms" if coordination == "decentralized" else None,
            timeout=arg("timeout") or None,
        )
    ]  # fmt: skip


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("ported", default_value="true"),
        DeclareLaunchArgument("coordination", default_value="centralized"),
        DeclareLaunchArgument("timeout", default_value="", description="e.g. '5 s'; empty: none"),
        DeclareLaunchArgument("frames", default_value="0"),
        OpaqueFunction(function=_nodes),
    ])  # fmt: skip
