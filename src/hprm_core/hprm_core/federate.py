"""One federate process: what ``hprm federate PROGRAM NAME`` runs.

Two kinds of program file make a federate:

- a ``@main(federated=True)`` program: the process builds the whole tree,
  derives the federation from it (every process derives the same one) and
  runs the top-level reactor called ``NAME``;
- a program whose ``@main`` is one ordinary reactor, started on its own (one
  executable per node, as ``ros2 launch`` starts nodes): the process builds
  only that reactor, names it ``NAME``, describes its ports to the RTI, and
  gets the federation back, matched by topic across every federate the RTI
  was told of (``hprm rti --federates camera,detector``).

Example, by hand (``camera.py`` and ``detector.py`` each have a ``@main``
reactor, one with ``Output(topic="/image")``, the other ``Input(topic="/image")``)::

    HPRM_SECRET=s hprm rti --address unix:/tmp/f/rti.sock --federation f \\
        --federates camera,detector &
    HPRM_SECRET=s hprm federate camera.py camera --rti unix:/tmp/f/rti.sock --federation f &
    HPRM_SECRET=s hprm federate detector.py detector --rti unix:/tmp/f/rti.sock --federation f
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from hprm_core.environment import Environment, reaction_specs
from hprm_core.errors import HprmError, ReactionError
from hprm_core.federation import RTI_WAIT_S, FederateCoordinator, FederationError
from hprm_core.process_output import setup_process_output
from hprm_core.reactor import Reactor
from hprm_core.scheduler import Scheduler
from hprm_core.startup import connect_rti
from hprm_core.structure import FederatedProgram, FederationGraph, describe_ports
from hprm_core.tag import Duration
from hprm_core.transport import Frame

log = logging.getLogger("hprm.federation")


def exit_code(name: str, run: Callable[[], int]) -> int:
    """Run federate ``name`` (``run`` returns its exit code) and turn how it
    ended into the process's: 1 after a reaction failed, 3 when the
    federation failed (another federate, the RTI, the handshake), each said
    in one line rather than a traceback."""
    try:
        return run()
    except ReactionError as exc:
        log.error("federate %s stopped after a reaction failed: %s", name, exc)
        return 1
    except FederationError as exc:
        log.error("federate %s stopped: %s", name, exc)
        return 3


def run_federate(
    program_path: str,
    name: str,
    *,
    rti: str,
    secret: bytes,
    federation: str,
    fast: bool | None = None,
    timeout: Duration = None,
    trace: Any = None,
    listen_dir: str | None = None,
    rti_wait: float = RTI_WAIT_S,
) -> int:
    """Run one federate of a program file; returns a process exit code.
    ``rti_wait``: seconds to wait for the RTI to listen (start order)."""
    from hprm_core.program import main_class

    cls = main_class(program_path)
    opts = _overridden(cls._hprm_main_options, fast, timeout)  # type: ignore[attr-defined]
    join = dict(rti=rti, secret=secret, federation=federation, listen_dir=listen_dir,
                rti_wait=rti_wait)  # fmt: skip
    if opts.get("federated"):
        program = FederatedProgram.from_main(cls(), opts.get("coordination", "centralized"))
        if name not in program.by_name:
            known = ", ".join(program.by_name)
            raise FederationError(f"{program_path} has no federate {name!r} (federates: {known})")
        return _run(program, name, opts, trace, **join)
    return run_self_described(cls(), name, options=opts, trace=trace, **join)


def run_self_described(
    reactor: Reactor,
    name: str,
    *,
    rti: str,
    secret: bytes,
    federation: str,
    options: dict[str, Any] | None = None,
    fast: bool | None = None,
    timeout: Duration = None,
    trace: Any = None,
    listen_dir: str | None = None,
    rti_wait: float = RTI_WAIT_S,
    labels: dict[str, str] | None = None,
    on_graph: Callable[[FederationGraph], None] | None = None,
) -> int:
    """Run ``reactor``, built by this process (a program's ``@main`` reactor, a
    ported ROS 2 node), as federate ``name`` of a federation whose RTI matches
    ports by topic; returns a process exit code. ``options``: as ``@main``'s.
    ``labels``: what the federate says of itself to the others
    (``FederationGraph.labels``), e.g. the ROS 2 node name a gateway announces.
    ``on_graph``: shown the federation the RTI matched, before the start (what is
    connected to what: a ported node warns of calls no one will answer)."""
    opts = _overridden(options or {}, fast, timeout)
    reactor.__dict__["name"] = name  # its ports read "NAME.port", as the graph names them
    graph = describe_self(reactor, name, rti, secret, federation, rti_wait, labels=labels)
    if on_graph is not None:
        on_graph(graph)
    return _join(reactor, name, graph, opts, trace, rti=rti, secret=secret,
                 federation=federation, listen_dir=listen_dir, rti_wait=rti_wait)  # fmt: skip


def run_boundary(
    build: Callable[[list[dict[str, Any]], FederationGraph], Reactor],
    name: str,
    *,
    rti: str,
    secret: bytes,
    federation: str,
    options: dict[str, Any] | None = None,
    listen_dir: str | None = None,
    rti_wait: float = RTI_WAIT_S,
    takes: str = "both",
) -> int:
    """Run the federation's boundary federate (a gateway to another
    middleware): it describes no ports of its own; the RTI gives it one per
    topic the other federates leave open (:func:`hprm_core.assembly.open_ports`),
    and ``build(ports, graph)`` makes the reactor with exactly those (the graph
    says which federates are at the other ends). ``takes``: ``both``, or only
    the ``sources`` (topics fed into the federation) or the ``sinks`` (topics
    leaving it), so that a player and a recorder can be two federates."""
    opts = _overridden(options or {}, None, None)
    graph = describe_self(None, name, rti, secret, federation, rti_wait, open_topics=takes)
    reactor = build(graph.assigned.get(name, []), graph)
    reactor.__dict__["name"] = name
    _check_boundary(reactor, name)
    return _join(reactor, name, graph, opts, None, rti=rti, secret=secret,
                 federation=federation, listen_dir=listen_dir, rti_wait=rti_wait)  # fmt: skip


def add_boundary_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags a boundary federate's process takes (a gateway, a bag player or recorder),
    as the launchers pass them: one set, so that every such process is started alike."""
    parser.add_argument("--rti", required=True, help="RTI address: unix:/path or tcp:host:port")
    parser.add_argument("--federation", required=True, help="federation id (the RTI's)")
    parser.add_argument("--listen-dir", help="private directory for peer sockets (decentralized)")
    parser.add_argument("--stp-offset", help="decentralized: safe-to-process offset")


