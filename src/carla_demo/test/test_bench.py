"""The carla-ab report's rows (carla_demo.bench) from the sim's per-frame reports."""

from carla_demo.bench import _row


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
