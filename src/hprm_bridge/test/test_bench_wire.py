"""``hprm bench ros2-wire --quick --json`` runs and writes the shared JSON shape."""

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_bench_quick_json(tmp_path):
    out = tmp_path / "ros2-wire.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "hprm_core.cli",
            "bench",
            "ros2-wire",
            "--quick",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["benchmark"] == "ros2-wire" and doc["params"]["quick"] is True
    rows = doc["results"]
    hprm = [row for row in rows if row["variant"] == "hprm wire"]
    assert [row["size"] for row in hprm] == ["1 KB", "1 MB", "10 MB"]
    for row in rows:
        if "skipped" in row:
            assert row["variant"] == "dora-rs ros2" and row["skipped"]
            continue
        for key in ("p50_ms", "p90_ms", "min_ms", "mean_ms"):
            assert isinstance(row[key], float) and row[key] > 0, row
        assert row["n"] >= 1
    dora = [row for row in rows if row["variant"] == "dora-rs ros2"]
    assert len(dora) == 3
    if not any("skipped" in row for row in dora):
        assert set(doc["ratios"]) == {f"dora/hprm p50 {s}" for s in ("1 KB", "1 MB", "10 MB")}
    assert "hprm wire" in r.stdout  # the table was printed
