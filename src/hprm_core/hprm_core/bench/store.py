"""``hprm bench store``: time to place a numpy array into shared memory (paper Fig. 2).

For arrays of 1, 5, 10, 25 and 50 MB, in the same run:

- ``hprm put``: :meth:`Store.put`, one ``memcpy`` into a pre-faulted arena
  block that is reused from one message to the next (released after each);
- ``hprm alloc_array``: zero-copy produce, the array is allocated in the arena
  and filled in place by its producer, so "placing" it costs an allocation;
- ``shared_memory``: Python's ``multiprocessing.shared_memory``, the way the
  paper measured it: create a segment, copy the array in, close and unlink,
  every time (each write page-faults fresh memory);
- ``pyarrow mmap``: pyarrow writing to a new memory-mapped file in
  ``/dev/shm`` (create + write + close; unlinked after, untimed), the closest
  thing to Plasma left in pyarrow.

Median over repeats; the ratios compare each variant with ``shared_memory`` at
the largest size (paper: Python shared memory > 40 ms at 50 MB, Plasma < 10 ms).
``--plot PATH`` draws the figure (log-scale latency axis, like the paper's).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from multiprocessing import shared_memory
from typing import Any

import numpy as np

from hprm_core import bench
from hprm_core.object_store import Store

MB = 1_000_000
SIZES_MB = (1, 5, 10, 25, 50)
QUICK_SIZES_MB = (1, 5)


def _median_ms(fn: Callable[[], Any], repeats: int, after: Callable[[Any], None]) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        after(out)
        del out  # before the next call: an allocated array must be gone
    return statistics.median(times) * 1e3


def _shared_memory_write(arr: np.ndarray) -> None:
    shm = shared_memory.SharedMemory(create=True, size=arr.nbytes)
    try:
        dst = np.ndarray(arr.shape, arr.dtype, buffer=shm.buf)
        dst[:] = arr
        del dst
    finally:
        shm.close()
        shm.unlink()


def _pyarrow_write(arr: np.ndarray, path: str) -> None:
    import pyarrow as pa

    mm = pa.create_memory_map(path, arr.nbytes)
    mm.write(pa.py_buffer(arr))
    mm.close()


def measure(sizes_mb: Sequence[int], repeats: int) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    largest = max(sizes_mb) * MB
    try:
        import pyarrow  # noqa: F401

        have_arrow = True
    except ImportError:
        have_arrow = False
    with Store(arena_bytes=2 * largest + (4 << 20), on_full="error") as store:
        for size_mb in sizes_mb:
            arr = np.random.default_rng(0).random(size_mb * MB // 8)
            cases: list[tuple[str, Callable[[], Any], Callable[[Any], None]]] = [
                ("hprm put", lambda a=arr: store.put(a), store.release),
                (
                    "hprm alloc_array",
                    lambda a=arr: store.alloc_array(a.shape, a.dtype),
                    lambda out: None,
                ),
                ("shared_memory", lambda a=arr: _shared_memory_write(a), lambda out: None),
            ]
            if have_arrow:
                path = os.path.join(
                    "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir(),
                    f"hprm-bench-{os.getpid()}",
                )
                cases.append(
                    (
                        "pyarrow mmap",
                        lambda a=arr, p=path: _pyarrow_write(a, p),
                        lambda out, p=path: os.unlink(p),
                    )
                )
            for variant, fn, after in cases:
                after(fn())  # warm-up (first arena touch, imports)
                ms = _median_ms(fn, repeats, after)
                row = {"variant": variant, "size_mb": size_mb, "median_ms": ms}
                if variant != "hprm alloc_array" and ms > 0:  # it moves no bytes
                    row["gb_per_s"] = size_mb * MB / (ms / 1e3) / 1e9
                rows.append(row)
    top = max(sizes_mb)
    at_top = {r["variant"]: r["median_ms"] for r in rows if r["size_mb"] == top}
    base = at_top["shared_memory"]
    ratios = {
        f"shared_memory/{v} at {top} MB": base / ms
        for v, ms in at_top.items()
        if v != "shared_memory" and ms > 0
    }
    params = {"sizes_mb": list(sizes_mb), "repeats": repeats}
    if not have_arrow:
        params["skipped"] = "pyarrow mmap: pyarrow is not installed"
    return bench.result("store", params, rows, ratios)


def plot(doc: dict[str, Any], path: str) -> None:
    series: dict[str, tuple[list[int], list[float]]] = {}
    for r in doc["results"]:
        xs, ys = series.setdefault(r["variant"], ([], []))
        xs.append(r["size_mb"])
        ys.append(max(r["median_ms"], 1e-4))
    bench.save_plot(
        path,
        series,
        title="Writing a numpy array to shared memory (median)",
        xlabel="array size (MB)",
        ylabel="latency (ms, log scale)",
    )


def main(argv: list[str] | None = None) -> int:
    p = bench.parser("store", "Time to place a numpy array into shared memory (paper Fig. 2)")
    p.add_argument("--plot", metavar="PATH", help="also draw the figure as a PNG")
    p.add_argument(
        "--repeats", type=bench.at_least(1), help="measurements per point (median reported)"
    )
    args = p.parse_args(argv)
    sizes = QUICK_SIZES_MB if args.quick else SIZES_MB
    repeats = args.repeats or (5 if args.quick else 30)
    doc = measure(sizes, repeats)
    doc["params"]["quick"] = args.quick
    bench.report(doc, args)
    if args.plot:
        plot(doc, args.plot)
    return 0
