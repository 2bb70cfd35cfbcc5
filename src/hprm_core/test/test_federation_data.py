"""Values across federates under ``hprm run``: large arrays by shared-memory reference
(forwarded without copies), exchanges that must not deadlock on full sockets, and a value
pickle cannot send, refused by name."""

import re
from pathlib import Path

import pytest

from hprm_core.testing import FederationRun, run_federation

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
EXAMPLES = HERE.parent / "examples"

pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
def test_large_arrays_cross_federates_by_reference_and_forward_without_copies(
    monkeypatch, coordination
):
    monkeypatch.setenv("ZC_COORDINATION", coordination)
    r = run_federation(PROGRAMS / "zero_copy.py")
    assert r.code == 0, r.text
    for label in ("RELAY", "SINK", "SAFE"):
        ks = sorted(int(k) for k in re.findall(rf"{label} k=(\d+) zero_copy=True", r.text))
        assert ks == [0, 1, 2, 3, 4], f"{label}: {r.text}"
    assert r.text.count("values=ok") == 5
    assert "zero_copy=False" not in r.text
    # 5 MB went out; only references (tens of bytes each) crossed the sockets.
    m = re.search(r"PRODUCER sent 5 x 1000000 bytes, socket bytes (\d+)", r.text)
    assert m and int(m.group(1)) < 20_000, r.text
    assert "type=dict" in r.text  # the safe (pickle-free) link rebuilt the dict
    r.assert_clean()


def test_a_value_pickle_cannot_handle_is_refused_naming_the_port_and_tag():
    r = run_federation(PROGRAMS / "unpicklable.py")
    assert r.code == 1, r.text
    assert re.search(
        r"Unpicklable\.src\.out: cannot send value at tag \(10000000, 0\): cannot pickle a dict: "
        r"cannot pickle '_thread\.lock' object",
        r.text,
    ), r.text
    assert "SINK got" not in r.text
    r.assert_clean()


@pytest.mark.parametrize("serialization", ["pickle", "safe"])
@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
def test_two_federates_sending_each_other_large_arrays_do_not_deadlock(
    monkeypatch, coordination, serialization
):
    """Each side's first array makes it ask the other for its arena while the
    other asks it the same: both used to wait forever (each store channel is
    served by its federate's scheduler thread, the one that was waiting)."""
    monkeypatch.setenv("EX_COORDINATION", coordination)
    monkeypatch.setenv("EX_SERIALIZATION", serialization)
    r = FederationRun(PROGRAMS / "exchange.py")
    r.wait_for(r"(?s)(a got|b got).*(a got|b got)", timeout=30)
    r.wait()
    assert r.code == 0, r.text
    assert "[a] a got [0, 1, 2, 3, 4]" in r.text and "[b] b got [0, 1, 2, 3, 4]" in r.text, r.text
    r.assert_clean()


@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
def test_two_federates_sending_each_other_large_in_band_values_do_not_deadlock(
    monkeypatch, coordination
):
    """4 MB values with no large buffer in them travel inside the frames even
    on one host: both sides write more than the sockets hold, at once. Both
    used to block in send, neither reading (centralized still did after the
    decentralized fix: there the RTI may hear of a payload only once it is in
    the receiver's socket, so those links could not hold bytes back). Now a
    link holds back what the socket cannot take and, centralized, what the
    federate tells the RTI waits until those bytes have left."""
    monkeypatch.setenv("EX_COORDINATION", coordination)
    monkeypatch.setenv("EX_PAYLOAD", "bytes-free")
    r = FederationRun(PROGRAMS / "exchange.py")
    r.wait_for(r"(?s)(a got|b got).*(a got|b got)", timeout=60)
    r.wait()
    assert r.code == 0, r.text
    assert "[a] a got [0, 1, 2, 3, 4]" in r.text and "[b] b got [0, 1, 2, 3, 4]" in r.text, r.text
    if coordination == "centralized":
        assert "tardy" not in r.text, r.text
    # Decentralized, values may come tardy (delivered, at a later microstep):
    # moving 4 MB in-band takes longer than the 10 ms to each side's next
    # tag, and a symmetric exchange waits out both STP offsets.
    r.assert_clean()


def test_a_producer_with_a_standing_backlog_still_reports_its_progress_to_the_rti():
    """Centralized: P outruns its consumer S for the whole run (1 MB in-band
    values, S three times slower), so its link to S always holds bytes back.
    What P tells the RTI waits for the payloads sent before it, but must go
    out as S catches up: O's timer ticks need those grants. When P's frames
    waited for an empty backlog instead, O processed 1 tick (2 runs of 3)
    while P was sending; now ~10, about as far as S got."""
    r = run_federation(PROGRAMS / "backlog.py")
    assert r.code == 0, r.text
    assert "S got 60" in r.text, r.text
    last = int(re.search(r"P last send at (\d+)", r.text).group(1))
    ticks = eval(re.search(r"O ticks at (\[.*\])", r.text).group(1))
    assert len(ticks) == 31, r.text  # 0, 20, ..., 600 ms: the stop tag
    assert sum(t < last for t in ticks) >= 6, r.text
    r.assert_clean()


@pytest.mark.parametrize("size", [1_000_000, 80_000_000])
@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
def test_an_array_reaches_a_busy_receiver_after_its_producer_left(monkeypatch, coordination, size):
    """The producer sends once and finishes while the receiver is busy in a
    reaction; the receiver reads the reference a second later. Its arena
    must have reached the receiver first: the producer's first arena is
    mapped right after START, and an arena it adds later (80 MB does not fit
    the first) it hands over before it closes. Centralized, the receiver used
    to find the producer's store gone, drop the peer link without a word and
    wait for a grant forever; decentralized, it stopped before reading its
    socket and the message was lost in silence."""
    monkeypatch.setenv("EE_COORDINATION", coordination)
    monkeypatch.setenv("EE_BYTES", str(size))
    r = run_federation(PROGRAMS / "early_exit.py")
    assert r.code == 0, r.text
    assert f"consumer got {size} bytes, all 7: True" in r.text, r.text
    assert "ERROR" not in r.text and "tardy" not in r.text, r.text
    r.assert_clean()


@pytest.mark.parametrize("coordination", ["centralized", "decentralized"])
def test_a_message_whose_producer_left_unmapped_is_named_and_the_run_still_ends(
    monkeypatch, tmp_path, coordination
):
    """When the receiver stays busy until the producer's process is gone (its
    hand-over cut to 0.2 s here), the message is lost: both sides say so, naming
    who and which tag, and the federation still finishes (centralized, the
    receiver completes that tag anyway: the RTI counts the message in transit
    to it)."""
    monkeypatch.setenv("EE_COORDINATION", coordination)
    monkeypatch.setenv("EE_BYTES", "80000000")
    monkeypatch.setenv("EE_HANDOVER_S", "0.2")
    monkeypatch.setenv("EE_PIDFILE", str(tmp_path / "producer.pid"))
    r = run_federation(PROGRAMS / "early_exit.py")
    assert r.code == 0, r.text
    assert re.search(
        r"producer: leaving after 0\.2 s although consumer did not map what it was sent", r.text
    ), r.text
    assert re.search(
        r"consumer: dropped a message on EarlyExit\.producer\.out -> EarlyExit\.consumer\.inp "
        r"at tag \(500000000, 0\): .*federate producer left before this federate could map",
        r.text,
    ), r.text
    assert "consumer got nothing" in r.text, r.text
    r.assert_clean()
