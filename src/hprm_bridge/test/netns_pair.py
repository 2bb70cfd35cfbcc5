"""Run several peer.py roles at once and print their results as one JSON list.

The tests start this under ``unshare -n`` so that peers whose DDS stack
multicasts on every interface (RustDDS in dora-rs) only ever see a private
loopback.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

PEER = Path(__file__).with_name("peer.py")


def main() -> None:
    jobs = json.loads(sys.argv[1])
    procs = []
    for role, args in jobs:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CYCLONEDDS", "ROS_"))}
        env.update(
            ROS_DOMAIN_ID=str(args["domain"]),
            ROS_LOCALHOST_ONLY="1",
            RUST_LOG="error",
            RUST_BACKTRACE="0",
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, str(PEER), role, json.dumps(args)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
        )
    results = []
    for (role, _), p in zip(jobs, procs, strict=True):
        try:
            out, err = p.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        done = [e for e in events if e.get("event") == "done"]
        results.append(
            {
                "role": role,
                "rc": p.returncode,
                "done": done[-1] if done else None,
                "stderr": err[:3000],
            }
        )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
