"""The ``hprm`` command: run and draw reactor programs, run benchmarks.

Examples::

    hprm run examples/pipeline.py --fast --timeout "1 s" --trace run.jsonl
    hprm graph examples/bank.py --format dot
    hprm bench reactions --quick --json out.json
    hprm bench                      # lists the installed benchmarks
    hprm federate prog.py camera --rti tcp:10.0.0.2:15045 --federation ID
    hprm rti --address tcp:0.0.0.0:15045 --federates 3 --federation ID
"""

from __future__ import annotations

import argparse
import logging
import sys

from hprm_core import bench
from hprm_core.process_output import setup_process_output


def _cmd_bench(args: argparse.Namespace, rest: list[str]) -> int:
    if not args.name:
        names = sorted(bench.available())
        print("available benchmarks: " + (", ".join(names) or "none"))
        return 0
    from hprm_core.launcher import INTERRUPTED, sigterm_as_interrupt

    main = bench.load(args.name)
    try:
        with sigterm_as_interrupt():  # what the benchmark started is stopped and removed
            return int(main(rest) or 0)
    except KeyboardInterrupt:  # Ctrl-C is how one ends a long benchmark: not a crash
        pass
    except Exception as exc:
        if not caused_by_interrupt(exc):
            raise
    print(f"hprm bench {args.name}: interrupted", file=sys.stderr)
    return INTERRUPTED


