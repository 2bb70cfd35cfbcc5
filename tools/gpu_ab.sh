#!/usr/bin/env bash
# The CARLA demo's A/B on a GPU machine that reaches no package registry (such as the
# lent device machine: torch, onnxruntime and numpy are there, the rest is not).
#
#   tools/gpu_ab.sh fetch [PYTHON_VERSION]   # here: wheels for that Python (default 3.12) into $WHEELS
#   tools/gpu_ab.sh run [carla-ab options]   # there: install them, compile the runtime, run carla-ab
#
# `run` writes its logs, JSON and plot to $OUT (default ./gpu_ab_out). Without carla-ab
# options it runs both HPRM variants, 100 warm-up + 400 frames (the paper's yolov5n.pt as the
# detector where `fetch` found it, else seeded random weights), five times: sleeping with
# the critical path on one CPU (the default; the floor beside it, for the controls and
# the plot), then on any CPU (--cpu -1), pinned, any CPU again (interleaved: the host's
# speed drifts within a lease, lease 10), and busy-polling (which leaves the critical
# path on any CPU). About 9 minutes on the H200 of lease 10. The `ros2` variants need a
# ROS 2 Humble on that machine (docker/), which this does not bring.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WHEELS="${WHEELS:-$ROOT/.whl}"  # git-ignored; the device run must carry it
PAPERS_YOLO="${PAPERS_YOLO:-$ROOT/../shared/models/yolov5n.pt}"
# What carla_demo, hprm_bridge and hprm_core's compiled build need beyond what the device's
# image holds (THERE), at versions that ran on the H200 (Python 3.12, Ubuntu 24.04).
# src/carla_demo/test/test_gpu_ab.py checks that the two lists cover the packages'
# requirements and those of everything carried: a requirement in neither ends a device run at
# its first import (greenlet, required since 03286ca, would have).
PACKAGES=(
  highway-env==1.12.1 gymnasium==1.4.0 farama-notifications==0.0.6 pygame-ce==2.5.8
  onnx2torch==1.5.15 cyclonedds==11.0.1 rich-click==1.9.9 rosbags==0.11.9
  ruamel.yaml==0.19.1 lz4==4.4.5 backports.zstd==1.8.0 apsw==3.54.1.0 greenlet==3.5.6
  pointcloud2==0.6.0
  mypy==2.4.1 mypy_extensions==1.2.0 pathspec==1.1.1 librt==0.17.0 ast_serialize==0.13.1
)
# On the device's image already (the device library's KINDS.md, its package list of
# 2026-11-17), used here: not carried, whatever their versions there.
THERE=(
  numpy msgpack onnx onnxruntime torch torchvision pyyaml pillow pandas matplotlib
  cloudpickle typing-extensions click rich setuptools
)

case "${1:-}" in
fetch)
  py="${2:-3.12}"
  mkdir -p "$WHEELS"
  echo "gpu_ab: wheels for Python $py into $WHEELS" >&2
  python3 -m pip download -q --no-deps --only-binary=:all: --dest "$WHEELS" \
    --python-version "$py" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 "${PACKAGES[@]}"
  ls "$WHEELS"/*.whl | wc -l | xargs echo "gpu_ab: wheels:" >&2
  # The HPRM paper's detector weights travel with the wheels where this machine has them
  # (never in the repository: AGPL-3.0 weights); without, the run uses seeded random ones.
  if [ -f "$PAPERS_YOLO" ]; then
    cp "$PAPERS_YOLO" "$WHEELS/" && echo "gpu_ab: and $PAPERS_YOLO" >&2
  fi
  ;;
run)
  shift
  out="${OUT:-$ROOT/gpu_ab_out}"
  site="$(mktemp -d /tmp/hprm-gpu-ab-XXXXXX)"
  trap 'rm -rf "$site"' EXIT
  mkdir -p "$out"
  ls "$WHEELS"/*.whl > /dev/null || { echo "gpu_ab: no wheels in $WHEELS (run 'fetch' first)" >&2; exit 1; }
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$WHEELS"/*.whl
  echo "gpu_ab: compiling hprm_core (build log: $out/build.log)" >&2
  (cd "$ROOT/src/hprm_core" && PYTHONPATH="$site" python3 setup.py build_ext --inplace) \
    > "$out/build.log" 2>&1
  export PYTHONPATH="$site:$ROOT/src/hprm_core:$ROOT/src/hprm_bridge:$ROOT/src/carla_demo"
  python3 -c "from hprm_core import compiled; print('gpu_ab: runtime compiled:', compiled.is_compiled())" >&2
  ab() { python3 -c "import sys; from carla_demo.bench import main; sys.exit(main(sys.argv[1:]))" "$@"; }
  if [ $# -gt 0 ]; then
    ab "$@"
  else
    base=(--frames 400 --warmup 100 --runs 1)
    if [ -f "$WHEELS/yolov5n.pt" ]; then
      base+=(--detector-weights "$WHEELS/yolov5n.pt")  # the paper's own detector
    fi
    hprm=(--variants hprm-centralized,hprm-decentralized "${base[@]}")
    ab --variants floor,hprm-centralized,hprm-decentralized "${base[@]}" \
      --json "$out/pinned_1.json" --plot "$out/pinned_1.png"
    ab "${hprm[@]}" --cpu -1 --json "$out/any_cpu_1.json"
    ab "${hprm[@]}" --json "$out/pinned_2.json"
    ab "${hprm[@]}" --cpu -1 --json "$out/any_cpu_2.json"
    ab "${hprm[@]}" --busy-poll forever --json "$out/busy_poll.json"
  fi
  ;;
*)
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 2
  ;;
esac
