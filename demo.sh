#!/usr/bin/env bash
# The main job on its embedded default: broadcast + gather of large arrays to 4
# client processes (paper Fig. 4), HPRM vs the ROS 2 wire protocol and the
# other baselines, quick sizes. Extra arguments go to `hprm bench gather`.
source "$(dirname "$0")/tools/venv.sh"
exec hprm bench gather --quick "$@"
