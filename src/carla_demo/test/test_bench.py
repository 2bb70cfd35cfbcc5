"""The carla-ab report's rows (carla_demo.bench) from the sim's per-frame reports."""

import pytest

from carla_demo.bench import _compare, _row


def _run(frames):
    return {"warmup": 1, "frames": frames}


def test_a_run_without_compute_spans_reports_no_transport_rather_than_zero():
    # warm-up frame first, then two measured; no node wrote spans (no transport_ns)
    frames = [{"latency_ns": 9_000_000, "control": [0.1, 0.0, 0.0]},
              {"latency_ns": 2_000_000, "control": [0.2, 0.0, 0.0]},
              {"latency_ns": 4_000_000, "control": [0.3, 0.0, 0.0]}]  # fmt: skip
    row = _row("ros2-shm", [_run(frames)], [f["control"] for f in frames])
    assert row["frames"] == 2 and row["median_ms"] == 3.0
    assert "transport_ms" not in row and "to_sim_ms" not in row
    assert row["controls_equal_floor"] == "yes"


def test_transport_is_the_median_of_the_measured_frames():
    frames = [{"latency_ns": 9_000_000, "transport_ns": 9_000_000, "control": [0.0] * 3}] + [
        {"latency_ns": 5_000_000, "transport_ns": t, "to_sim_ns": t // 4, "control": [0.0] * 3}
        for t in (1_000_000, 3_000_000, 2_000_000)
    ]
    row = _row("hprm-centralized", [_run(frames), _run(frames)], None)
    assert row["frames"] == 6 and row["same_controls_every_run"] == "yes"
    assert row["transport_ms"] == 2.0 and row["to_sim_ms"] == 0.5
    assert row["controls_equal_floor"] == "n/a"


def test_each_row_is_compared_with_every_baseline_of_the_run():
    rows = [{"variant": v, "median_ms": ms}
            for v, ms in [("floor", 10.0), ("ros2", 20.0), ("ros2-bytes", 200.0),
                          ("hprm-centralized", 11.0)]]  # fmt: skip
    by = _compare(rows)
    hprm = by["hprm-centralized"]
    assert hprm["reduction_vs_ros2_pct"] == pytest.approx(45.0)
    assert hprm["reduction_vs_ros2_bytes_pct"] == pytest.approx(94.5)
    assert hprm["overhead_ms"] == pytest.approx(1.0)
    assert "reduction_vs_ros2_pct" not in by["ros2"] and by["ros2"][
        "reduction_vs_ros2_bytes_pct"
    ] == pytest.approx(90.0)
    assert "overhead_ms" not in by["floor"] and by["floor"][
        "reduction_vs_ros2_pct"
    ] == pytest.approx(50.0)
    # without the paper's baseline in the run, no column for it
    alone = _compare(
        [{"variant": "ros2", "median_ms": 20.0}, {"variant": "floor", "median_ms": 10.0}]
    )
    assert "reduction_vs_ros2_bytes_pct" not in alone["floor"]