def boundary_main(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    build: Callable[[list[dict[str, Any]], FederationGraph], Reactor],
    *,
    takes: str = "both",
    options: dict[str, Any] | None = None,
) -> int:
    """The rest of a boundary federate's ``main`` once its flags are parsed
    (`add_boundary_arguments`, and a positional ``name``): the secret from
    ``HPRM_SECRET`` (never a flag: command lines are world-readable in /proc),
    log lines a launcher can show, then `run_boundary`, its end as an exit code."""
    secret = os.environ.get("HPRM_SECRET")
    if not secret:
        parser.error("set HPRM_SECRET to the federation's shared secret")
    setup_process_output()
    opts = dict(options or {})
    if args.stp_offset:
        opts["stp_offset"] = args.stp_offset
    where = dict(rti=args.rti, secret=secret.encode(), federation=args.federation,
                 listen_dir=args.listen_dir)  # fmt: skip
    return exit_code(
        args.name, lambda: run_boundary(build, args.name, options=opts, takes=takes, **where)
    )


def _join(
    reactor: Reactor,
    name: str,
    graph: FederationGraph,
    opts: dict[str, Any],
    trace: Any,
    **where: Any,
) -> int:
    wanted = opts.get("coordination")
    if wanted is not None and wanted != graph.coordination:
        raise FederationError(
            f"{name} asks for {wanted} coordination; the RTI runs the federation "
            f"{graph.coordination}"
        )
    program = FederatedProgram(graph, {name: reactor})
    return _run(program, name, opts, trace, **where)


def _overridden(options: dict[str, Any], fast: bool | None, timeout: Duration) -> dict[str, Any]:
    """``@main`` options with the command line's ``--fast`` / ``--timeout`` over them."""
    opts = dict(options)
    if fast is not None:
        opts["fast"] = fast
    if timeout is not None:
        opts["timeout"] = timeout
    return opts


def _run(
    program: FederatedProgram,
    name: str,
    opts: dict[str, Any],
    trace: Any,
    *,
    rti: str,
    secret: bytes,
    federation: str,
    listen_dir: str | None,
    rti_wait: float,
) -> int:
    me = program.by_name[name]
    assert me.reactor is not None
    coordinator = FederateCoordinator(
        program,
        me,
        rti=rti,
        secret=secret,
        federation=federation,
        stp_offset=program.per_federate(opts, "stp_offset")[name],
        listen_dir=listen_dir,
        rti_wait=rti_wait,
    )
    if program.coordination == "decentralized" and opts.get("fast"):
        raise FederationError("fast mode cannot be used with decentralized coordination")
    env = Environment(
        me.reactor,
        fast=bool(opts.get("fast")),
        timeout=opts.get("timeout"),
        keepalive=opts.get("keepalive"),
        on_error=opts.get("on_error", "stop"),
        trace=trace,
        coordinator=coordinator,
        busy_poll=program.per_federate(opts, "busy_poll")[name],
    )
    coordinator.sched = env.scheduler
    coordinator.wire(env)
    restore = _stop_on_signals(env.scheduler, name)
    try:
        env.run()
        # What crossed this federate's sockets (frames, headers included):
        # large values go by shared-memory reference and stay off this count.
        log.info("%s left: %d bytes sent on its sockets", name, coordinator.bytes_sent())
        if coordinator.self_granted:
            log.info("%s granted itself %d tags (grants.self_paced)", name,
                     coordinator.self_granted)  # fmt: skip
    except KeyboardInterrupt:  # a signal while joining, or a second one (not caught)
        started = env.scheduler.start_time != 0
        why = "again while stopping" if started else "before the federation started"
        raise FederationError(f"interrupted {why}") from None
    finally:
        restore()
        coordinator.close()
    if coordinator.failure is not None:
        raise FederationError(coordinator.failure)
    return 0


