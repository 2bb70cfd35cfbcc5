"""One federate on its own that prints what arrives on topic /count (see
solo_counter.py). Its port is named differently from the counter's: only
the topic matches them."""

from hprm_core import Input, Reactor, main, reaction


# stp_offset: decentralized, a tag is processed 300 ms after its time, so the
# counters' values for it have arrived (the offset is ignored when centralized);
# 30 ms was not enough beside two CPU hogs (a tardy value, pure-Python CI part)
@main(timeout="50 ms", stp_offset="300 ms")
class Printer(Reactor):
    def __init__(self):
        super().__init__()
        self.numbers = Input(topic="/count", msg_type=int)

    @reaction("numbers")
    def show(self):
        print(f"PRINTER got {self.numbers.value} at {self.elapsed // 1_000_000} ms", flush=True)
