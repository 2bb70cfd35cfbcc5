"""An idle gateway's shape, centralized: a federate with a physical action that
never fires, in a zero-delay cycle with an echo federate (as a bridge's
gateway with a ported node behind it), left idle until the timeout. Each side
logs the bytes it sent when it leaves."""

from hprm_core import Input, Output, PhysicalAction, Reactor, main, reaction


class Boundary(Reactor):
    def __init__(self):
        super().__init__()
        self.arrived = PhysicalAction()
        self.out = Output()
        self.back = Input()

    @reaction("arrived", effects="out")
    def enter(self):
        self.out.set(self.arrived.value)

    @reaction("back")
    def leave(self):
        print(f"BOUNDARY back={self.back.value}", flush=True)


class Echo(Reactor):
    def __init__(self):
        super().__init__()
        self.inp = Input()
        self.out = Output()

    @reaction("inp", effects="out")
    def echo(self):
        self.out.set(self.inp.value)


@main(federated=True, timeout="1500 ms")
class IdleBoundary(Reactor):
    def __init__(self):
        super().__init__()
        self.boundary = Boundary()
        self.echo = Echo()
        self.connect(self.boundary.out, self.echo.inp)
        self.connect(self.echo.out, self.boundary.back)
