"""Programs: a Python file whose main reactor is marked with :func:`main`.

``hprm run FILE`` and ``hprm graph FILE`` import the file, find the class
decorated with ``@main``, instantiate it without arguments, and run or draw
it. The decorator's keyword arguments are the program's default run options
(``fast``, ``timeout``, ``keepalive``, ``on_error``, ``busy_poll``); command-line options
override them.

Example (``pipeline.py``)::

    from hprm_core import Reactor, main

    @main(timeout="1 s")
    class Pipeline(Reactor):
        ...

    if __name__ == "__main__":      # also runnable as `python pipeline.py`
        run(Pipeline())
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path
from typing import Any

from hprm_core.environment import Environment
from hprm_core.errors import HprmError, ProgramError, ReactionError, user_traceback
from hprm_core.reactor import Reactor
from hprm_core.tag import Duration, duration

_OPTIONS = (
    "fast",
    "timeout",
    "keepalive",
    "on_error",
    "busy_poll",
    "federated",
    "coordination",
    "stp_offset",
)
_FEDERATION_OPTIONS = ("federated", "coordination", "stp_offset")
log = logging.getLogger("hprm")


def main(cls: type[Reactor] | None = None, **options: Any) -> Any:
    """Mark the main reactor of a program file (usable bare or with options)."""
    unknown = set(options) - set(_OPTIONS)
    if unknown:
        raise TypeError(f"@main got unknown options {sorted(unknown)}; known: {list(_OPTIONS)}")
    _check_options(options)

    def mark(c: type[Reactor]) -> type[Reactor]:
        if not (isinstance(c, type) and issubclass(c, Reactor)):
            raise TypeError(f"@main decorates a Reactor subclass, not {c!r}")
        c._hprm_main_options = dict(options)  # type: ignore[attr-defined]
        return c

    return mark(cls) if cls is not None else mark


def _check_options(options: dict[str, Any]) -> None:
    """Bad values fail here, at the author's ``@main`` line, rather than as a
    traceback from deep inside the runtime once the program starts (in every
    federate process, for a federation)."""
    for key in ("timeout", "busy_poll", "stp_offset"):
        if key not in options:
            continue
        value = options[key]
        per_federate = key != "timeout" and isinstance(value, dict)
        for v in value.values() if per_federate else [value]:
            try:
                ns = duration(v)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"@main option {key}: {exc}") from None
            if ns < 0:
                raise ValueError(f"@main option {key} must not be negative, got {v!r}")
    if options.get("on_error", "stop") not in ("stop", "continue"):
        raise ValueError(
            f"@main option on_error must be 'stop' or 'continue', got {options['on_error']!r}"
        )


def run(
    top: Reactor,
    *,
    fast: bool = False,
    timeout: Duration = None,
    keepalive: bool | None = None,
    on_error: str = "stop",
    trace: Any = None,
    busy_poll: Duration = 0,
) -> Environment:
    """Assemble and run ``top``; return the environment (for inspection).

    Raises :class:`~hprm_core.errors.ReactionError` after a clean stop if a
    reaction failed, and :class:`~hprm_core.errors.AssemblyError` (before
    anything runs) if the program is malformed.
    """
    env = Environment(
        top,
        fast=fast,
        timeout=timeout,
        keepalive=keepalive,
        on_error=on_error,
        trace=trace,
        busy_poll=busy_poll,
    )
    env.run()
    return env


def load_module(path: str | Path) -> Any:
    """Import a program file as a fresh module."""
    p = Path(path).resolve()
    if not p.is_file():
        raise FileNotFoundError(f"program file not found: {path}")
    name = f"hprm_program_{abs(hash(str(p)))}"
    spec = importlib.util.spec_from_file_location(name, p)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(p.parent))  # so a program can import its neighbours
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise ProgramError(f"cannot load {path}:\n{user_traceback(exc, skip=(__file__,))}") from exc
    finally:
        sys.path.remove(str(p.parent))
    return module


def main_class(path: str | Path) -> type[Reactor]:
    """The ``@main`` class of a program file; a clear error if not exactly one."""
    module = load_module(path)
    found = [
        v
        for v in vars(module).values()
        if isinstance(v, type)
        and "_hprm_main_options" in vars(v)
        and v.__module__ == module.__name__
    ]
    if not found:
        raise HprmError(
            f"{path} defines no main reactor: decorate its top-level Reactor with @main"
        )
    if len(found) > 1:
        names = ", ".join(c.__name__ for c in found)
        raise HprmError(f"{path} defines several @main reactors ({names}); keep exactly one")
    return found[0]


def load_main(path: str | Path) -> Reactor:
    """Instantiate the main reactor of a program file."""
    return main_class(path)()


def run_main(
    cls: type[Reactor],
    *,
    fast: bool | None = None,
    timeout: Duration = None,
    trace: Any = None,
) -> int:
    """Run a program's (not federated) main reactor class with its ``@main``
    options overridden by the given ones; return a process exit code (0 ok,
    1 a reaction failed, 2 bad program). A federated program is the
    launcher's to run (``hprm run`` picks)."""
    opts = dict(cls._hprm_main_options)  # type: ignore[attr-defined]
    if opts.get("federated"):
        raise HprmError(f"{cls.__name__} is a federated program: run it with hprm_core.launcher")
    for k in _FEDERATION_OPTIONS:
        opts.pop(k, None)
    if fast is not None:
        opts["fast"] = fast
    if timeout is not None:
        opts["timeout"] = timeout
    try:
        log.info("running %s (%s)", cls.__name__, ", ".join(f"{k}={v}" for k, v in opts.items()))
        run(cls(), trace=trace, **opts)
    except ReactionError as exc:
        log.error("program stopped after a reaction failed: %s", exc)
        return 1
    except (HprmError, FileNotFoundError, ImportError) as exc:
        log.error("%s", exc)
        return 2
    return 0
