"""``hprm bench pingpong``: federation latency and tag-advance rate.

Measured in one run, on one host (so sender and receiver share a clock):

- one-way latency of a 64-byte message between two federates, sent every
  millisecond: physical time at the receiver's reaction minus the stamp taken
  in the sender's reaction; centralized (through the RTI, with its grants) and
  decentralized (peer to peer);
- tag-advance rate of a 3-federate pipeline driven by a fast timer (real time);
- baselines: a raw Unix-socket sender/receiver in plain Python (the floor: no
  runtime at all) and a Cyclone DDS writer/reader with the ``cyclonedds``
  package (reliable, keep-last 10: what ROS 2's transport costs), same
  message size and rate.

Goals: decentralized median within 3x of the raw-socket floor and below Cyclone
DDS; centralized within 2x of decentralized.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from hprm_core import bench

PROGRAM = Path(__file__).with_name("_latency_program.py")


def _stats(samples_ns: list[int]) -> dict[str, float]:
    """Median/p90/p99 after dropping the first 10% (warm-up, same for every variant)."""
    s = sorted(samples_ns[len(samples_ns) // 10 :])
    q = statistics.quantiles(s, n=100, method="inclusive")
    return {
        "n": len(s),  # measured samples (after warm-up)
        "median_us": statistics.median(s) / 1e3,
        "p90_us": q[89] / 1e3,
        "p99_us": q[98] / 1e3,
    }


def _federation(shape: str, coordination: str, period: str, count: int) -> tuple[int, list[int]]:
    """Run the bench program as a real federation; (receiver wall ns, samples)."""
    from hprm_core.launcher import launch

    lines: list[str] = []
    env_before = dict(os.environ)
    os.environ.update(
        PINGPONG_SHAPE=shape,
        PINGPONG_COORDINATION=coordination,
        PINGPONG_PERIOD=period,
        PINGPONG_COUNT=str(count),
    )
    try:
        code = launch(PROGRAM, output=lines.append)
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    text = "\n".join(lines)
    m = re.search(r"SAMPLES (\d+) ([\d,]*)", text)
    if code != 0 or not m:
        raise RuntimeError(f"{shape}/{coordination} federation failed (exit {code}):\n{text}")
    return int(m.group(1)), [int(x) for x in m.group(2).split(",") if x]


_RAW_RECEIVER = r"""
import socket, sys, time
path, count = sys.argv[1], int(sys.argv[2])
srv = socket.socket(socket.AF_UNIX); srv.bind(path); srv.listen(1)
print("ready", flush=True)
conn, _ = srv.accept()
buf = bytearray(64); view = memoryview(buf); out = []
for _ in range(count):
    got = 0
    while got < 64:
        got += conn.recv_into(view[got:])
    out.append(time.time_ns() - int.from_bytes(buf[:8], "little"))
print(",".join(map(str, out)), flush=True)
"""


def _raw_socket(count: int, period_s: float, tmp: str) -> list[int]:
    path = os.path.join(tmp, "raw.sock")
    rx = subprocess.Popen(
        [sys.executable, "-c", _RAW_RECEIVER, path, str(count)], stdout=subprocess.PIPE, text=True
    )
    assert rx.stdout is not None
    rx.stdout.readline()
    import socket

    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    pad = b"x" * 56
    next_t = time.monotonic()
    for _ in range(count):
        next_t += period_s
        while time.monotonic() < next_t:
            time.sleep(max(0.0, next_t - time.monotonic()))
        s.sendall(time.time_ns().to_bytes(8, "little") + pad)
    out = rx.stdout.readline()
    s.close()
    rx.wait(timeout=30)
    return [int(x) for x in out.strip().split(",") if x]


_DDS_RECEIVER = r"""
import sys, time
from dataclasses import dataclass
from cyclonedds.domain import DomainParticipant
from cyclonedds.topic import Topic
from cyclonedds.sub import DataReader
from cyclonedds.core import Qos, Policy, WaitSet, ReadCondition
from cyclonedds.core import SampleState, ViewState, InstanceState
from cyclonedds.idl import IdlStruct
from cyclonedds.util import duration

@dataclass
class Ping(IdlStruct, typename="hprm_bench::Ping"):
    stamp: int
    seq: int
    pad: str

count = int(sys.argv[1])
qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepLast(10))
dp = DomainParticipant(int(sys.argv[2]))
reader = DataReader(dp, Topic(dp, "hprm_bench_ping", Ping), qos=qos)
ws = WaitSet(dp)
ws.attach(ReadCondition(reader, SampleState.Any | ViewState.Any | InstanceState.Any))
print("ready", flush=True)
out = []
idle_since = time.monotonic()
while len(out) < count and time.monotonic() - idle_since < 3:
    ws.wait(duration(milliseconds=200))
    for s in reader.take(N=100):
        idle_since = time.monotonic()
        if isinstance(s, Ping):
            out.append(time.time_ns() - s.stamp)
