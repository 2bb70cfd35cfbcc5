"""The RTI's record of a joining federate (`hprm_core.rti_federate`), from a real hello.

Federates join end to end in test_federation.py; here, what the record keeps of a hello
whose optional parts are malformed: the lists the RTI acts on by itself (socket files it
deletes when the federate dies, causality it checks for loops) keep only well-formed
entries, and a federate that names none gets empty lists, not an error.
"""

import socket

from hprm_core.rti_federate import Federate
from hprm_core.tag import NEVER
from hprm_core.transport import Connection

DESC = {"name": "camera", "upstream": [[0, None], [2, 5_000_000]], "cycle": False}


def _joining(hello):
    a, b = socket.socketpair()
    try:
        return Federate.joining(1, DESC, Connection(a, "test"), hello)
    finally:
        a.close()
        b.close()


def test_a_well_formed_hello_is_kept_as_it_is():
    wait = {"inp": 0, "via": "camera.in", "out": 1, "reader": "r", "writer": "w"}
    fed = _joining({"listen": "/tmp/x.sock", "physical": True, "physical_time": 7,
                    "sockets": ["/tmp/x.sock"], "waits": [wait]})  # fmt: skip
    assert (fed.id, fed.name, fed.upstream) == (1, "camera", [(0, None), (2, 5_000_000)])
    assert fed.physical and not fed.reactive and not fed.boundary
    assert (fed.listen, fed.physical_time, fed.sockets, fed.waits) == (
        "/tmp/x.sock", 7, ["/tmp/x.sock"], [wait])  # fmt: skip
    assert fed.net == fed.ltc == fed.granted == NEVER and not fed.outbox


def test_malformed_socket_and_causality_entries_are_dropped():
    good = {"inp": 0, "via": "v", "out": 1, "reader": "r", "writer": "w"}
    fed = _joining({
        "sockets": ["/tmp/a.sock", 3, None, {"path": "/etc/passwd"}],
        "waits": [good, {"inp": "0", "via": "v", "out": 1, "reader": "r", "writer": "w"},
                  {"inp": 0}, "loop", None],
    })  # fmt: skip
    assert fed.sockets == ["/tmp/a.sock"]
    assert fed.waits == [good]
    assert _joining({"waits": {"not": "a list"}}).waits == []
    assert _joining({}).sockets == [] and _joining({}).waits == []
