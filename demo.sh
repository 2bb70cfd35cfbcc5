#!/usr/bin/env bash
# The main job on its embedded default: the flagship example of hprm_core.
source "$(dirname "$0")/tools/venv.sh"
exec hprm run "$HPRM_ROOT/src/hprm_core/examples/pipeline.py" "$@"
