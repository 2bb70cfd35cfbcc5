"""One federate on its own (no federated @main): counts on topic /count.

Started by hand with `hprm federate solo_counter.py NAME`, it describes its
port to the RTI, which matches it with whatever subscribes to /count.

    SOLO_TYPE   the message type it declares (default "builtins.int")
    SOLO_TOPIC  the topic it publishes on (default "/count")
    SOLO_LABEL  set: publish a tuple ("LABEL N",), as a ported ROS 2 node's port carries
                its messages of a tag (for several counters on one topic)
"""

import os

from hprm_core import Output, Reactor, Timer, main, reaction


@main(timeout="50 ms")
class Counter(Reactor):
    def __init__(self):
        super().__init__()
        self.out = Output(
            topic=os.environ.get("SOLO_TOPIC", "/count"),
            msg_type=os.environ.get("SOLO_TYPE", "builtins.int"),  # any: nothing checks it
        )
        self.tick = Timer(period="10 ms")
        self.n = 0

    @reaction("tick", effects="out")
    def count(self):
        self.n += 1
        label = os.environ.get("SOLO_LABEL")
        self.out.set((f"{label} {self.n}",) if label else self.n)
