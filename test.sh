#!/usr/bin/env bash
# Every test of every package. Extra arguments go to pytest (e.g. -k NAME).
source "$(dirname "$0")/tools/venv.sh"
cd "$HPRM_ROOT"
exec python -m pytest "$@"
