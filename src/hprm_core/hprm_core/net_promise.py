"""What a centralized federate promises its RTI: its next event tag (NET).

A NET(g) says "no message from me before g": the RTI grants the federates
downstream up to it. A federate with physical actions cannot know its next
event (a sensor may fire now), so it never promises more than "now + the
least ``min_delay`` of its physical actions", as reactor-c does, and renews
that promise while it waits: else the federation downstream would stall
until its next local event. Physical events are never tagged behind the last
promise (``Scheduler.physical_floor``). This module is compiled
(:mod:`compiled`).
"""

from __future__ import annotations

from hprm_core.rti_outbox import RtiOutbox
from hprm_core.scheduler import Scheduler
from hprm_core.tag import FOREVER, NEVER, Tag
from hprm_core.transport import Frame, pack_tag

PHYSICAL_NET_POLL_S = 0.005  # how often a federate with physical actions renews its NET
_NET_POLL_NS = int(PHYSICAL_NET_POLL_S * 1e9)
_MIN_WAIT_NS = 20_000  # a renewal due now still waits this long (never a busy loop)


class NetPromise:
    """A federate's NETs to the RTI, capped by its physical actions (``physical_lead``:
    their least ``min_delay``; None without any)."""

    def __init__(self, outbox: RtiOutbox) -> None:
        self.outbox = outbox
        self.last: Tag | None = None  # None: the next NET goes out even if it repeats
        self.physical_lead: int | None = None
        self.wanted = FOREVER  # a tag a federate downstream waits for us to promise (WANTED)
        self._renewing = False  # the last NET was capped by a physical action
        self._renewed_at = 0  # physical time from which it may be renewed

    def forget(self) -> None:
        """The RTI lowered our NET (it forwarded a message or an absence to us
        at an earlier tag): the next NET must be sent even if it repeats."""
        self.last = None

    def send(self, sched: Scheduler, tag: Tag) -> None:
        """Promise ``tag`` (our next event), or less where a physical action
        may still produce an event before it."""
        lead = self.physical_lead
        net, capped = tag, False
        now = 0
        if lead is not None:
            now = sched.physical_time()
            cap = Tag(now + lead, 0)
            capped = cap < tag
            if capped:
                # Renewed when due (_renewal_due), never in answer to the RTI:
                # that made an idle gateway and its RTI trade NET and TAG as
                # fast as they woke (3,000 a second, half a core each).
                if (
                    self._renewing
                    and self.last is not None
                    and now < self._renewed_at
                    and not self.last <= self.wanted < cap
                ):
                    sched.idle_poll = self._renewal_due(now, tag)
                    return
                net = cap
                self._renewed_at = now + _NET_POLL_NS
        outbox = self.outbox
        if net != self.last and outbox.rti is not None:
            self.last = net
            self._renewing = capped
            outbox.add(Frame.NET, pack_tag(net.time, net.microstep))
            if lead is not None:
                sched.physical_floor = net  # physical events never fall behind it
                outbox.flush()
        if lead is not None:
            sched.idle_poll = self._renewal_due(now, tag) if capped else PHYSICAL_NET_POLL_S

    def _renewal_due(self, now: int, tag: Tag) -> float:
        """Seconds until a capped NET must be renewed (the scheduler's
        ``idle_poll``): at the next periodic renewal, or sooner once our NET can
        reach the tag we wait for, or pass the one a federate downstream waits
        for (WANTED)."""
        lead = self.physical_lead
        assert lead is not None
        last = NEVER if self.last is None else self.last
        due = self._renewed_at
        if last < tag < FOREVER:  # NET(tag): ours to process
            due = min(due, tag.time - lead)
        if last <= self.wanted < FOREVER:  # a NET past it frees the other
            due = min(due, self.wanted.time - lead + 1)
        return max(due - now, _MIN_WAIT_NS) / 1e9
