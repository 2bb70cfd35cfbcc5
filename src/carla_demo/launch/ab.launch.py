"""The CARLA PPO+YOLO demo under ``ros2 launch``, as any variant of the A/B comparison.

    ros2 launch carla_demo ab.launch.py                          # HPRM, centralized
    ros2 launch carla_demo ab.launch.py variant:=ros2            # four plain rclpy nodes
    ros2 launch carla_demo ab.launch.py variant:=ros2-shm        # images in shared memory
    ros2 launch carla_demo ab.launch.py variant:=ros2-bytes      # the paper's byte[] baseline
    ros2 launch carla_demo ab.launch.py variant:=hprm-decentralized frames:=50 warmup:=10
    ros2 launch carla_demo ab.launch.py carla_host:=localhost    # a CARLA server
    ros2 launch carla_demo ab.launch.py cpu:=1                   # sim, detector, fusion on CPU 1

The same four node files in every variant: porting is ``Node`` -> ``PortedNode`` inside a
``Federation``. The sim ends the run after ``warmup`` + ``frames`` frames and writes its
per-frame latencies to ``report`` (a JSON file) when given; ``hprm bench carla-ab`` runs
every variant and compares them.
"""

import os
import sys
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.descriptions import Parameter

VARIANTS = ("ros2", "ros2-shm", "ros2-bytes", "hprm-centralized", "hprm-decentralized")
NODES = ("sim", "agent", "detector", "fusion")
TWO_INPUT = ("agent", "fusion")
STP_PER_FRAME_S = 2.0  # as carla_demo.ab: decentralized runs happen at one logical time
SOURCES = Path(__file__).resolve().parent.parent / "carla_demo"  # the source tree's node files


def _where(node, ported):
    """The source tree's node file when this launch file runs from it, else the installed
    package's executable (colcon build)."""
    path = SOURCES / f"{node}_node.py"
    if not path.exists():
        return dict(package="carla_demo", executable=node)
    return (
        dict(executable=str(path))
        if ported
        else dict(executable=sys.executable, arguments=[str(path)])
    )


def _thread_env():
    """As carla_demo.ab's harness: the same BLAS threads as the floor (the user's win)."""
    from carla_demo.ab import THREAD_ENV

    return {k: os.environ.get(k, v) for k, v in THREAD_ENV.items()}


def _nodes(context):
    def arg(name):
        return LaunchConfiguration(name).perform(context)

    variant = arg("variant")
    if variant not in VARIANTS:
        raise RuntimeError(f"variant:= one of {', '.join(VARIANTS)}; got {variant!r}")
    frames, warmup = int(arg("frames")), int(arg("warmup"))
    sim = {
        "frames": frames,
        "warmup": warmup,
        "seed": int(arg("seed")),
        "carla_host": arg("carla_host"),
        "report": arg("report"),
    }
    params = {
        "sim": sim,
        "agent": {"seed": int(arg("seed")), "weights": arg("policy_weights")},
        "detector": {"seed": int(arg("seed")), "weights": arg("detector_weights")},
        "fusion": {},
    }
    from carla_demo.ab import IMAGE_NODES, TRANSPORT

    if variant in TRANSPORT:  # as carla_demo.ab: how the images travel
        for n in IMAGE_NODES:
            params[n]["transport"] = TRANSPORT[variant]
    if arg("cpu"):  # as carla_demo.ab: the critical path's callbacks on one CPU
        from carla_demo.ab import PINNED_NODES, check_cpu

        check_cpu(int(arg("cpu")), arg("busy_poll") if variant.startswith("hprm-") else None)

        for n in PINNED_NODES:
            params[n]["cpu"] = int(arg("cpu"))
    if variant.startswith("ros2"):
        from hprm_bridge.bench import ros2_baseline_env

        dds = {"CYCLONEDDS_URI": ros2_baseline_env(os.environ)["CYCLONEDDS_URI"]}
        nodes = {
            n: Node(
                **_where(n, ported=False),
                name=n,
                exec_name=n,
                additional_env={**_thread_env(), **dds},
                output="screen",
                # as -p rules: a dict would leave a file in /tmp per node (ros2/launch_ros#5)
                parameters=[Parameter(k, v, value_type=type(v)) for k, v in params[n].items()],
            )
            for n in NODES
        }
        # the sim ends the run: the other nodes would spin forever
        stop = RegisterEventHandler(
            OnProcessExit(target_action=nodes["sim"], on_exit=[EmitEvent(event=Shutdown())])
        )
        return [*nodes.values(), stop]
    from hprm_bridge.launch import Federation, PortedNode

    coordination = variant.removeprefix("hprm-")
    # decentralized: the nodes waiting for two inputs of a frame get an STP offset that bounds
    # the run (it happens at one logical time); the others none (carla_demo.ab explains)
    stp = f"{int(STP_PER_FRAME_S * (frames + warmup) + 30)} s"
    ported = [
        PortedNode(
            **_where(n, ported=True),
            name=n,
            additional_env=_thread_env(),
            output="screen",
            parameters=[params[n]] if params[n] else None,
            stp_offset=stp if coordination == "decentralized" and n in TWO_INPUT else None,
            busy_poll=arg("busy_poll") or None,
        )
        for n in NODES
    ]
    return [Federation(ported, coordination=coordination)]


def generate_launch_description():
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "variant", default_value="hprm-centralized", description=", ".join(VARIANTS)
            ),
            DeclareLaunchArgument("frames", default_value="400"),
            DeclareLaunchArgument("warmup", default_value="100"),
            DeclareLaunchArgument("seed", default_value="0"),
            DeclareLaunchArgument(
                "carla_host", default_value="", description="empty: embedded world"
            ),
            DeclareLaunchArgument("policy_weights", default_value=""),
            DeclareLaunchArgument("detector_weights", default_value=""),
            DeclareLaunchArgument(
                "report", default_value="", description="JSON file for latencies"
            ),
            DeclareLaunchArgument(
                "cpu",
                default_value="",
                description="the CPU of the sim's, detector's and fusion's callbacks "
                "(hprm bench carla-ab pins them; empty: any CPU)",
            ),
            DeclareLaunchArgument(
                "busy_poll",
                default_value="",
                description="hprm variants: each node spins this long (or 'forever') before "
                "it sleeps; for machines with a core to spare per node",
            ),
            OpaqueFunction(function=_nodes),
        ]
    )
