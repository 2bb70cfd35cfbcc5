"""QoS set from parameters (hprm_bridge.rclpy.qos_overriding_options): a publisher's and
a subscription's profile from a params file's qos_overrides, the read-only parameters
declared for them, a callback's refusal; compared with real rclpy's."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = Path(__file__).parent / "nodes" / "qos_overrides_probe.py"
PARAMS = """\
/**:
  ros__parameters:
    qos_overrides:
      /chatter:
        publisher:
          depth: 3
          reliability: best_effort
        subscription_all:
          durability: transient_local
          deadline: 2000000
      /other:
        publisher:
          depth: 9
"""


def _probe(tmp_path, hprm):
    params = tmp_path / "params.yaml"
    params.write_text(PARAMS)
    prelude = "from hprm_bridge import porting; porting.install_imports(); " if hprm else ""
    code = (f"import sys, runpy; {prelude}sys.argv = [{str(PROBE)!r}, {str(params)!r}]; "
            f"runpy.run_path({str(PROBE)!r}, run_name='__main__')")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_qos_overrides_from_a_params_file_set_the_entities_profiles(tmp_path):
    seen = _probe(tmp_path, hprm=True)
    # depth, history, reliability, durability, deadline ns, lifespan ns, avoid conventions
    assert seen["pub"] == [3, "KEEP_LAST", "BEST_EFFORT", "VOLATILE", 0, 0, False]
    assert seen["sub"] == [4, "KEEP_LAST", "RELIABLE", "TRANSIENT_LOCAL", 2000000, 0, False]
    declared = seen["declared"]
    assert declared["/chatter.publisher.reliability"] == "best_effort"
    assert declared["/chatter.subscription_all.liveliness"] == "system_default"
    assert "/chatter.subscription_all.lifespan" not in declared  # no lifespan on a subscription
    assert seen["read_only"] is True and "read-only" in seen["set"]
    assert seen["refused"] == "InvalidQosOverridesError"  # the callback refused depth 9


def test_a_shared_preset_is_not_changed_by_an_override():
    from hprm_bridge.rclpy.node import Node
    from hprm_bridge.rclpy.parameter import Parameter
    from hprm_bridge.rclpy.qos import qos_profile_sensor_data
    from hprm_bridge.rclpy.qos_overriding_options import QoSOverridingOptions

    node = Node("cam", parameter_overrides=[
        Parameter("qos_overrides./image.publisher.depth", value=1)])  # fmt: skip
    options = QoSOverridingOptions.with_default_policies()
    pub = node.create_publisher("sensor_msgs/msg/Image", "image", qos_profile_sensor_data,
                                qos_overriding_options=options)  # fmt: skip
    assert pub.qos_profile.depth == 1 and qos_profile_sensor_data.depth == 5


@pytest.mark.ros2
def test_qos_overrides_match_real_rclpy(tmp_path):
    pytest.importorskip(
        "rclpy", reason="needs a real ROS 2 Humble (rclpy importable; source a Humble install)"
    )
    assert _probe(tmp_path, hprm=True) == _probe(tmp_path, hprm=False)
