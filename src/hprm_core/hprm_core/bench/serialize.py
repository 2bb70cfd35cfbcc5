"""``hprm bench serialize``: serialize/deserialize throughput for a 5 MB
float64 array (paper Fig. 3), every variant in the same run:

- ``adaptive, store``: :func:`serialize` with a store: the array goes out of
  band with one copy into a pre-faulted arena block (``Store.put``); the
  receiver gets a read-only view of that block (:class:`ArenaMap`), no copy;
- ``adaptive, zero-copy produce``: the same, but the array was allocated in
  the store, so serializing copies nothing;
- ``adaptive, streamed``: no store (across hosts): the buffer is handed to the
  transport as a memoryview of the array, not copied;
- ``in-band pickle``: ``pickle.dumps(arr, protocol=5)`` without
  ``buffer_callback``, and ``pickle.loads``;
- ``ROS 2 CDR``: the ROS 2 way (ros2_numpy): a ``sensor_msgs/msg/Image``
  holding the bytes, encoded/decoded to CDR with the ``rosbags`` package, then
  viewed as float64 again. Skipped (with the reason in ``params``) when
  rosbags is not installed; hprm_core does not depend on it.

Throughput is the payload size over the median time of one call. The ratios
are the paper's: out-of-band (store) vs in-band pickle was 49.2x for
serialization and 20.2x for deserialization.
"""

from __future__ import annotations

import gc
import os
import pickle
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from hprm_core import bench
from hprm_core.object_store import ArenaMap, Store
from hprm_core.serialization import deserialize, make_resolver, serialize

SIZE = 5_000_000


def _median_s(fn: Callable[[], Any], repeats: int, after: Callable[[Any], None]) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        after(out)
        del out
    return statistics.median(times)


def _cdr_codec() -> tuple[Callable[[np.ndarray], Any], Callable[[Any], np.ndarray]] | str:
    try:
        from rosbags.typesys import Stores, get_typestore
    except ImportError as e:
        return f"rosbags is not installed ({e})"
    ts = get_typestore(Stores.ROS2_HUMBLE)
    image, header, stamp = (
        ts.types[t]
        for t in ("sensor_msgs/msg/Image", "std_msgs/msg/Header", "builtin_interfaces/msg/Time")
    )
    typename = "sensor_msgs/msg/Image"

    def encode(arr: np.ndarray) -> Any:
        data = arr.view(np.uint8).reshape(-1)
        msg = image(
            header=header(stamp=stamp(sec=0, nanosec=0), frame_id="bench"),
            height=1,
            width=arr.size,
            encoding="64FC1",
            is_bigendian=0,
            step=arr.nbytes,
            data=data,
        )
        return ts.serialize_cdr(msg, typename)

    def decode(raw: Any) -> np.ndarray:
        msg = ts.deserialize_cdr(raw, typename)
        return np.asarray(msg.data).view(np.float64).reshape(msg.height, msg.width)

    return encode, decode


