"""hprm_core: an ament_python ROS 2 package that is also plain pip-installable.

The modules every message and every tag goes through are compiled to C with
mypyc (the same source, no second implementation): on a cold cache, which is
how a message finds a process it wakes, compiled code touches far less memory
than the interpreter does, and one-way latency drops by about a fifth (see
the README). Without mypyc, or when compiling fails (no C compiler, no Python
headers), the package installs as pure Python with a warning: it works the
same, only slower. ``HPRM_PURE_PYTHON=1`` skips compiling.
"""

import contextlib
import importlib.util
import json
import os
import sys

from setuptools import find_packages, setup
from setuptools.command.build_ext import build_ext

PACKAGE = "hprm_core"
HERE = os.path.dirname(os.path.abspath(__file__))


def _load_compiled_module():
    """hprm_core/compiled.py (standard library only) names the modules to
    compile and how their sources are recorded; the package itself cannot be
    imported before it is built."""
    spec = importlib.util.spec_from_file_location("_hprm_compiled", f"{HERE}/{PACKAGE}/compiled.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


compiled = _load_compiled_module()


def _warn(message: str) -> None:
    print(f"hprm_core: {message}; installing pure Python (same behaviour, slower)", file=sys.stderr)


class _BuildExtOrPure(build_ext):
    """A failed compile leaves the package pure Python instead of failing the
    install: compiled modules only make it faster. Nothing half-built stays
    behind (a module whose shared runtime library is missing cannot load)."""

    def build_extensions(self) -> None:
        try:
            super().build_extensions()
        except Exception as exc:  # compiler missing or failing: any error means the same
            for path in self.get_outputs():
                if os.path.exists(path):
                    os.remove(path)
            self.extensions = []
            _warn(f"compiling with mypyc failed ({exc})")

    def run(self) -> None:
        super().run()
        if self.extensions:  # what the compiled modules were built from (see hprm_core.compiled)
            out = os.path.join(HERE if self.inplace else self.build_lib, PACKAGE)
            digests = {m: compiled.digest(f"{HERE}/{PACKAGE}/{m}.py") for m in compiled.COMPILED}
            with open(os.path.join(out, "compiled.json"), "w") as f:
                json.dump(digests, f, indent=1, sort_keys=True)


def _ext_modules() -> list:
    if os.environ.get("HPRM_PURE_PYTHON") == "1":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _warn("mypyc is not installed (pip install mypy)")
        return []
    cwd = os.getcwd()
    os.chdir(HERE)  # mypyc names modules by their path from the current directory
    try:
        # colcon reads setup.py's stdout for the package's metadata: mypyc's notes go to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            # Only the compiled modules must type-check; the rest is imported as is.
            # Against the standard library and hprm_core alone: mypy would otherwise
            # follow serialization's lazy `import torch` into whatever the environment
            # holds (6,640 modules and minutes on a GPU machine), and the C would
            # depend on what else is installed.
            return mypycify(
                [
                    "--follow-imports=silent",
                    "--ignore-missing-imports",
                    "--no-site-packages",
                    *(f"{PACKAGE}/{m}.py" for m in compiled.COMPILED),
                ],
                opt_level="3",
                group_name=PACKAGE,
                target_dir=os.path.join(HERE, "build", "mypyc"),  # whatever the caller's directory
            )
    except (SystemExit, Exception) as exc:  # mypyc exits on type errors (another mypy version?)
        _warn(f"mypyc could not compile the modules ({exc})")
        return []
    finally:
        os.chdir(cwd)


setup(
    name=PACKAGE,
    version="0.1.0",
    description="Deterministic federated reactor runtime (Lingua Franca semantics) for HPRM",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(exclude=["test", "test.*"]),
    ext_modules=_ext_modules(),
    cmdclass={"build_ext": _BuildExtOrPure},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ],
    install_requires=["numpy>=1.21", "msgpack>=1.0"],
    # colcon (setuptools >= 80) ignores tests_require: test deps live here.
    extras_require={
        "fast": ["pyarrow>=12"],  # Arrow tables/tensors, safe-mode Arrow IPC, bench baseline
        "plot": ["matplotlib>=3.5"],  # hprm bench ... --plot
        "test": ["pytest>=7", "pytest-timeout>=2", "pyarrow>=12", "matplotlib>=3.5"],
    },
    zip_safe=False,  # compiled modules are shared libraries
    entry_points={
        "console_scripts": ["hprm = hprm_core.cli:main"],
        "hprm.benchmarks": [
            "reactions = hprm_core.bench.reactions:main",
            "pingpong = hprm_core.bench.pingpong:main",
            "store = hprm_core.bench.store:main",
            "serialize = hprm_core.bench.serialize:main",
            "gather = hprm_core.bench.gather:main",
        ],
    },
)
