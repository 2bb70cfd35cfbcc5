"""The ros2-wire gather baseline's clients outlive no server.

They run in sessions of their own (a terminal's Ctrl-C reaches only the server, which stops
them), so a client that its server never got to stop, because the interrupt came while
``Popen`` was starting it, must end by itself, quietly: it failed CI once with a
BrokenPipeError traceback from its "ready" line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

# A server that starts one client and dies: before reading its "ready" line (the pipe is
# closed when the client writes it), or after it (the client is then left waiting).
_SERVER = r"""
import os, subprocess, sys
client = subprocess.Popen(
    [sys.executable, "-m", "hprm_bridge.gather_baseline", "0", sys.argv[1], "forward"],
    stdout=subprocess.PIPE, stderr=open(sys.argv[2], "w"), start_new_session=True,
)
print(client.pid, flush=True)
if sys.argv[3] == "after-ready":
    client.stdout.readline()
os._exit(0)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (reaped by no one here yet) counts as gone
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("server_dies", ["before-ready", "after-ready"])
def test_a_client_whose_server_died_ends_quietly(tmp_path, domain, server_dies):
    log = tmp_path / "client.err"
    out = subprocess.run(
        [sys.executable, "-c", _SERVER, str(domain), str(log), server_dies],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout)
    deadline = time.monotonic() + 30  # it starts a DDS participant first (seconds, loaded)
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        assert not _alive(pid), "the client outlived its server by 30 s"
    finally:
        if _alive(pid):
            os.kill(pid, 9)
    assert log.read_text() == "", log.read_text()  # no traceback, no "Exception ignored"
