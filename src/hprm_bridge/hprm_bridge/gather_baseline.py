"""The ``ros2-wire`` variant of ``hprm bench gather``: the same broadcast +
gather workload as plain ROS 2 nodes would run it, through this package's ROS 2
wire client (``sensor_msgs/msg/Image`` in CDR over Cyclone DDS, reliable,
default QoS). hprm_core finds it through the ``hprm.baselines`` entry point, so
it never imports hprm_bridge.

The server (this process) publishes the S MB payload on ``/gather/request``;
4 client processes each answer on ``/gather/reply`` (``forward``: the bytes
they received; ``copy``: a fresh copy), tagged with their index in
``header.frame_id``; a round ends when all 4 answers are in.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

from hprm_bridge.bench import stop_processes
from hprm_bridge.wire.dds_config import random_domain_id

CLIENTS = 4
_REQUEST = "/gather/request"
_REPLY = "/gather/reply"
_POLL_S = 0.5  # how often an idle client looks for its server
_IDLE_S = 60  # an idle client gives up after this long without a request


def _image(node, data: np.ndarray, frame_id: str):
    raw = data.view(np.uint8).reshape(-1)
    img = node.types.new(
        "sensor_msgs/msg/Image",
        height=1,
        width=raw.size,
        step=raw.size,
        encoding="mono8",
        data=raw,
    )
    img.header.frame_id = frame_id
    return img


def _client(index: int, domain: int, mode: str) -> None:
    from hprm_bridge.wire import Node

    server = os.getppid()
    with Node(f"gather_client_{index}", domain_id=domain, localhost_only=True) as node:
        sub = node.create_subscription("sensor_msgs/msg/Image", _REQUEST)
        pub = node.create_publisher("sensor_msgs/msg/Image", _REPLY)
        try:
            print("ready", flush=True)
        except BrokenPipeError:  # the server is gone (interrupted while starting this client)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no 2nd at exit
            return
        idle_since = time.monotonic()
        while True:
            msg = sub.take(timeout_sec=_POLL_S)
            if msg is None:
                # In a session of its own, no Ctrl-C reaches this client: it ends when its
                # server is gone (this process is then another's child) or silent too long.
                if os.getppid() != server or time.monotonic() - idle_since > _IDLE_S:
                    return
                continue
            if msg.header.frame_id == "stop":
                return
            idle_since = time.monotonic()
            data = msg.data if mode == "forward" else np.array(msg.data, copy=True)
            pub.publish(_image(node, data, str(index)))


def gather(mb: float, rounds: int, client: str) -> list[int]:
    """Round latencies in ns (the ``hprm.baselines`` entry point)."""
    from hprm_bridge.wire import Node

    domain = random_domain_id()  # ports below the ephemeral range
    # Each client in a session of its own, as the launcher's federates: a terminal's Ctrl-C
    # reaches this server, which stops them (stop_processes), never a client still
    # importing (seen: its KeyboardInterrupt traceback from `import numpy`). Started one by
    # one inside the try, so that an interrupt between two starts stops those already
    # running; one started by a Popen that the interrupt cut short is in no list, and ends
    # by itself once its server is gone (_client).
    procs: list[subprocess.Popen[str]] = []
    try:
        for i in range(CLIENTS):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "hprm_bridge.gather_baseline", str(i), str(domain),
                     client],
                    stdout=subprocess.PIPE,
                    text=True,
                    start_new_session=True,
                )
            )  # fmt: skip
        for p in procs:
            assert p.stdout is not None
            p.stdout.readline()
        payload = np.arange(int(mb * 1_000_000) // 8, dtype=np.float64)
        out = []
        with Node("gather_server", domain_id=domain, localhost_only=True) as node:
            pub = node.create_publisher("sensor_msgs/msg/Image", _REQUEST)
            sub = node.create_subscription("sensor_msgs/msg/Image", _REPLY)
            if not (
                pub.wait_for_subscriptions(CLIENTS, 30) and sub.wait_for_publishers(CLIENTS, 30)
            ):
                raise RuntimeError("ros2-wire gather: clients never matched")
            time.sleep(0.3)
            request = _image(node, payload, "round")
            for _ in range(rounds):
                t0 = time.perf_counter_ns()
                pub.publish(request)
                got = set()
                while len(got) < CLIENTS:
                    msg = sub.take(timeout_sec=60)
                    if msg is None:
                        raise RuntimeError("ros2-wire gather: a reply never came")
                    if msg.data.size != payload.nbytes:
                        raise RuntimeError("ros2-wire gather: reply of the wrong size")
                    got.add(msg.header.frame_id)
                out.append(time.perf_counter_ns() - t0)
            pub.publish(_image(node, np.zeros(1, np.uint8), "stop"))
            time.sleep(0.2)
        stop_processes(procs, terminate=False, timeout=10)  # the "stop" message ends them
        return out
    except BaseException:
        stop_processes(procs)  # interrupted or failed: no "stop" message is coming
        raise


if __name__ == "__main__":
    try:
        _client(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
    except KeyboardInterrupt:  # run by hand in a terminal
        sys.exit(130)
