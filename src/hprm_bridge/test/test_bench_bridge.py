"""``hprm bench bridge --quick``: every relay carries every message of both
sizes, the bursts report a consistent rate ladder, the gateway was self-paced, and
the JSON has the shared shape (figures are the benchmark's job)."""

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_quick_run_reports_both_relays_at_both_sizes(tmp_path):
    out = tmp_path / "bridge.json"
    r = subprocess.run(
        [sys.executable, "-m", "hprm_core.cli", "bench", "bridge", "--quick", "--json", str(out),
         "--plot", str(tmp_path / "bridge.png")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["benchmark"] == "bridge" and doc["params"]["quick"] is True
    rows = doc["results"]
    # the gateway on both backends where rclpy is importable (a Humble sourced)
    backends = ["wire", "rclpy"] if doc["params"]["plain_relay"] == "rclpy" else ["wire"]
    relays = ["ros2 relay"] + [f"hprm relay via gateway ({b})" for b in backends]

    def relay(variant):  # the plain relay's name says which client it ran on
        return variant if variant.startswith("hprm") else variant.split(" (")[0]

    assert [(relay(row["variant"]), row["size"]) for row in rows] == [
        (v, size) for size in ("1 KB", "6 MB") for v in relays]  # fmt: skip
    for row in rows:
        assert row["received"] == row["sent"] == doc["params"]["count"], row
        assert 0 < row["median_ms"] <= row["p90_ms"], row
        # the bursts climb the ladder until one is not kept up: the first rate
        # not kept up follows the last one kept up
        ladder = ["-", *doc["params"]["rates_hz"][row["size"]], "-"]
        kept, failed = row["keeps_up_hz"], row["falls_behind_hz"]
        assert (kept, failed) != ("-", "-"), row
        assert ladder.index(failed, 1) == ladder.index(kept) + 1, row
    assert (tmp_path / "bridge.png").stat().st_size > 0
    assert set(doc["ratios"]) == {f"gateway ({b}) added / one DDS hop, {s}"
                                  for s in ("1 KB", "6 MB") for b in backends}  # fmt: skip
    # the relay only answers: the gateway grants itself its tags, on either backend
    granted = doc["gateway_self_granted_tags"]
    assert set(granted) == {f"hprm relay via gateway ({b})" for b in backends}, granted
    assert all(tags > 0 for tags in granted.values()), granted