print(",".join(map(str, out)), flush=True)
"""

_DDS_SENDER = r"""
import sys, time
from dataclasses import dataclass
from cyclonedds.domain import DomainParticipant
from cyclonedds.topic import Topic
from cyclonedds.pub import DataWriter
from cyclonedds.core import Qos, Policy
from cyclonedds.idl import IdlStruct
from cyclonedds.util import duration

@dataclass
class Ping(IdlStruct, typename="hprm_bench::Ping"):
    stamp: int
    seq: int
    pad: str

count, period = int(sys.argv[1]), float(sys.argv[3])
qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepLast(10))
dp = DomainParticipant(int(sys.argv[2]))
writer = DataWriter(dp, Topic(dp, "hprm_bench_ping", Ping), qos=qos)
deadline = time.monotonic() + 10
while not writer.get_matched_subscriptions() and time.monotonic() < deadline:
    time.sleep(0.01)
time.sleep(0.2)
pad = "x" * 40
next_t = time.monotonic()
for k in range(count):
    next_t += period
    while time.monotonic() < next_t:
        time.sleep(max(0.0, next_t - time.monotonic()))
    writer.write(Ping(stamp=time.time_ns(), seq=k, pad=pad))
time.sleep(0.5)
"""

_DDS_CONFIG = (
    "<CycloneDDS><Domain><General><Interfaces>"
    '<NetworkInterface address="127.0.0.1"/></Interfaces>'
    "<AllowMulticast>false</AllowMulticast></General>"
    "<Discovery><ParticipantIndex>auto</ParticipantIndex><Peers>"
    '<Peer address="127.0.0.1"/></Peers></Discovery></Domain></CycloneDDS>'
)


def _cyclone(count: int, period_s: float) -> list[int] | str:
    try:
        import cyclonedds  # noqa: F401
    except ImportError:
        return "cyclonedds not installed (pip install cyclonedds)"
    env = dict(os.environ, CYCLONEDDS_URI=_DDS_CONFIG)
    domain = str(100 + os.getpid() % 100)
    rx = subprocess.Popen(
        [sys.executable, "-c", _DDS_RECEIVER, str(count), domain],
        stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert rx.stdout is not None
    if rx.stdout.readline().strip() != "ready":
        rx.wait()
        return "the Cyclone DDS receiver failed to start"
    tx = subprocess.run(
        [sys.executable, "-c", _DDS_SENDER, str(count), domain, str(period_s)],
        env=env, timeout=120, capture_output=True, text=True,
    )  # fmt: skip
    try:
        out, _ = rx.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        rx.kill()
        rx.wait()
        return f"Cyclone DDS receiver timed out ({tx.stderr.strip()[-200:]})"
    samples = [int(x) for x in out.strip().split(",") if x]
    if len(samples) < 2:
        return f"Cyclone DDS delivered {len(samples)} samples ({tx.stderr.strip()[-200:]})"
    return samples


def measure(count: int, pipeline_tags: int) -> dict:
    import tempfile

    rows: list[dict] = []
    ratios: dict[str, float] = {}
    medians: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="hprm-bench-") as tmp:
        raw = _stats(_raw_socket(count, 0.001, tmp))
    rows.append({"variant": "raw unix socket (floor)", "metric": "one-way latency", **raw})
    medians["raw"] = raw["median_us"]
    dds = _cyclone(count, 0.001)
    if isinstance(dds, str):
        rows.append({"variant": "cyclone dds", "metric": f"skipped: {dds}"})
    else:
        st = _stats(dds)
        rows.append({"variant": "cyclone dds (reliable)", "metric": "one-way latency", **st})
        medians["dds"] = st["median_us"]
    for coordination in ("decentralized", "centralized"):
        _, samples = _federation("latency", coordination, "1 ms", count)
        st = _stats(samples)
        rows.append({"variant": f"hprm {coordination}", "metric": "one-way latency", **st})
        medians[coordination] = st["median_us"]
    for coordination in ("decentralized", "centralized"):
        wall, samples = _federation("pipeline", coordination, "50 us", pipeline_tags)
        rate = len(samples) / (wall / 1e9) if wall else 0.0
        rows.append(
            {
                "variant": f"hprm {coordination} 3-federate pipeline",
                "metric": "tag advances/s",
                "n": len(samples),
                "tags_per_s": rate,
                "median_us": statistics.median(samples) / 1e3,
            }
        )
    ratios["decentralized/raw median"] = medians["decentralized"] / medians["raw"]
    ratios["centralized/decentralized median"] = medians["centralized"] / medians["decentralized"]
    if "dds" in medians:
        ratios["decentralized/cyclone median"] = medians["decentralized"] / medians["dds"]
    params = {
        "messages": count,
        "payload_bytes": 64,
        "period": "1 ms",
        "pipeline_tags": pipeline_tags,
    }
    return bench.result("pingpong", params, rows, ratios)


def main(argv: list[str] | None = None) -> int:
    p = bench.parser("pingpong", "Federate latency and tag-advance rate vs raw sockets, DDS")
    args = p.parse_args(argv)
    count, tags = (300, 2_000) if args.quick else (2_000, 10_000)
    doc = measure(count, tags)
    doc["params"]["quick"] = args.quick
    bench.report(doc, args)
    return 0
