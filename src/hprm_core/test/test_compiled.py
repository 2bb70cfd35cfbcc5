"""The compiled build of the per-message path (mypyc) and its safety nets:
a failed compile installs pure Python, and a source edited after compiling
runs from source instead of the stale compiled module. (That the development
environment itself got compiled is checked where it is built: tools/venv.sh.)"""

import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hprm_core import compiled

PKG = Path(__file__).resolve().parents[1]  # src/hprm_core
EXAMPLES = PKG / "examples"
CAN_COMPILE = importlib.util.find_spec("mypyc") is not None and shutil.which(
    os.environ.get("CC", "cc")
)
EXT = importlib.machinery.EXTENSION_SUFFIXES[0]


def _env(pythonpath: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "HPRM_PURE_PYTHON"}
    return {**env, "PYTHONPATH": str(pythonpath), **extra}


def _run_pipeline(pythonpath: Path) -> subprocess.CompletedProcess:
    """The federated example, every process importing hprm_core from ``pythonpath``."""
    env = _env(pythonpath)
    return subprocess.run(
        [sys.executable, "-m", "hprm_core.cli", "run", EXAMPLES / "federated_pipeline.py"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def _where(pythonpath: Path, **extra: str) -> dict:
    """Where a fresh interpreter imports each compiled module from, and what it warned."""
    code = (
        "import json, hprm_core, importlib\n"
        "from hprm_core import compiled\n"
        "print(json.dumps({'compiled': compiled.is_compiled(), 'files': {m: importlib.import_module"
        "('hprm_core.' + m).__file__ for m in compiled.COMPILED}}))\n"
    )
    env = _env(pythonpath, **extra)
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert r.returncode == 0, r.stderr
    return {**json.loads(r.stdout), "stderr": r.stderr}


@pytest.fixture
def compiled_copy(tmp_path):
    """A copy of the installed compiled package (modules and shared library)."""
    package = Path(compiled.__file__).parent
    if not list(package.glob(f"*{EXT}")):
        pytest.skip("hprm_core is installed as pure Python here")
    shutil.copytree(package, tmp_path / "hprm_core", ignore=shutil.ignore_patterns("__pycache__"))
    (runtime,) = package.parent.glob(f"hprm_core__mypyc{EXT}")
    shutil.copy(runtime, tmp_path)
    return tmp_path


def test_an_untouched_copy_runs_compiled(compiled_copy):
    where = _where(compiled_copy)
    assert where["compiled"], where
    assert all(f.endswith(EXT) for f in where["files"].values()), where
    assert "changed since the package was compiled" not in where["stderr"]


def test_pure_python_on_request(compiled_copy):
    where = _where(compiled_copy, HPRM_PURE_PYTHON="1")
    assert not where["compiled"]
    assert all(f.endswith(".py") for f in where["files"].values()), where
    assert where["stderr"] == ""  # asked for: no warning


def test_a_source_edited_after_compiling_runs_from_source(compiled_copy):
    tag = compiled_copy / "hprm_core" / "tag.py"
    tag.write_text(tag.read_text() + "\nEDITED = True\n")
    where = _where(compiled_copy)
    # All or none: the compiled modules call each other directly.
    assert not where["compiled"]
    assert all(f.endswith(".py") for f in where["files"].values()), where
    assert "tag.py changed since the package was compiled" in where["stderr"]
    assert "scheduler.py changed" not in where["stderr"]  # names only what changed

    r = _run_pipeline(compiled_copy)  # the federates (processes of their own) too
    assert r.returncode == 0, r.stdout + r.stderr
    assert "actuator: 10 commands applied" in r.stdout
    assert len(re.findall(r"tag\.py changed since", r.stderr + r.stdout)) >= 3


@pytest.mark.parametrize("record", ["missing", "another set of modules"])
def test_a_build_without_a_matching_record_of_sources_runs_from_source(compiled_copy, record):
    path = compiled_copy / "hprm_core" / "compiled.json"
    if record == "missing":
        path.unlink()
    else:  # built when fewer modules were compiled (left behind by a later pure build)
        digests = json.loads(path.read_text())
        path.write_text(json.dumps({m: d for m, d in digests.items() if m != "trigger"}))
    where = _where(compiled_copy)
    assert not where["compiled"]
    for m in compiled.COMPILED:
        assert f"{m}.py" in where["stderr"]


@pytest.mark.slow
@pytest.mark.skipif(not CAN_COMPILE, reason="no mypyc or no C compiler (tools/venv.sh has both)")
@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({}, None),
        ({"CC": "false"}, "compiling with mypyc failed"),  # a compiler that always fails
        ({"HPRM_PURE_PYTHON": "1"}, None),
    ],
)
def test_a_build_compiles_or_else_installs_pure_python(tmp_path, setting, message):
    src = tmp_path / "src"
    shutil.copytree(
        PKG,
        src,
        ignore=shutil.ignore_patterns(
            "*.egg-info", "__pycache__", "build", ".mypy_cache", "*.so", "compiled.json", "test"
        ),
    )
    build = subprocess.run(
        [sys.executable, "setup.py", "build", "--build-base", tmp_path / "b"],
        cwd=src, capture_output=True, text=True, timeout=600, env={**_env(src), **setting},
    )  # fmt: skip
    assert build.returncode == 0, build.stdout + build.stderr
    if message:
        assert message in build.stderr
        assert "installing pure Python" in build.stderr
    (lib,) = (tmp_path / "b").glob("lib*")  # lib.<platform> when it meant to compile
    where = _where(lib)
    assert "changed since" not in where["stderr"]
    if setting:
        assert list(lib.rglob("*.so")) == []  # nothing half-built
        assert not (lib / "hprm_core" / "compiled.json").exists()
        assert not where["compiled"], where
    else:
        assert "installing pure Python" not in build.stderr, build.stderr
        assert where["compiled"], where
        assert all(f.endswith(EXT) for f in where["files"].values()), where
    r = _run_pipeline(lib)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "actuator: 10 commands applied" in r.stdout
