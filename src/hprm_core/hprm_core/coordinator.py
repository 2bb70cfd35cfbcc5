"""The seam between a scheduler and the world around its program.

Before each tag the scheduler asks its coordinator whether the tag may be
processed, and tells it when the tag is complete; a program alone in its
process always may (:class:`LocalCoordinator`), a federate asks its RTI or
its peers (:class:`hprm_core.federation.FederateCoordinator`). Keeping the
question in one small protocol keeps the scheduler free of federation code.
This module is compiled (:mod:`compiled`): it is asked once per tag.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from hprm_core.scheduler import Scheduler
    from hprm_core.tag import Tag


class Coordinator(Protocol):
    """What the scheduler asks before and after each tag (federation plugs in here)."""

    def start_time(self, physical_now: int) -> int:
        """The program's start time; a federation agrees on one through the RTI."""

    def advance_to(self, sched: Scheduler, tag: Tag) -> bool:
        """May ``tag`` be processed now? May block (waiting for a grant); returns
        False when the scheduler must choose again (an event arrived meanwhile).
        For ``FOREVER``, True means nothing can ever arrive again."""

    def resolve_inputs(self, sched: Scheduler, next_index: int | None) -> None:
        """During a provisional tag, settle the network inputs that reactions up
        to ``next_index`` (all, if None) may read; only called while ``sched.gate``
        is non-empty."""

    def tag_complete(self, sched: Scheduler, tag: Tag) -> None:
        """Called after every reaction at ``tag`` ran."""

    def stop_requested(self, sched: Scheduler, tag: Tag) -> Tag:
        """A local stop request at ``tag``; returns the tag at which to stop."""

    def timer_started(self, sched: Scheduler) -> None:
        """A timer that was cancelled was started again (``Timer.reset``, scheduler
        thread): the program may now act on its own, not only in answer."""

    def finish(self, sched: Scheduler) -> None:
        """The program ended (cleanly or not)."""


class LocalCoordinator:
    """A program alone in its process: every tag may be processed at once."""

    def start_time(self, physical_now: int) -> int:
        return physical_now

    def advance_to(self, sched: Scheduler, tag: Tag) -> bool:
        return True

    def resolve_inputs(self, sched: Scheduler, next_index: int | None) -> None:
        pass

    def tag_complete(self, sched: Scheduler, tag: Tag) -> None:
        pass

    def stop_requested(self, sched: Scheduler, tag: Tag) -> Tag:
        return tag

    def timer_started(self, sched: Scheduler) -> None:
        pass

    def finish(self, sched: Scheduler) -> None:
        pass
