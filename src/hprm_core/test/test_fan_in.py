"""How a port fed by several federates combines their values at one tag
(hprm_core.fan_in); end to end in test_federate.py."""

import logging
from types import SimpleNamespace

from hprm_core.fan_in import FanIn


class _Port:
    """What FanIn uses of a port: its scheduler's step and _fire."""

    fqn = "main.sink.inp"

    def __init__(self):
        self._sched = SimpleNamespace(step=0)
        self.fired = []

    def _fire(self, value):
        self.fired.append((self._sched.step, value))


def test_tuples_concatenate_in_federate_order_whatever_the_arrival_order():
    port = _Port()
    fan = FanIn(port)
    right, left = fan.share(7), fan.share(2)
    right._fire(("r1", "r2"))
    left._fire(("l1",))
    assert port.fired[-1] == (0, ("l1", "r1", "r2"))
    port._sched.step = 1  # the next tag starts empty
    right._fire(("r3",))
    assert port.fired[-1] == (1, ("r3",))


def test_other_values_keep_the_last_federates_and_warn_once(caplog):
    port = _Port()
    fan = FanIn(port)
    with caplog.at_level(logging.WARNING, logger="hprm.federation"):
        fan.share(5)._fire("late id")
        fan.share(1)._fire("early id")
        port._sched.step = 1
        fan.share(1)._fire("a")
        fan.share(5)._fire("b")
    assert [v for _, v in port.fired] == ["late id", "late id", "a", "b"]
    warned = [r.message for r in caplog.records]
    assert len(warned) == 1 and "main.sink.inp: several federates" in warned[0], warned