def caused_by_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C in another library's exception: Python turns one raised
    in a class body's ``__set_name__`` into a RuntimeError (cyclonedds' classes, while an
    interrupted benchmark imports them: CI saw its traceback), and others wrap what they
    catch; the KeyboardInterrupt stays in the chain of causes.

    Example::

        >>> try:
        ...     try:
        ...         raise KeyboardInterrupt
        ...     except KeyboardInterrupt as ki:
        ...         raise RuntimeError("Error calling __set_name__") from ki
        ... except RuntimeError as exc:
        ...     caused_by_interrupt(exc), caused_by_interrupt(ValueError())
        (True, False)
    """
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _cmd_run(args: argparse.Namespace, rest: list[str]) -> int:
    from hprm_core import program

    options = dict(fast=True if args.fast else None, timeout=args.timeout, trace=args.trace)
    cls = program.main_class(args.program)  # a bad file: HprmError, exit code 2 (main)
    if cls._hprm_main_options.get("federated"):  # type: ignore[attr-defined]
        from hprm_core.launcher import launch

        return launch(args.program, **options)
    return program.run_main(cls, **options)


def _cmd_graph(args: argparse.Namespace, rest: list[str]) -> int:
    from hprm_core import diagram, program

    print(diagram.render(program.load_main(args.program), fmt=args.format))
    return 0


def _cmd_rti(args: argparse.Namespace, rest: list[str]) -> int:
    from hprm_core import rti, rti_process
    from hprm_core.errors import AssemblyError
    from hprm_core.tag import duration

    secret = _secret(args)
    if isinstance(args.federates, int) and (
        args.after or args.break_cycles or args.coordination != "centralized"
    ):
        args.parser.error(
            "--coordination, --after and --break-cycles go with --federates NAME,NAME,..."
        )
    try:
        server = rti.RTI(
            args.address,
            federates=args.federates,
            secret=secret.encode(),
            federation=args.federation,
            start_delay=duration(args.start_delay),
            coordination=args.coordination,
            after=dict(args.after),
            break_cycles=args.break_cycles,
        )
    except AssemblyError as exc:
        args.parser.error(str(exc))
    return rti_process.run_rti(server, args.remove_dir, duration(args.signal_grace) / 1e9)


def _secret(args: argparse.Namespace) -> str:
    """The federation's shared secret, from --secret-file (kept out of the process's
    environment, which /proc shows) or else $HPRM_SECRET; a usage error if neither."""
    import os

    secret = os.environ.get("HPRM_SECRET", "")
    if args.secret_file:
        try:
            with open(args.secret_file, encoding="utf-8") as f:
                secret = f.read().strip()
        except OSError as exc:
            args.parser.error(f"--secret-file: {exc.strerror}: {args.secret_file}")
    if not secret:
        args.parser.error("give the federation secret in HPRM_SECRET or --secret-file")
    return secret


def _cmd_federate(args: argparse.Namespace, rest: list[str]) -> int:
    from hprm_core.federate import exit_code, run_federate
    from hprm_core.federation import RTI_WAIT_S

    secret = _secret(args)
    return exit_code(
        args.name,
        lambda: run_federate(
            args.program,
            args.name,
            rti=args.rti,
            secret=secret.encode(),
            federation=args.federation,
            fast=True if args.fast else None,
            timeout=args.timeout,
            trace=args.trace,
            listen_dir=args.listen_dir,
            rti_wait=RTI_WAIT_S if args.rti_wait is None else args.rti_wait,
        ),
    )


def duration_arg(text: str) -> str:
    """An option's duration, checked when the command line is read: a typo
    must not surface after an RTI and every federate were started."""
    from hprm_core.tag import duration

    try:
        ns = duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if ns < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative; a duration must be >= 0")
    return text


def seconds_arg(text: str) -> float:
    """A wait in seconds: a duration as every other option takes ("2 s", "500 ms"), or a
    bare number of seconds, as ``--rti-wait`` always took."""
    try:
        seconds = float(text)
    except ValueError:
        from hprm_core.tag import duration

        return duration(duration_arg(text)) / 1e9
    if not 0 <= seconds < float("inf"):  # nan and inf too: a wait must end
        raise argparse.ArgumentTypeError(f"{text!r}: a wait must be a number of seconds >= 0")
    return seconds


def federates_arg(text: str) -> int | list[str]:
    """``--federates``: a count, or names in id order."""
    if text.isdigit():
        if int(text) < 1:
            raise argparse.ArgumentTypeError("a federation needs at least one federate")
        return int(text)
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"empty federate name in {text!r}")
    return names


def after_arg(text: str) -> tuple[str, int]:
    """``--after TOPIC=DURATION``: (topic, ns)."""
    from hprm_core.tag import duration

    topic, eq, delay = text.partition("=")
    if not eq or not topic:
        raise argparse.ArgumentTypeError(f"expected TOPIC=DURATION, got {text!r}")
    try:
        return topic, duration(duration_arg(delay))
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None


# Commands that hand the rest of the command line to a parser of their own.
_PASS_THROUGH = ("bench",)


SECRET_FILE_HELP = "file holding the federation's shared secret (else $HPRM_SECRET)"


def _run_options(p: argparse.ArgumentParser) -> None:
    """What ``run`` and ``federate`` both take about running a program."""
    p.add_argument("--fast", action="store_true", help="do not wait for physical time")
    p.add_argument("--timeout", type=duration_arg, help='stop at this logical time, e.g. "2 s"')
    p.add_argument("--trace", metavar="PATH", help="write one JSON line per reaction execution")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hprm", description="HPRM deterministic reactor runtime")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run a reactor program")
    r.add_argument("program", help="Python file defining a @main reactor")
    _run_options(r)
    r.set_defaults(func=_cmd_run, parser=r)

    g = sub.add_parser("graph", help="print the program's dataflow diagram")
    g.add_argument("program", help="Python file defining a @main reactor")
    g.add_argument("--format", choices=["mermaid", "dot"], default="mermaid")
    g.set_defaults(func=_cmd_graph, parser=g)

    f = sub.add_parser("federate", help="run one federate of a federation")
    f.add_argument(
        "program",
        help="Python file defining a @main(federated=True) reactor, or a @main reactor "
        "that is one federate on its own (it describes its ports to the RTI)",
    )
    f.add_argument("name", help="the federate (top-level reactor) to run, or to name this one")
    f.add_argument("--rti", required=True, help="RTI address: unix:/path or tcp:host:port")
    f.add_argument("--federation", required=True, help="federation id (the RTI's)")
    f.add_argument("--secret-file", help=SECRET_FILE_HELP)
    f.add_argument("--listen-dir", help="private directory for peer sockets (decentralized)")
    f.add_argument(
        "--rti-wait",
        type=seconds_arg,
        metavar="DURATION",
        help="how long to wait for the RTI to listen, for launch systems that may start it "
        'after the federates ("2 s", or seconds; default: 10 s)',
    )
    _run_options(f)
    f.set_defaults(func=_cmd_federate, parser=f)

    rt = sub.add_parser("rti", help="run the RTI of a federation")
    rt.add_argument("--address", required=True, help="unix:/path or tcp:host:port")
    rt.add_argument(
        "--federates",
        type=federates_arg,
        required=True,
        metavar="N | NAME,NAME,...",
        help="how many federates (each brings the structure of their common program), or "
        "their names in id order (each describes its ports; connections are matched by topic)",
    )
    rt.add_argument("--federation", required=True, help="federation id shared with the federates")
    rt.add_argument(
        "--coordination",
        choices=("centralized", "decentralized"),
        default="centralized",
        help="with --federates NAME,...: how the federation is coordinated",
    )
    rt.add_argument(
        "--after",
        action="append",
        default=[],
        type=after_arg,
        metavar="TOPIC=DURATION",
        help="with --federates NAME,...: a logical delay on every connection of TOPIC "
        "(repeatable; breaks a zero-delay cycle)",
    )
    rt.add_argument(
        "--break-cycles",
        action="store_true",
        help="with --federates NAME,...: delay by one microstep every connection that closes "
        "a loop of federates without --after (ROS nodes in a feedback loop); "
        "otherwise such a loop is refused as a causality loop",
    )
    rt.add_argument("--secret-file", help=SECRET_FILE_HELP)
    rt.add_argument("--start-delay", type=duration_arg, default="250 ms", metavar="DURATION",
                    help="the start time: this far after the last federate is ready, "
                    "so every federate has it before it is due (default: 250 ms)")  # fmt: skip
    rt.add_argument(
        "--signal-grace",
        type=duration_arg,
        default="0 s",
        metavar="DURATION",
        help="on SIGINT/SIGTERM keep serving up to DURATION while the federates stop the "
        "federation (for launch systems that signal every process at once, as ros2 launch "
        "does); default: stop at once",
    )
    rt.add_argument(
        "--remove-dir",
        metavar="DIR",
        help="delete DIR when the RTI exits, however it exits (hprm run passes its private "
        "socket directory: nothing is left behind even if the launcher is killed)",
    )
    rt.set_defaults(func=_cmd_rti, parser=rt)

    b = sub.add_parser("bench", help="run a benchmark (no NAME: list them)", add_help=False)
    b.add_argument("name", nargs="?", help="benchmark name")
    b.set_defaults(func=_cmd_bench)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    setup_process_output()
    parser = build_parser()
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        parser.error(f"unknown option {argv[0]} (options go after the command)")
    args, rest = parser.parse_known_args(argv)
    if rest and args.command not in _PASS_THROUGH:
        args.parser.error(f"unrecognized arguments: {' '.join(rest)}")
    from hprm_core.errors import HprmError

    try:
        return args.func(args, rest)
    # A bad program, option or file (ValueError: a bad value given through the API,
    # e.g. @main's options), not a crash: one line, usage error code.
    except (HprmError, FileNotFoundError, ImportError, ValueError) as exc:
        logging.getLogger("hprm").error("%s", exc)
        return 2


if __name__ == "__main__":
    sys.exit(main())
