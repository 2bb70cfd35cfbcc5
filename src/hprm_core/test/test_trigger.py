"""Physical actions: events from outside logical time (another thread, a file the
scheduler watches, a stamp given by the caller) get tags from the physical clock, in order,
never behind the current tag. Real programs run by the real scheduler."""

import socket
import threading
import time

import pytest

from hprm_core import PhysicalAction, Reactor, reaction, run


@pytest.mark.parametrize("busy_poll", [0, "forever"])
def test_a_watched_file_is_read_in_the_scheduler_thread_until_it_is_removed(busy_poll):
    """add_reader: the scheduler itself reads a readable socket (no thread of
    the reactor's own) and the physical actions its callback schedules arrive
    in order; after remove_reader nothing reads the socket any more."""

    class Device(Reactor):
        def __init__(self):
            super().__init__()
            self.reading = PhysicalAction()
            self.ours, self.theirs = socket.socketpair()
            self.ours.setblocking(False)
            self.got, self.threads = [], set()

        def readable(self):
            self.threads.add(threading.get_ident())
            for b in self.ours.recv(4096):
                self.reading.schedule(b)

        @reaction("startup")
        def start(self):
            self.threads.add(threading.get_ident())
            self.add_reader(self.ours, self.readable)

            def device():
                for i in range(5):
                    time.sleep(0.005)
                    self.theirs.send(bytes([i]))

            threading.Thread(target=device, daemon=True).start()

        @reaction("reading")
        def on_reading(self):
            self.got.append(self.reading.value)
            if len(self.got) == 5:
                self.remove_reader(self.ours)
                self.theirs.send(b"\xff")  # after the removal: stays in the socket
                self.request_stop()

    d = Device()
    try:
        run(d, timeout="5 s", busy_poll=busy_poll)
        assert d.got == [0, 1, 2, 3, 4]
        assert len(d.threads) == 1  # the callback ran in the reactions' (the scheduler's) thread
        assert d.ours.recv(16) == b"\xff"
    finally:
        d.ours.close()
        d.theirs.close()


@pytest.mark.parametrize("busy_poll", [0, "forever"])
def test_physical_action_scheduled_from_another_thread(busy_poll):
    """Also while the scheduler busy-polls: its spin must let the driver
    thread schedule (it gives up the GIL on every turn)."""

    class Sensor(Reactor):
        def __init__(self):
            super().__init__()
            self.reading = PhysicalAction()
            self.got = []

        @reaction("startup")
        def start(self):
            def driver():
                for i in range(5):
                    time.sleep(0.005)
                    self.reading.schedule(i)

            threading.Thread(target=driver, daemon=True).start()

        @reaction("reading")
        def on_reading(self):
            self.got.append((self.tag.time, self.reading.value))
            if len(self.got) == 5:
                self.request_stop()

    s = Sensor()
    run(s, timeout="5 s", busy_poll=busy_poll)
    assert [v for _, v in s.got] == [0, 1, 2, 3, 4]
    times = [t for t, _ in s.got]
    assert times == sorted(times) and times[0] > s.start_time


def test_physical_action_scheduled_at_a_given_time_keeps_it_unless_past():
    """schedule_at(value, t): a stamp still ahead gives tag (t, 0) exactly, in
    stamp order whatever the call order; a stamp behind the current tag gives
    the next microstep (never an earlier tag)."""

    class Stamped(Reactor):
        def __init__(self):
            super().__init__()
            self.reading = PhysicalAction()
            self.got = []

        @reaction("startup")
        def start(self):
            base = self.start_time

            def driver():
                self.reading.schedule_at("second", base + 80_000_000)
                self.reading.schedule_at("first", base + 40_000_000)
                time.sleep(0.15)
                self.reading.schedule_at("late", base + 10_000_000)

            threading.Thread(target=driver, daemon=True).start()

        @reaction("reading")
        def on_reading(self):
            self.got.append((self.reading.value, self.tag.time - self.start_time, self.tag[1]))
            if len(self.got) == 3:
                self.request_stop()

    s = Stamped()
    run(s, timeout="5 s")
    assert s.got[:2] == [("first", 40_000_000, 0), ("second", 80_000_000, 0)]
    late, t, _ = s.got[2]
    assert late == "late" and t >= 80_000_000  # after what was processed, not at 10 ms
