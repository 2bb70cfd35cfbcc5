"""Exceptions users may catch. Each message names the reactor, reaction, port or
tag involved, because "something went wrong in the graph" is useless at 3 a.m."""

from __future__ import annotations

import traceback
from collections.abc import Iterable


class HprmError(Exception):
    """Base of every error the runtime raises on purpose."""


class AssemblyError(HprmError):
    """The program's structure is invalid (bad connection, unknown name, ...)."""


class CycleError(AssemblyError):
    """A zero-delay cycle: no order of reactions can respect every dependency."""


class EffectError(HprmError):
    """A reaction wrote a port or action it did not declare as an effect (or
    read one it did not declare as a trigger or source)."""


class FederationError(HprmError):
    """Another federate failed, the RTI went away, or the handshake failed."""


class SerializationError(HprmError):
    """A value cannot be serialized in the requested mode, or a received header
    is corrupt, truncated, refused (pickle in safe mode) or references an
    object that cannot be resolved."""


class ProgramError(HprmError):
    """A program file could not be loaded: the message holds the error and
    the program's own lines that raised it (not the runtime's)."""


class ReactionError(HprmError):
    """A reaction raised; the program stopped cleanly (shutdown reactions ran)."""

    def __init__(self, message: str, failures: list[tuple[str, tuple[int, int], BaseException]]):
        super().__init__(message)
        #: (reaction name, elapsed tag, exception) for every failure in the run
        self.failures = failures


def user_traceback(exc: BaseException, skip: Iterable[str] = ()) -> str:
    """``exc``'s traceback without the frames of what ran the user's code (the import
    machinery, and the files in ``skip``): what a program's or node's author needs is
    the line of their file that failed, not ours."""
    skipped = ("<frozen", *skip)
    tb = traceback.TracebackException.from_exception(exc)
    tb.stack = traceback.StackSummary.from_list(
        [f for f in tb.stack if not f.filename.startswith(skipped)]
    )
    return "".join(tb.format()).rstrip()