def measure(repeats: int) -> dict[str, Any]:
    arr = np.random.default_rng(0).random(SIZE // 8)
    rows: list[dict[str, Any]] = []
    times: dict[tuple[str, str], float] = {}
    params: dict[str, Any] = {"bytes": arr.nbytes, "dtype": "float64", "repeats": repeats}

    def row(variant: str, op: str, seconds: float) -> None:
        times[(variant, op)] = seconds
        rows.append(
            {
                "variant": variant,
                "op": op,
                "median_us": seconds * 1e6,
                "mb_per_s": arr.nbytes / seconds / 1e6,
            }
        )

    with Store(arena_bytes=4 * SIZE, on_full="error") as store, ArenaMap() as amap:
        for a in store.arenas:
            amap.attach(a.arena_id, os.dup(a.fd), a.size, owner="self")
        resolve = make_resolver(arenas=amap)

        def release_all(_: Any = None) -> None:
            gc.collect(0)
            for r in amap.take_releases():
                store.release(r.ref, "self")

        # adaptive, store: serialize = put + header; deserialize = view
        def ser_store() -> Any:
            s = serialize(arr, store=store)
            s.pack_header()
            return s

        row("adaptive, store", "serialize", _median_s(ser_store, repeats, lambda s: s.release()))
        with serialize(arr, store=store) as s:
            s.share("self", repeats + 1)
            header = s.pack_header()
        deserialize(header, resolve)
        release_all()
        row(
            "adaptive, store",
            "deserialize",
            _median_s(lambda: deserialize(header, resolve), repeats, release_all),
        )
        release_all()

        # zero-copy produce: the array already lives in the store
        produced = store.alloc_array(arr.shape, arr.dtype)
        produced[:] = arr
        box = [produced]
        del produced

        def ser_produced() -> Any:
            s = serialize(box[0], store=store)
            s.pack_header()
            return s

        row(
            "adaptive, zero-copy produce",
            "serialize",
            _median_s(ser_produced, repeats, lambda s: s.release()),
        )
        box.clear()

        # streamed (no store)
        def ser_raw() -> Any:
            s = serialize(arr)
            s.pack_header()
            return s

        row("adaptive, streamed", "serialize", _median_s(ser_raw, repeats, lambda s: s.release()))
        with serialize(arr) as s:
            raw_header, raw = s.pack_header(), [bytes(b) for b in s.raw]
        raw_resolve = make_resolver(raw=raw)
        row(
            "adaptive, streamed",
            "deserialize",
            _median_s(lambda: deserialize(raw_header, raw_resolve), repeats, lambda o: None),
        )

    # in-band pickle
    row(
        "in-band pickle",
        "serialize",
        _median_s(lambda: pickle.dumps(arr, protocol=5), repeats, lambda o: None),
    )
    inband = pickle.dumps(arr, protocol=5)
    row(
        "in-band pickle",
        "deserialize",
        _median_s(lambda: pickle.loads(inband), repeats, lambda o: None),
    )

    codec = _cdr_codec()
    if isinstance(codec, str):
        params["skipped"] = f"ROS 2 CDR: {codec}"
    else:
        encode, decode = codec
        row(
            "ROS 2 CDR (rosbags)",
            "serialize",
            _median_s(lambda: encode(arr), repeats, lambda o: None),
        )
        cdr = bytes(encode(arr))
        assert np.array_equal(decode(cdr).reshape(-1), arr)
        row(
            "ROS 2 CDR (rosbags)",
            "deserialize",
            _median_s(lambda: decode(cdr), repeats, lambda o: None),
        )

    ratios = {}
    for op in ("serialize", "deserialize"):
        base = times[("in-band pickle", op)]
        ratios[f"{op}: adaptive store / in-band pickle"] = base / times[("adaptive, store", op)]
        if ("ROS 2 CDR (rosbags)", op) in times:
            ratios[f"{op}: adaptive store / ROS 2 CDR"] = (
                times[("ROS 2 CDR (rosbags)", op)] / times[("adaptive, store", op)]
            )
    for op in ("serialize", "deserialize"):
        ratios[f"{op}: adaptive streamed / in-band pickle"] = (
            times[("in-band pickle", op)] / times[("adaptive, streamed", op)]
        )
    ratios["serialize: zero-copy produce / in-band pickle"] = (
        times[("in-band pickle", "serialize")] / times[("adaptive, zero-copy produce", "serialize")]
    )
    return bench.result("serialize", params, rows, ratios)


def plot(doc: dict[str, Any], path: str) -> None:
    """Two bar groups would crowd one axis: one bar per (variant, op)."""
    series = {f"{r['variant']}: {r['op']}": ([0], [r["mb_per_s"]]) for r in doc["results"]}
    bench.save_plot(
        path,
        series,
        title=f"Serialization throughput, {doc['params']['bytes'] // 10**6} "
        "MB float64 array (median)",
        xlabel="",
        ylabel="MB/s (log scale)",
        bars=True,
    )


def main(argv: list[str] | None = None) -> int:
    p = bench.parser("serialize", "Serialize/deserialize throughput, 5 MB array (paper Fig. 3)")
    p.add_argument("--plot", metavar="PATH", help="also draw the figure as a PNG")
    p.add_argument(
        "--repeats", type=bench.at_least(1), help="measurements per variant (median reported)"
    )
    args = p.parse_args(argv)
    repeats = args.repeats or (10 if args.quick else 200)
    doc = measure(repeats)
    doc["params"]["quick"] = args.quick
    bench.report(doc, args)
    if args.plot:
        plot(doc, args.plot)
    return 0
