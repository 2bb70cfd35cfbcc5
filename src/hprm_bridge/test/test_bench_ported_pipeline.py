"""``hprm bench ported-pipeline --quick``: every variant runs the example's
node files and reports each frame; with rclpy importable, its rows and the
ratios are there too. Figures are not judged here (a benchmark's job)."""

import json
import subprocess
import sys

import pytest

from hprm_bridge.bench import ported_pipeline


def _rclpy_importable():
    return ported_pipeline._rclpy_missing() is None


@pytest.mark.slow
def test_quick_run_writes_one_row_per_variant_with_every_frame(tmp_path):
    out, plot = tmp_path / "pp.json", tmp_path / "pp.png"
    r = subprocess.run(
        [sys.executable, "-m", "hprm_core.cli", "bench", "ported-pipeline", "--quick",
         "--sizes", "0.3 MB", "--json", str(out), "--plot", str(plot)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    variants = [row["variant"] for row in doc["results"]]
    want = [v for v in ported_pipeline.VARIANTS if _rclpy_importable() or "rclpy" not in v]
    if not _rclpy_importable():
        assert "rclpy is not importable" in doc["params"]["rclpy"]
    assert variants == want
    for row in doc["results"]:
        assert row["size"] == "0.3 MB" and row["frames"] == ported_pipeline.QUICK_FRAMES, row
        assert 0 < row["median_ms"] <= row["p90_ms"] <= row["max_ms"], row
    assert bool(doc.get("ratios")) == _rclpy_importable()
    assert plot.stat().st_size > 1000


def test_an_unknown_size_is_refused_by_name():
    r = subprocess.run(
        [sys.executable, "-m", "hprm_core.cli", "bench", "ported-pipeline", "--sizes", "7 MB"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2 and "--sizes: unknown size in '7 MB'" in r.stderr, r.stderr
