"""``hprm bench services --quick``: every variant runs the two node files and
reports every call answered; with rclpy importable, its row and the ratios are
there too. Figures are not judged here (a benchmark's job)."""

import json
import subprocess
import sys

import pytest

from hprm_bridge.bench import rclpy_missing, services


@pytest.mark.slow
def test_quick_run_writes_one_row_per_variant_with_every_call_answered(tmp_path):
    out, plot = tmp_path / "services.json", tmp_path / "services.png"
    r = subprocess.run(
        [sys.executable, "-m", "hprm_core.cli", "bench", "services", "--quick",
         "--json", str(out), "--plot", str(plot)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    want = list(services.VARIANTS)
    rclpy = rclpy_missing() is None
    if not rclpy:
        want.remove("ros2 rclpy")
        assert "rclpy is not importable" in doc["params"]["rclpy"]
    assert [row["variant"] for row in doc["results"]] == want
    for row in doc["results"]:
        assert row["answered"] == f"{services.QUICK_CALLS}/{services.QUICK_CALLS}", row
        assert 0 < row["median_us"] <= row["p90_us"] <= row["max_us"], row
    assert bool(doc.get("ratios")) == rclpy
    assert plot.stat().st_size > 1000


def test_round_trips_are_read_from_either_kind_of_output():
    """The launcher prefixes a federate's lines with its name; a plain process does not.
    The warm-up calls are dropped."""
    lines = [f"RTT {n} {1000 * n}" for n in range(1, services.WARMUP + 3)]
    plain = "\n".join(lines)
    ported = "\n".join(f"[caller_node] {line}" for line in lines)
    assert (
        services._round_trips(plain)
        == services._round_trips(ported)
        == [1000 * (services.WARMUP + 1), 1000 * (services.WARMUP + 2)]
    )
    row = services._row("x", [3000, 1000, 2000], 3 + services.WARMUP)
    assert (row["median_us"], row["max_us"], row["answered"]) == (2.0, 3.0, "3/3")
