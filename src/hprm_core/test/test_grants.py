"""grants.py: the RTI's tag-advance arithmetic on its own (chains, diamonds,
cycles with and without delays, finished upstreams)."""

from dataclasses import dataclass, field

from hprm_core.grants import decide, earliest_outputs, grants, self_paced
from hprm_core.tag import FOREVER, NEVER, Tag

MS = 1_000_000


@dataclass
class Fed:
    id: int
    upstream: list = field(default_factory=list)
    unwaited: list = field(default_factory=list)
    cycle: bool = False
    boundary: bool = False
    physical: bool = False
    reactive: bool = False
    net: Tag = NEVER
    ltc: Tag = NEVER
    granted: Tag = NEVER
    provisional: Tag = NEVER
    resigned: bool = False
    failed: bool = False


def t(ms, micro=0):
    return Tag(ms * MS, micro)


def feds(*fs):
    return {f.id: f for f in fs}


def test_a_chain_grants_a_downstream_net_below_what_upstream_can_send():
    # 0 -> 1 -> 2, no delays; 0 will next act at 10 ms
    g = feds(Fed(0, net=t(10)), Fed(1, [(0, None)], net=t(5)), Fed(2, [(1, None)], net=t(20)))
    assert earliest_outputs(g) == {0: t(10), 1: t(5), 2: t(5)}
    # 1 may process 5 ms (nothing from 0 before 10 ms); 2 must wait (1 may send at 5 ms)
    assert grants(g) == [(1, "TAG", t(5))]


def test_an_after_delay_lets_the_downstream_run_ahead():
    g = feds(Fed(0, net=t(10)), Fed(1, [(0, 5 * MS)], net=t(14)))
    assert grants(g) == [(1, "TAG", t(14))]
    g[1].net = t(15)  # a message sent at 10 ms lands at 15 ms: not yet
    assert grants(g) == []


def test_the_ltc_bounds_what_a_federate_can_still_send():
    # 0 completed 10 ms and has nothing queued (NET = FOREVER): it can still
    # send at (10 ms, 1) at the earliest... in response to nothing. Its
    # earliest output is its NET, but never before just past its LTC.
    g = feds(Fed(0, net=FOREVER, ltc=t(10)), Fed(1, [(0, None)], net=t(12)))
    assert earliest_outputs(g)[0] == FOREVER
    assert grants(g) == [(1, "TAG", t(12))]
    g[0].net = t(10)  # stale NET below its LTC: the LTC wins
    assert earliest_outputs(g)[0] == t(10, 1)


def test_a_diamond_waits_for_its_slowest_path():
    #   0 -> 1 -> 3 ; 0 -> 2 (after 2 ms) -> 3
    g = feds(
        Fed(0, net=t(10)),
        Fed(1, [(0, None)], net=t(30)),
        Fed(2, [(0, 2 * MS)], net=t(30)),
        Fed(3, [(1, None), (2, None)], net=t(11)),
    )
    eo = earliest_outputs(g)
    assert eo[1] == t(10) and eo[2] == t(12)  # 2 reacts to 0's message, 2 ms later
    assert grants(g) == []  # 3 may get 0's message at 10 ms through 1
    g[3].net = t(9)
    assert grants(g) == [(3, "TAG", t(9))]


def test_a_zero_delay_cycle_earns_a_provisional_grant_once():
    g = feds(
        Fed(0, [(1, None)], cycle=True, net=t(10)),
        Fed(1, [(0, None)], cycle=True, net=FOREVER),
    )
    # 1 might only ever send in response to 0 at 10 ms: EIMT(0) == 10 ms
    assert grants(g) == [(0, "PTAG", t(10))]
    g[0].provisional = t(10)
    assert grants(g) == []  # already provisional there: nothing new


def test_a_cycle_with_a_delay_grants_outright():
    g = feds(
        Fed(0, [(1, 1 * MS)], cycle=False, net=t(10)),
        Fed(1, [(0, None)], cycle=False, net=FOREVER),
    )
    # 1 reacts at 10 ms at the earliest; its message lands at 11 ms
    assert grants(g) == [(0, "TAG", t(10))]


def test_a_loop_through_a_boundary_federate_grants_outright():
    # 1 is a gateway: 0 publishes to it and it feeds 0 (ROS 2 messages, calls), but what
    # it receives never makes it send at that tag. Its next send is its own NET (13 ms).
    g = feds(Fed(0, [(1, None)], net=t(10)), Fed(1, [(0, None)], boundary=True, net=t(13)))
    assert earliest_outputs(g) == {0: t(10), 1: t(13)}
    assert grants(g) == [(0, "TAG", t(10))]
    g[1].boundary = False  # the same loop through an ordinary federate: 0 must wait
    assert grants(g) == []


def test_a_finished_upstream_grants_forever_so_the_downstream_finishes():
    g = feds(Fed(0, resigned=True), Fed(1, [(0, None)], net=FOREVER))
    assert grants(g) == [(1, "TAG", FOREVER)]
    g[0].resigned, g[0].failed = False, True  # a dead one sends nothing either
    assert grants(g) == [(1, "TAG", FOREVER)]


