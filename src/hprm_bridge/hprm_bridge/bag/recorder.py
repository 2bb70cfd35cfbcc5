"""The bag recorder: a federate that writes what the nodes publish to a bag.

A boundary federate that takes the sinks: the RTI gives it an input per
topic a node publishes and none subscribes to. Each message is written
(MCAP by default, or sqlite3) with its tag as the timestamp, relative to the
federation's start and shifted to ``time_base`` (the played bag's first
timestamp), so two runs of one bag record the same timestamps; messages of
one tag keep their order. Each message's tag (time and microstep) is also
written, in the same order, on ``/hprm/tag`` (``hprm_msgs/msg/Tag``).

In decentralized coordination a message that reaches the recorder after its
tag was processed (an STP offset smaller than the nodes' latency) is still
written, and the recorder then fails the run: that recording may differ
from another run's.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from hprm_bridge.bag.source import BagError
from hprm_bridge.liveliness_change import LivelinessChange
from hprm_bridge.parameter_services import is_parameter_topic
from hprm_core import Input, Reactor

log = logging.getLogger("hprm.bag")

TAG_TOPIC = "/hprm/tag"
TAG_TYPE = "hprm_msgs/msg/Tag"


class BagRecorder(Reactor):
    def __init__(
        self, path: str, ports: list[dict[str, Any]], storage: str = "mcap", time_base: int = 0
    ) -> None:
        super().__init__()
        self.path = Path(path)
        self.storage = storage
        self.time_base = time_base
        self.recorded = 0
        self.tardy = 0
        self._writer: Any = None
        self._inputs: list[tuple[str, str, Input]] = []
        for p in ports:  # inputs only: the RTI gives a sink-taker nothing else
            inp = Input(topic=p["topic"], msg_type=p["msg_type"])
            self.attach(p["port"], inp)
            if not is_parameter_topic(p["topic"]):  # replies to ros2 param calls: not data
                self._inputs.append((p["topic"], p["msg_type"], inp))
        self.add_reaction(self._open, self.startup, name="open")
        for i, (topic, msg_type, inp) in enumerate(self._inputs):
            record = self._recorder(topic, msg_type, inp)
            self.add_reaction(record, inp, stp_violation=self._late(record), name=f"record{i}")
        self.add_reaction(self._close, self.shutdown, name="close")

    def _open(self) -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer

        from hprm_bridge.wire.typesys import default_registry

        if self.path.exists():
            raise BagError(f"{self.path}: already exists (rosbag2 writes a new directory)")
        plugin = StoragePlugin.MCAP if self.storage == "mcap" else StoragePlugin.SQLITE3
        self._writer = Writer(self.path, version=8, storage_plugin=plugin)
        self._writer.open()
        reg = default_registry()
        for t in {TAG_TYPE, *(msg_type for _, msg_type, _ in self._inputs)}:
            reg.resolve(t)  # .msg packages are loaded on first use; the writer needs them now
        self._types = reg
        self._conns = {
            topic: self._writer.add_connection(topic, msg_type, typestore=reg.store)
            for topic, msg_type, _ in self._inputs
        }
        self._tag_conn = self._writer.add_connection(TAG_TOPIC, TAG_TYPE, typestore=reg.store)
        if not self._inputs:
            log.warning("bag: the nodes publish nothing that none of them subscribes to")

    def _recorder(self, topic: str, msg_type: str, inp: Input) -> Any:
        from hprm_bridge.messages import message_class

        tag_class = message_class(TAG_TYPE)

        def record() -> None:
            t = self.tag.time - self.start_time + self.time_base
            for msg in inp.value:  # a ported node's port: its publishes of one tag, in order
                if type(msg) is LivelinessChange:  # not a message
                    continue
                self._writer.write(self._conns[topic], t, bytes(self._types.encode(msg, msg_type)))
                tag = tag_class(time=t, microstep=int(self.tag[1]))
                self._writer.write(self._tag_conn, t, bytes(self._types.encode(tag, TAG_TYPE)))
                self.recorded += 1

        return record

    def _late(self, record: Any) -> Any:
        def late() -> None:
            self.tardy += 1
            record()

        return late

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        log.info("bag: recorded %d messages to %s", self.recorded, self.path)
        if self.tardy:
            raise BagError(
                f"{self.tardy} message(s) reached the recorder after their tag (decentralized "
                "coordination: the STP offset is smaller than the nodes' latency); this "
                "recording may differ from another run's: raise --stp-offset"
            )


def main(argv: list[str] | None = None) -> int:
    from hprm_core.federate import add_boundary_arguments, boundary_main

    p = argparse.ArgumentParser(prog="python -m hprm_bridge.bag.recorder", description=__doc__)
    p.add_argument("path")
    p.add_argument("name")
    add_boundary_arguments(p)
    p.add_argument("--fast", action="store_true")
    p.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap")
    p.add_argument("--time-base", type=int, default=0)
    args = p.parse_args(argv)
    return boundary_main(
        p,
        args,
        lambda ports, graph: BagRecorder(args.path, ports, args.storage, args.time_base),
        takes="sinks",
        options={"fast": args.fast},
    )


if __name__ == "__main__":
    sys.exit(main())
