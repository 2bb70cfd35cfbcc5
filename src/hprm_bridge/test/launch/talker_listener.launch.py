"""The test nodes as a launch file: talker and listener ported, one HPRM
federation. HPRM_TEST_TIMEOUT (default 50 ms) and HPRM_TEST_COORDINATION
let the tests choose."""

import os
from pathlib import Path

from launch import LaunchDescription

from hprm_bridge.launch import Federation, PortedNode

NODES = Path(__file__).resolve().parent.parent / "nodes"


def generate_launch_description():
    coordination = os.environ.get("HPRM_TEST_COORDINATION", "centralized")
    return LaunchDescription([
        Federation(
            [
                PortedNode(executable=str(NODES / "talker.py"), output="screen"),
                PortedNode(executable=str(NODES / "listener.py"), name="listener",
                           output="screen", remappings=[("chatter", "/chatter")]),
            ],
            coordination=coordination,
            stp_offset="30 ms" if coordination == "decentralized" else None,
            timeout=os.environ.get("HPRM_TEST_TIMEOUT", "50 ms"),
        ),
    ])  # fmt: skip
