"""Which modules run compiled, and the guard against a compiled module older
than its source.

``setup.py`` compiles the modules every message and every tag goes through
(:data:`COMPILED`) to C with mypyc: the same source, so there is one
implementation, which runs faster compiled. A build in place (``pip install
-e``, ``colcon build --symlink-install``) leaves each compiled module next to
its source, and Python imports the compiled one first: edit the source
without rebuilding, and the old code would run, silently. So the build
records a digest of each source it compiled (``compiled.json``), and on
import, when any source differs, every compiled module is loaded from its
source instead, with a warning saying how to rebuild. All or none: compiled
modules call each other directly, so a mix would still run old code.

``HPRM_PURE_PYTHON=1`` in the environment runs every module from source
(profilers and debuggers see Python frames; benchmarks compare the two in one
run); at install, it skips compiling.

Example::

    >>> from hprm_core import compiled
    >>> "scheduler" in compiled.COMPILED  # compiled at install where a C compiler is found
    True
    >>> compiled.is_compiled()  # False in a pure-Python install, or HPRM_PURE_PYTHON=1
    ... # doctest: +SKIP
    True
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from importlib.machinery import ModuleSpec
from types import ModuleType

#: The per-message and per-tag path, the RTI's included (``setup.py`` compiles these).
COMPILED = (
    "tag",
    "trigger",
    "coordinator",
    "scheduler",
    "waiter",
    "transport",
    "data_plane",
    "rti_outbox",
    "net_promise",
    "federation",
    "inbound",
    "grants",
    "rti",
    "rti_federate",
)

_HERE = os.path.dirname(os.path.abspath(__file__))


def is_compiled() -> bool:
    """True when the per-message path runs compiled code (benchmarks report it)."""
    from hprm_core import scheduler

    return not (scheduler.__file__ or "").endswith(".py")


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Imports the compiled modules from their ``.py`` sources."""

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        if package != "hprm_core" or name not in COMPILED:
            return None
        return importlib.util.spec_from_file_location(fullname, os.path.join(_HERE, f"{name}.py"))


def digest(path: str) -> str:
    """What ``compiled.json`` records of a source file (``setup.py`` writes it)."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def stale_modules() -> list[str]:
    """Compiled modules whose source changed since the build (all, if the
    build left no record of its sources or compiled another set of modules)."""
    built = [
        m
        for m in COMPILED
        if any(
            os.path.exists(os.path.join(_HERE, m + s))
            for s in importlib.machinery.EXTENSION_SUFFIXES
        )
    ]
    if not built:
        return []
    try:
        with open(os.path.join(_HERE, "compiled.json")) as f:
            digests = json.load(f)
    except (OSError, ValueError):
        return built
    if set(digests) != set(COMPILED):  # built when another set of modules was compiled
        return built
    return [m for m in built if digest(os.path.join(_HERE, f"{m}.py")) != digests.get(m)]


def _choose_sources() -> None:
    if any(isinstance(f, _SourceFinder) for f in sys.meta_path):
        return
    if os.environ.get("HPRM_PURE_PYTHON") == "1":  # asked for: profiling, debugging, A/B runs
        sys.meta_path.insert(0, _SourceFinder())
        return
    stale = stale_modules()
    if stale:
        sys.meta_path.insert(0, _SourceFinder())
        warnings.warn(
            f"hprm_core: {', '.join(f'{m}.py' for m in stale)} changed since the package was "
            "compiled; running every compiled module from its source (slower). Rebuild: "
            "pip install -e src/hprm_core (or ./test.sh), or colcon build",
            RuntimeWarning,
            stacklevel=2,
        )


if __name__ == "hprm_core.compiled":  # not when setup.py reads COMPILED from this file
    _choose_sources()  # hprm_core/__init__.py imports this module first