def _check_boundary(reactor: Reactor, name: str) -> None:
    """The RTI takes a boundary federate's word that its inputs never cause its
    outputs at the same tag (``FederationGraph.boundaries``): a reaction that
    reads an input and writes an output would be a zero-delay path it does
    not know of. Refused here, by name."""
    kinds = {e.name: e.kind for e in reactor._elements}
    for spec in reaction_specs(reactor):
        reads = [t for t in (*spec.triggers, *spec.sources) if kinds.get(t) == "input"]
        writes = [e for e in spec.effects if kinds.get(e) in ("output", "logical action")]
        if reads and writes:
            raise FederationError(
                f"{name}: a boundary federate's reaction {spec.name} reads {reads[0]} and "
                f"writes {writes[0]}; its inputs must leave the federation, and what it "
                "sends must come in from outside (a physical action)"
            )


def describe_self(
    reactor: Reactor | None,
    name: str,
    rti: str,
    secret: bytes,
    federation: str,
    rti_wait: float = RTI_WAIT_S,
    open_topics: str | None = None,
    labels: dict[str, str] | None = None,
) -> FederationGraph:
    """Tell the RTI our ports; wait for the graph it assembles once every
    federate it expects has done the same. Why a connection of its own: the
    join that follows is the one every federate makes, unchanged, with the
    structure now known."""
    hello = {
        "federation": federation,
        "name": name,
        "describe": describe_ports(reactor) if reactor is not None else [],
        "pid": os.getpid(),
    }
    if open_topics:
        hello["open_topics"] = open_topics
    if labels:
        hello["labels"] = dict(labels)
    conn = connect_rti(rti, secret, hello, rti_wait, name)
    try:
        conn.sock.settimeout(None)  # the RTI answers once all described, or fails them all
        kind, payload = conn.recv()
    except (EOFError, OSError) as exc:
        raise FederationError(
            f"lost the RTI at {rti} while it assembled the federation ({exc})"
        ) from None
    finally:
        conn.close()
    if kind == Frame.FAILED:
        raise FederationError(bytes(payload).decode())
    if kind != Frame.GRAPH:
        raise FederationError(f"RTI sent {kind.name} instead of the federation graph")
    try:
        return FederationGraph.from_json(json.loads(bytes(payload)))
    except (ValueError, HprmError) as exc:
        raise FederationError(f"the RTI sent a malformed federation graph: {exc}") from None


def _once_more(name: str) -> Callable[[int, Any], None]:
    first = time.monotonic()

    def repeated(signum: int, frame: Any) -> None:
        # Within a second it is the same key press (the terminal's SIGINT and the
        # launch's): nothing to say. Later, someone is waiting for the stop.
        if time.monotonic() - first > 1.0:
            log.info("%s: SIGINT again, still stopping (SIGTERM ends it at once)", name)

    return repeated


def _stop_on_signals(sched: Scheduler, name: str) -> Callable[[], None]:
    """Ctrl-C or SIGTERM (what ``hprm run`` sends its federates on Ctrl-C, and
    what launch systems send to stop a node): stop the whole federation at one
    tag, so every federate runs its shutdown reactions (a driver halting its
    motors, say). A second signal ends the process at once, but for a repeated
    SIGINT (see ``on_signal``). Returns a function
    that puts the previous handlers back. Main thread only; elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.getsignal(s) for s in signals}
    stopping = []  # a signal asked for the stop

    def restore() -> None:
        for s, handler in previous.items():
            # Once stopping on a signal, a late repeat of SIGINT (a loaded
            # machine delays the launch's own) must not kill the process while
            # it finishes cleanly: ignored by the OS (SIG_IGN also holds while
            # the interpreter shuts down, when Python handlers are gone).
            signal.signal(s, signal.SIG_IGN if stopping and s == signal.SIGINT else handler)

    def on_signal(signum: int, frame: Any) -> None:
        # The next signal is not caught, but for SIGINT: Ctrl-C in a terminal
        # reaches every process of the group, and ros2 launch then sends its
        # own SIGINT to each: two for one key press. A launch escalates with
        # SIGTERM (then SIGKILL) if the stop takes too long.
        signal.signal(signal.SIGTERM, previous[signal.SIGTERM])
        signal.signal(signal.SIGINT, _once_more(name))
        if sched.start_time == 0:  # still joining: nothing to stop cleanly yet
            restore()
            raise KeyboardInterrupt
        # Running, or past the loop already and leaving (a stop another federate
        # asked for came first, and a loaded machine delayed the launch's SIGTERM):
        # a stop either way, never an interruption of the clean exit under way.
        stopping.append(signum)
        log.info("%s: %s, stopping the federation", name, signal.Signals(signum).name)
        # request_stop takes the scheduler's lock: never from inside a handler
        # that may have interrupted the very code holding it.
        threading.Thread(target=sched.request_stop, name=f"{name}-stop", daemon=True).start()

    for s in signals:
        signal.signal(s, on_signal)
    return restore
