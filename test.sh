#!/usr/bin/env bash
# Every test of every package. Extra arguments go to pytest (e.g. -k NAME; -n 0 for one
# process, as a debugger wants).
#
# The tests run in several processes at once (pytest-xdist): most of a test's time is its
# federations' processes starting, waiting on each other and on DDS discovery, so one test
# at a time left half of a 2-core machine idle (CI: 38 min in one process, 19 in three).
# One worker more than the CPUs, at most 4 (HPRM_TEST_WORKERS overrides): each test starts
# several processes of its own, and the suite is written to pass beside two CPU hogs.
# Workers draw disjoint ROS domain ids (the root conftest.py).
source "$(dirname "$0")/tools/venv.sh"
cd "$HPRM_ROOT"
cpus="$(nproc)" # the CPUs this process may run on
workers="${HPRM_TEST_WORKERS:-$((cpus + 1 < 4 ? cpus + 1 : 4))}"
exec python -m pytest -n "$workers" --dist worksteal "$@"
