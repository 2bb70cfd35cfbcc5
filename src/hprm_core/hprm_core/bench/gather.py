"""``hprm bench gather``: broadcast + gather of large arrays (paper Fig. 4).

A server broadcasts an S MB float64 array to 4 clients; each client returns an
array of the same size; the server waits for all 4, then starts the next
round. ``--client forward`` returns what was received (pure middleware cost);
``--client copy`` returns a fresh copy (the paper's workload). Round latency:
median and p90 over the measured rounds, after warm-up rounds. Variants, all
in one run:

- ``hprm-centralized`` / ``hprm-decentralized``: a real federation (RTI plus 5
  federate processes), :mod:`hprm_core.bench._gather_program`;
- ``shm-pickle``: the paper's "ROS 2 (Shared Memory)" variant: pickle into a
  new ``multiprocessing.shared_memory`` block, send its name over a socket;
- ``pickle-socket``: in-band pickle over Unix sockets;
- ``ros2-wire``: ``sensor_msgs/msg/Image`` over DDS with hprm_bridge's ROS 2
  wire client, found through the ``hprm.baselines`` entry point (hprm_core
  never imports hprm_bridge); skipped with the reason when absent;
- ``copy floor`` (``--client copy``): the 4 copies alone, in one process.

Memory: for the HPRM variants the bench samples the federation's total PSS
(proportional set size: a shared page counts once across processes) and
reports its rise over the run relative to the payload size.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from hprm_core import bench

PROGRAM = Path(__file__).with_name("_gather_program.py")
CLIENTS = 4
SIZES_MB = (1, 5, 10, 25, 50)


def _summary(latencies_ns: list[int], warmup: int) -> dict[str, float]:
    xs = latencies_ns[warmup:] or latencies_ns
    spread = bench.spread(xs, "ms", 1e6)
    return {"rounds": len(xs), "median_ms": spread["median_ms"], "p90_ms": spread["p90_ms"]}


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _hprm(coordination: str, mb: float, rounds: int, client: str) -> tuple[list[int], float]:
    """(round latencies ns, federation PSS rise in MB) for one federation run."""
    from hprm_core.launcher import Launch

    lines: list[str] = []
    env = {
        "GATHER_COORDINATION": coordination,
        "GATHER_MB": str(mb),
        "GATHER_ROUNDS": str(rounds),
        "GATHER_CLIENT": client,
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    started: list[float] = []

    def output(line: str) -> None:
        lines.append(line)
        if not started and "federation started" in line:
            started.append(time.monotonic())

    try:
        run = Launch(PROGRAM, output=output)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    samples: list[tuple[float, int]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            pids = [p.pid for name, p in run.procs.items() if p.poll() is None]
            samples.append((time.monotonic(), sum(_pss_kb(pid) for pid in pids)))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = run.wait(raise_interrupt=True)  # Ctrl-C: the whole benchmark stops
    stop.set()
    sampler.join()
    text = "\n".join(lines)
    m = re.search(r"LATENCIES ([\d,]+)", text)
    if code != 0 or not m:
        raise RuntimeError(f"hprm-{coordination} gather failed (exit {code}):\n{text[-3000:]}")
    # Baseline: the running federation (stores created, modules imported)
    # before any payload exists: the server sleeps 0.3 s after the start; the
    # rise is what the payload traffic added on top.
    t0 = started[0] if started else 0.0
    before = [kb for t, kb in samples if t0 + 0.1 <= t <= t0 + 0.25]
    during = [kb for t, kb in samples if t > t0 + 0.25]
    baseline = max(before) if before else 0
    rise_mb = (max(during) - baseline) / 1024 if before and during else float("nan")
    return [int(x) for x in m.group(1).split(",")], rise_mb


# --- baselines in plain Python: a server (this process) and 4 client processes ---

_CLIENT = r"""
import os, pickle, socket, struct, sys
from multiprocessing import resource_tracker, shared_memory
import numpy as np

def untrack(shm):
    # The server owns (and unlinks) every block; Python < 3.13 would otherwise
    # have this process's resource tracker unlink blocks it merely attached.
    resource_tracker.unregister(shm._name, "shared_memory")
path, mode, client = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(path)
except OSError:  # no server: interrupted while starting this client (and gone with it)
    sys.exit(0)
LEN = struct.Struct("<Q")

