"""`hprm bench store` and `hprm bench serialize` run end to end as real
subprocesses (--quick): JSON shape, positive numbers, ratios, the PNG, and
nothing left behind in /dev/shm."""

import json
import os
import subprocess
import sys

import pytest

from hprm_core.testing import leaked_shm


def hprm(*args, timeout=240):
    return subprocess.run(
        [sys.executable, "-m", "hprm_core.cli", *map(str, args)],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def run_bench(name, tmp_path):
    shm0 = set(os.listdir("/dev/shm"))
    out, png = tmp_path / f"{name}.json", tmp_path / f"{name}.png"
    r = hprm("bench", name, "--quick", "--json", out, "--plot", png)
    assert r.returncode == 0, r.stderr
    assert leaked_shm(shm0) == set()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    doc = json.loads(out.read_text())
    assert doc["benchmark"] == name and doc["params"]["quick"] is True
    assert f"benchmark: {name}" in r.stdout and "ratio " in r.stdout
    return doc


def test_bench_store_quick(tmp_path):
    doc = run_bench("store", tmp_path)
    sizes = doc["params"]["sizes_mb"]
    rows = {(x["variant"], x["size_mb"]): x for x in doc["results"]}
    variants = {"hprm put", "hprm alloc_array", "shared_memory", "pyarrow mmap"}
    assert {v for v, _ in rows} == variants
    assert set(rows) == {(v, s) for v in variants for s in sizes}
    for x in doc["results"]:
        assert x["median_ms"] > 0
        assert x["variant"] == "hprm alloc_array" or x["gb_per_s"] > 0
    top = max(sizes)
    assert set(doc["ratios"]) == {
        f"shared_memory/{v} at {top} MB" for v in variants - {"shared_memory"}
    }
    assert all(v > 0 for v in doc["ratios"].values())


def test_bench_serialize_quick(tmp_path):
    doc = run_bench("serialize", tmp_path)
    assert doc["params"]["bytes"] == 5_000_000
    got = {(x["variant"], x["op"]) for x in doc["results"]}
    for variant in ("adaptive, store", "adaptive, streamed", "in-band pickle"):
        assert {(variant, "serialize"), (variant, "deserialize")} <= got
    assert ("adaptive, zero-copy produce", "serialize") in got
    for x in doc["results"]:
        assert x["median_us"] > 0 and x["mb_per_s"] > 0
    assert doc["ratios"]["serialize: adaptive store / in-band pickle"] > 0
    assert doc["ratios"]["deserialize: adaptive store / in-band pickle"] > 0
    # out-of-band without a copy must beat pickling 5 MB in-band
    assert doc["ratios"]["serialize: zero-copy produce / in-band pickle"] > 1
    try:
        import rosbags  # noqa: F401
    except ImportError:
        assert "rosbags" in doc["params"]["skipped"]
    else:
        assert ("ROS 2 CDR (rosbags)", "serialize") in got
        assert doc["ratios"]["deserialize: adaptive store / ROS 2 CDR"] > 0


@pytest.mark.parametrize("name", ["store", "serialize"])
def test_bench_is_listed(name):
    r = hprm("bench")
    assert name in r.stdout + r.stderr