def test_nobody_is_owed_a_grant_below_what_it_holds():
    g = feds(Fed(0, net=t(10)), Fed(1, [(0, None)], net=t(5), granted=t(5)))
    assert grants(g) == []


def test_a_federate_held_back_by_a_physical_upstream_asks_it_for_its_tag():
    # 0 has physical actions: its NET is capped at physical time (10 ms now);
    # 1's timer wants 20 ms. No grant yet, and 0 is told what 1 waits for, so
    # it renews its NET once it can promise past 20 ms instead of at its next poll.
    g = feds(Fed(0, physical=True, net=t(10)), Fed(1, [(0, None)], net=t(20)))
    assert decide(g) == ([], {0: t(20)})
    g[0].net = t(20)  # 0 may still send at 20 ms: 1 still waits, 0 still asked
    assert decide(g) == ([], {0: t(20)})
    g[0].net = t(20, 1)  # past it: granted, nothing more to ask
    assert decide(g) == ([(1, "TAG", t(20))], {})


def test_what_is_asked_goes_through_relays_and_after_delays_to_the_physical_federate():
    # 0 (physical) -> 1 (idle: would only relay) -> 2 (timer at 20 ms), and
    # 0 -> 3 after 5 ms (timer at 20 ms): a message 0 sends at 15 ms lands at 20.
    g = feds(
        Fed(0, physical=True, net=t(10)),
        Fed(1, [(0, None)], net=FOREVER),
        Fed(2, [(1, None)], net=t(20)),
        Fed(3, [(0, 5 * MS)], net=t(20)),
    )
    owed, asked = decide(g)
    assert asked == {0: t(15)}  # the smallest tag asked of it
    assert (1, "TAG", FOREVER) not in owed  # 1 itself waits on 0 as well
    del g[3]
    assert decide(g)[1] == {0: t(20)}


def test_only_federates_with_physical_actions_are_asked():
    # 0 has no physical action: it gets to 20 ms through its own events, and
    # asking it would only cost a frame per tag on the RTI's hot path
    g = feds(Fed(0, net=t(10)), Fed(1, [(0, None)], net=t(20)))
    assert decide(g) == ([], {})
    # held back by a busy federate and by a physical one: only the latter is asked
    g = feds(Fed(0, net=t(10)), Fed(1, physical=True, net=t(12)),
             Fed(2, [(0, None), (1, None)], net=t(20)))  # fmt: skip
    assert decide(g) == ([], {1: t(20)})


def test_a_gateway_answered_only_by_reactive_nodes_is_self_paced():
    # 0: a gateway (physical action); 1, 2: ported nodes with no timer or action.
    # 0 -> 1 one microstep later (break_cycles), 1 -> 2 -> 0 with no delay.
    g = feds(Fed(0, [(2, None)], physical=True), Fed(1, [(0, 0)], reactive=True),
             Fed(2, [(1, None)], reactive=True))  # fmt: skip
    assert self_paced(g) == [0]  # 1 and 2 are not: 0, upstream of both, has an action
    g[1].reactive = False  # 1 got a timer: it may send on its own account
    assert self_paced(g) == []


def test_answers_must_come_at_the_logical_time_of_what_caused_them():
    # an after delay on the way back: an answer lands later than the grant it follows
    g = feds(Fed(0, [(1, 5 * MS)], physical=True), Fed(1, [(0, 0)], reactive=True))
    assert self_paced(g) == []
    g[0].upstream = [(1, 0)]  # a microstep is the same logical time
    assert self_paced(g) == [0]


def test_what_a_self_paced_federate_sends_must_not_come_back_at_its_own_tag():
    # a zero-delay cycle: the answer would land at the tag being processed (PTAG's case)
    g = feds(Fed(0, [(1, None)], physical=True), Fed(1, [(0, None)], reactive=True))
    assert self_paced(g) == []
    g[1].upstream = [(0, 2 * MS)]  # a delay on the way out is fine: the answer comes later
    assert self_paced(g) == [0]


def test_an_upstream_reached_only_through_others_counts_too():
    # 3 (a timer) -> 2 -> 0: 0 may hear from 3 though 3 is not its neighbour
    g = feds(Fed(0, [(2, None)], physical=True), Fed(1, [(0, 0)], reactive=True),
             Fed(2, [(1, None), (3, None)], reactive=True), Fed(3))  # fmt: skip
    assert self_paced(g) == []
    g[3].reactive = True  # 3 only answers too (it hears nobody): nothing starts a message
    assert self_paced(g) == [0]
    # a federate with no upstream never waits for a grant: nothing to pace
    assert 3 not in self_paced(g)


def test_a_federate_heard_from_without_waiting_counts_as_upstream():
    # 3 (a timer) -> 1 on an Input(wait=False): nobody waits for it, but what it
    # sends makes 1 send to 0, which is then no answer to anything 0 sent
    g = feds(Fed(0, [(1, None)], physical=True), Fed(1, [(0, 0)], [3], reactive=True), Fed(3))
    assert self_paced(g) == []
    g[3].reactive = True
    assert self_paced(g) == [0]
    # 0's own calls on such an input (a gateway's parameter calls) are answers to 0
    g = feds(Fed(0, [(1, None)], physical=True), Fed(1, [(0, 0)], [0], reactive=True))
    assert self_paced(g) == [0]