def recv_exact(n):
    buf = bytearray(n); view = memoryview(buf); got = 0
    while got < n:
        k = s.recv_into(view[got:])
        if not k: sys.exit(0)
        got += k
    return buf

while True:
    n, = LEN.unpack(recv_exact(8))
    msg = recv_exact(n)
    if mode == "pickle-socket":
        arr = pickle.loads(msg)
        out = arr if client == "forward" else arr.copy()
        data = pickle.dumps(out, protocol=5)
        s.sendall(LEN.pack(len(data)) + data)
    else:  # shm-pickle: the message is a shared-memory block's name
        shm = shared_memory.SharedMemory(name=msg.decode())
        untrack(shm)
        arr = pickle.loads(shm.buf)
        if client == "forward":
            reply = msg
        else:
            data = pickle.dumps(arr.copy(), protocol=5)
            out = shared_memory.SharedMemory(create=True, size=len(data))
            untrack(out)
            out.buf[: len(data)] = data
            reply = out.name.encode()
            out.close()
        del arr
        shm.close()
        s.sendall(LEN.pack(len(reply)) + reply)
"""


def _python_baseline(mode: str, mb: float, rounds: int, client: str) -> list[int]:
    import pickle
    import socket
    import struct
    from multiprocessing import shared_memory

    length = struct.Struct("<Q")
    payload = np.arange(int(mb * 1_000_000) // 8, dtype=np.float64)
    with tempfile.TemporaryDirectory(prefix="hprm-gather-") as tmp:
        path = os.path.join(tmp, "server.sock")
        srv = socket.socket(socket.AF_UNIX)
        srv.bind(path)
        srv.listen(CLIENTS)
        # Each client in a session of its own: Ctrl-C reaches this process only, which
        # stops them (no traceback from each); a client whose server died sees EOF, and
        # one whose server is gone before it connects (Ctrl-C inside Popen: a client
        # started but not yet in procs, so not killed; seen in CI) exits quietly.
        procs: list[subprocess.Popen[bytes]] = []
        conns: list[socket.socket] = []
        blocks: list[shared_memory.SharedMemory] = []

        def recv_exact(c: socket.socket, n: int) -> bytearray:
            buf = bytearray(n)
            view = memoryview(buf)
            got = 0
            while got < n:
                k = c.recv_into(view[got:])
                if not k:
                    raise RuntimeError(f"{mode} client died")
                got += k
            return buf

        latencies = []
        try:
            for _ in range(CLIENTS):
                procs.append(subprocess.Popen([sys.executable, "-c", _CLIENT, path, mode, client],
                                              start_new_session=True))  # fmt: skip
            conns = [srv.accept()[0] for _ in range(CLIENTS)]
            for _ in range(rounds):
                t0 = time.perf_counter_ns()
                if mode == "pickle-socket":
                    data = pickle.dumps(payload, protocol=5)
                    frame = [length.pack(len(data)), data]
                else:
                    data = pickle.dumps(payload, protocol=5)
                    shm = shared_memory.SharedMemory(create=True, size=len(data))
                    shm.buf[: len(data)] = data
                    blocks.append(shm)
                    frame = [length.pack(len(shm.name)), shm.name.encode()]
                for c in conns:
                    c.sendall(b"".join(frame))
                for c in conns:
                    (n,) = length.unpack(recv_exact(c, 8))
                    reply = recv_exact(c, n)
                    if mode == "pickle-socket":
                        back = pickle.loads(reply)
                    else:
                        name = reply.decode()
                        if name != blocks[0].name:
                            other = shared_memory.SharedMemory(name=name)
                            back = pickle.loads(other.buf)
                            blocks.append(other)
                        else:
                            back = pickle.loads(blocks[0].buf)
                    if back.shape != payload.shape:
                        raise RuntimeError(f"{mode}: wrong reply size")
                    del back
                latencies.append(time.perf_counter_ns() - t0)
                while blocks:
                    b = blocks.pop()
                    b.close()
                    b.unlink()
        except BaseException:
            for p in procs:  # interrupted, or a client failed: no waiting for the rest
                p.kill()
            raise
        finally:
            for b in blocks:  # a round cut short: its blocks still named in /dev/shm
                b.close()
                b.unlink()
            for c in conns:
                c.close()
            srv.close()
            for p in procs:
                p.wait(timeout=30)
    return latencies


def _copy_floor(mb: float, rounds: int) -> list[int]:
    payload = np.arange(int(mb * 1_000_000) // 8, dtype=np.float64)
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        copies = [payload.copy() for _ in range(CLIENTS)]
        out.append(time.perf_counter_ns() - t0)
        del copies
    return out


def _ros2_wire() -> Callable[..., list[int]] | str:
    eps = {ep.name: ep for ep in metadata.entry_points(group="hprm.baselines")}
    if "ros2-wire-gather" not in eps:
        return "hprm_bridge is not installed (it provides the ros2-wire baseline)"
    return eps["ros2-wire-gather"].load()


def measure(sizes: tuple[float, ...], rounds: int, warmup: int, client: str) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    ratios: dict[str, float] = {}
    med: dict[tuple[str, float], float] = {}
    ros2 = _ros2_wire()
    for mb in sizes:
        n = rounds + warmup
        variants: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
            ("hprm-centralized", _hprm, ("centralized", mb, n, client)),
            ("hprm-decentralized", _hprm, ("decentralized", mb, n, client)),
            ("shm-pickle", _python_baseline, ("shm-pickle", mb, n, client)),
            ("pickle-socket", _python_baseline, ("pickle-socket", mb, n, client)),
        ]
        if callable(ros2):
            variants.append(("ros2-wire", ros2, (mb, n, client)))
        if client == "copy":
            variants.append(("copy floor (4 copies)", _copy_floor, (mb, n)))
        for name, fn, fn_args in variants:
            print(f"gather: {name} {mb:g} MB ...", file=sys.stderr, flush=True)
            out = fn(*fn_args)
            latencies, pss_rise = out if fn is _hprm else (out, None)
            stats = _summary(latencies, warmup)
            row = {"variant": name, "size_mb": mb, **stats}
            if pss_rise is not None:
                row["pss_rise_mb"] = pss_rise
                row["pss_rise_x_payload"] = pss_rise / mb
            rows.append(row)
            med[(name, mb)] = stats["median_ms"]
        if not callable(ros2) and mb == sizes[0]:
            rows.append({"variant": "ros2-wire", "size_mb": mb, "skipped": ros2})
    big, small = max(sizes), min(sizes)
    for coord in ("centralized", "decentralized"):
        h = med[(f"hprm-{coord}", big)]
        ratios[f"hprm-{coord} {big:g}MB/{small:g}MB"] = h / med[(f"hprm-{coord}", small)]
        ratios[f"shm-pickle/hprm-{coord} at {big:g}MB"] = med[("shm-pickle", big)] / h
        if ("ros2-wire", big) in med:
            ratios[f"ros2-wire/hprm-{coord} at {big:g}MB"] = med[("ros2-wire", big)] / h
        if client == "copy":
            floor = med[("copy floor (4 copies)", big)]
            ratios[f"hprm-{coord}/copy floor at {big:g}MB"] = h / floor
    params = {"sizes_mb": list(sizes), "rounds": rounds, "warmup": warmup, "client": client}
    return bench.result("gather", params, rows, ratios)


def main(argv: list[str] | None = None) -> int:
    p = bench.parser("gather", "Broadcast + gather of large arrays to 4 clients (paper Fig. 4)")
    p.add_argument("--client", choices=["forward", "copy"], default="forward",
                   help="what each client sends back: the array it got (forward, default: "
                   "by reference where the transport allows) or a copy it made")  # fmt: skip
    p.add_argument("--sizes", help="comma-separated MB sizes (default 1,5,10,25,50)")
    p.add_argument("--plot", metavar="PATH", help="write a PNG (log-scale latency vs size)")
    args = p.parse_args(argv)
    sizes = tuple(float(x) for x in args.sizes.split(",")) if args.sizes else SIZES_MB
    if args.quick and not args.sizes:
        sizes = (1, 10)
    rounds, warmup = (5, 2) if args.quick else (10, 3)
    doc = measure(sizes, rounds, warmup, args.client)
    doc["params"]["quick"] = args.quick
    bench.report(doc, args)
    if args.plot:
        series: dict[str, tuple[list[float], list[float]]] = {}
        for row in doc["results"]:
            if "median_ms" in row:
                xs, ys = series.setdefault(row["variant"], ([], []))
                xs.append(row["size_mb"])
                ys.append(row["median_ms"])
        bench.save_plot(
            args.plot,
            series,
            title=f"broadcast + gather, 4 clients, --client {args.client}",
            xlabel="payload (MB)",
            ylabel="round latency, median (ms)",
        )
    return 0
