"""hprm_bridge's benchmarks (``hprm bench NAME``), one module each:
``ros2-wire`` (:mod:`.wire`), ``ported-pipeline`` (:mod:`.ported_pipeline`),
``bridge`` (:mod:`.bridge`), ``replay`` (:mod:`.replay`) and ``services``
(:mod:`.services`)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Mapping

# The plain ROS 2 baselines (real rclpy on rmw_cyclonedds) set up as the ROS 2 documentation's
# "DDS tuning information" page advises for large messages: a socket receive buffer that
# holds them. With Cyclone's own (2 MB on the 2-core VM) a large sample's fragments overflow
# it now and then and the sample waits for the reliable protocol's repair, ~100-200 ms: the
# CARLA demo's frames (1.7 + 0.55 MB) had a p99 of 219-248 ms against 66-68 ms tuned, and the
# example pipeline's 6 MB images took 129 ms against 22.5 ms (docs/carla_ab.md,
# docs/benchmarks.md). ``max``: as much as the kernel allows up to it (``net.core.rmem_max``
# caps it, silently); a ``min`` above that cap would make every node fail to start.
ROS2_DDS_XML = (
    "<CycloneDDS><Domain><Internal>"
    '<SocketReceiveBufferSize min="default" max="8MiB"/>'
    "</Internal></Domain></CycloneDDS>"
)


def ros2_baseline_env(environ: Mapping[str, str]) -> dict[str, str]:
    """A plain ROS 2 baseline process's environment: :data:`ROS2_DDS_XML`, then the user's
    own ``CYCLONEDDS_URI`` (Cyclone reads the list in order: the user's settings win)."""
    user = environ.get("CYCLONEDDS_URI", "").strip()
    return dict(environ, CYCLONEDDS_URI=ROS2_DDS_XML + (f",{user}" if user else ""))


def rclpy_missing() -> str | None:
    """Why the ``ros2 rclpy`` baselines cannot run here, or None. Asked of a fresh
    interpreter: importing rclpy into the benchmark's own process would load ROS into it
    (and a Humble sourced for another Python fails only there)."""
    r = subprocess.run([sys.executable, "-c", "import rclpy"], capture_output=True)
    if r.returncode != 0:
        return "rclpy is not importable: source a ROS 2 Humble (source /opt/ros/humble/setup.bash)"
    return None


def stop_processes(
    procs: Iterable[subprocess.Popen], *, terminate: bool = True, timeout: float = 20
) -> None:
    """End the plain ROS 2 node processes a benchmark started (they spin forever):
    SIGTERM to all (``terminate=False``: they were told to stop otherwise), then
    SIGKILL to any still there after ``timeout`` s."""
    procs = list(procs)
    for p in procs:
        if terminate:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
