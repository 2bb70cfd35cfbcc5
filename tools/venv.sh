# Sourced by demo.sh, test.sh and .ci/run: creates (or reuses) .venv and
# installs every package under src/ that is pip-installable, with its test
# extras, plus the pinned developer tools. Re-running is cheap: pip skips what
# is already satisfied, and a stamp file skips pip entirely when nothing changed.
set -euo pipefail
HPRM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HPRM_VENV="${HPRM_VENV:-$HPRM_ROOT/.venv}"
PY="${PYTHON:-python3}"

if ! command -v "$PY" >/dev/null 2>&1; then
  echo "hprm: $PY not found; install Python >= 3.10" >&2
  exit 1
fi
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "hprm: Python >= 3.10 is required, found $("$PY" --version 2>&1)" >&2
  exit 1
fi

if [ ! -x "$HPRM_VENV/bin/python" ]; then
  echo "hprm: creating virtual environment in $HPRM_VENV" >&2
  if ! "$PY" -m venv "$HPRM_VENV" 2>/dev/null; then
    rm -rf "$HPRM_VENV"
    # Debian/Ubuntu ship venv's pip bootstrap separately.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "hprm: installing python3-venv with apt-get" >&2
      apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
      "$PY" -m venv "$HPRM_VENV"
    else
      echo "hprm: '$PY -m venv' failed; on Debian/Ubuntu run: sudo apt-get install python3-venv" >&2
      exit 1
    fi
  fi
fi

# hprm_core compiles its per-message path with mypyc (installed above) and
# falls back to pure Python with a warning when it cannot: here, where a
# compiler exists, that is an error to see, not a silently slower runtime.
has_python_headers() {
  "$HPRM_VENV/bin/python" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'
}
check_compiled() {
  [ "${HPRM_PURE_PYTHON:-}" = 1 ] && return 0
  command -v "${CC:-cc}" >/dev/null 2>&1 && has_python_headers || return 0
  if ! "$HPRM_VENV/bin/python" -c 'import sys; from hprm_core import compiled; sys.exit(not compiled.is_compiled())'; then
    echo "hprm: hprm_core did not compile (see the pip output above); HPRM_PURE_PYTHON=1 runs it uncompiled" >&2
    rm -f "$stamp"
    exit 1
  fi
  if ! "$HPRM_VENV/bin/python" -c 'import hprm_bridge.backends._rmw_wake'; then
    echo "hprm: hprm_bridge's C callback (backends/_rmw_wake.c) did not build (see the pip output above)" >&2
    rm -f "$stamp"
    exit 1
  fi
}

# Install (or refresh) when the package metadata or pins changed.
stamp="$HPRM_VENV/.hprm-installed"
want="$(cat "$HPRM_ROOT"/tools/requirements-dev.txt "$HPRM_ROOT"/src/*/setup.py "$HPRM_ROOT"/src/*/setup.cfg "$HPRM_ROOT"/src/*/pyproject.toml "$HPRM_ROOT"/src/hprm_bridge/hprm_bridge/backends/*.c 2>/dev/null | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "hprm: installing packages into $HPRM_VENV (the first run takes a few minutes: it compiles the runtime)" >&2
  "$HPRM_VENV/bin/python" -m pip install -q --upgrade pip >&2
  if command -v "${CC:-cc}" >/dev/null 2>&1 && ! has_python_headers; then
    # Debian/Ubuntu ship Python's C headers separately; hprm_core's compiled build needs them.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "hprm: installing python3-dev with apt-get (for hprm_core's compiled build)" >&2
      apt-get update -qq && apt-get install -y -qq python3-dev >/dev/null || true
    fi
    has_python_headers || echo "hprm: no Python headers (python3-dev): hprm_core installs uncompiled, slower" >&2
  fi
  pkgs=()
  for setup in "$HPRM_ROOT"/src/*/setup.py; do
    pkgs+=(-e "$(dirname "$setup")[test]")
  done
  "$HPRM_VENV/bin/python" -m pip install -q -r "$HPRM_ROOT/tools/requirements-dev.txt" "${pkgs[@]}" >&2
  check_compiled
  echo "$want" > "$stamp"
elif ! "$HPRM_VENV/bin/python" -W ignore -c 'import sys; from hprm_core import compiled; sys.exit(bool(compiled.stale_modules()))'; then
  # hprm_core's compiled modules are older than their sources (hprm_core/compiled.py)
  echo "hprm: recompiling hprm_core (its compiled sources changed)" >&2
  "$HPRM_VENV/bin/python" -m pip install -q --no-deps -e "$HPRM_ROOT/src/hprm_core" >&2
  check_compiled
fi
export PATH="$HPRM_VENV/bin:$PATH"
