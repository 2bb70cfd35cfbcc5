"""Launch a federation from one command: the RTI plus one process per federate.

``hprm run PROGRAM.py`` uses this for programs marked ``@main(federated=True)``
(and ``ros2 launch`` files use the same pieces). The launcher

- creates a private directory (mode 0700) for the Unix sockets and a random
  shared secret, passed to children through the environment, never argv;
- starts the RTI and every federate as child processes that die with the
  launcher (``PR_SET_PDEATHSIG``), each in its own process group; the RTI is
  told the directory and removes it when it exits, so even a launcher killed
  with SIGKILL (federates die at once; the RTI gets SIGTERM) leaves nothing;
- streams their output line by line, prefixed with the federate's name;
- returns the first non-zero exit code, and tears everything down on Ctrl-C
  or as soon as any process fails: SIGTERM to the federates, which stop the
  federation at one tag and run their shutdown reactions, then to the RTI,
  then SIGKILL to whatever is left after a grace period;
- removes the directory afterwards, whatever happened.

Example::

    from hprm_core.launcher import launch
    code = launch("examples/federated_pipeline.py", timeout="1 s")
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from hprm_core.program import main_class
from hprm_core.structure import FederatedProgram
from hprm_core.tag import Duration

GRACE_S = 3.0


def _die_with_parent(sig: int) -> Callable[[], None]:
    """For ``preexec_fn``: the child gets ``sig`` when the launcher dies."""

    def setup() -> None:
        with contextlib.suppress(Exception):
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(1, sig)  # PR_SET_PDEATHSIG
        os.setpgrp()

    return setup


_print_lock = threading.Lock()


def _print_line(line: str) -> None:
    """Print one whole line: output pumps of several federates run at once,
    and ``print`` writes the text and the newline separately."""
    with _print_lock:
        print(line, flush=True)


#: The exit status of a run stopped by Ctrl-C or SIGTERM (the shell's 128 + SIGINT).
INTERRUPTED = 130


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (``timeout``, a process manager, ``ros2 launch``) unwinds like Ctrl-C, so
    ``finally`` blocks run: child processes stopped, temporary directories removed.
    Python's default dies on the spot. Only in the main thread (signals go there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Launch:
    """A running federation: its processes, their output, their exit codes."""

    def __init__(
        self,
        program: str | Path,
        *,
        fast: bool | None = None,
        timeout: Duration = None,
        trace: str | None = None,
        output: Callable[[str], None] | None = None,
        extra_args: dict[str, list[str]] | None = None,
    ) -> None:
        path = str(Path(program).resolve())
        cls = main_class(path)
        opts = cls._hprm_main_options  # type: ignore[attr-defined]
        structure = FederatedProgram.from_main(cls(), opts.get("coordination", "centralized"))
        for key in ("stp_offset", "busy_poll"):  # a misspelt federate name fails here, once
            structure.per_federate(opts, key)
        cli = [sys.executable, "-m", "hprm_core.cli"]
        commands = {}
        for f in structure.federates:
            args = [*cli, "federate", path, f.name]
            if fast:
                args.append("--fast")
            if timeout is not None:
                args += ["--timeout", str(timeout)]
            if trace:
                base = Path(trace)
                args += ["--trace", str(base.with_name(f"{base.stem}.{f.name}{base.suffix}"))]
            commands[f.name] = args + (extra_args or {}).get(f.name, [])
        self._start(commands, [str(len(commands))], output)

    @classmethod
    def of_processes(
        cls,
        commands: dict[str, list[str]],
        *,
        rti_args: Sequence[str] = (),
        output: Callable[[str], None] | None = None,
    ) -> Launch:
        """A federation of federates that describe themselves (one executable
        each): ``commands`` maps each federate's name to its command line, to
        which ``--rti ADDRESS --federation ID --listen-dir DIR`` are added (before
        a ``--``, after which a wrapper passes the rest to its program); the RTI
        gets the names and ``rti_args`` (e.g. ``--coordination``)."""
        launch = cls.__new__(cls)
        launch._start(commands, [",".join(commands), *rti_args], output)
        return launch

    def _start(
        self,
        commands: dict[str, list[str]],
        federates_arg: list[str],
        output: Callable[[str], None] | None,
    ) -> None:
        self.names = list(commands)
        self.first_failure = 0  # the exit status of the first process that failed
        self.output = output or _print_line
        self.dir = tempfile.mkdtemp(prefix="hprm-")
        os.chmod(self.dir, 0o700)
        self.secret = secrets.token_hex(32)
        self.federation = uuid.uuid4().hex
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._readers: list[threading.Thread] = []
        env = dict(os.environ, HPRM_SECRET=self.secret, PYTHONUNBUFFERED="1")
        rti_address = f"unix:{self.dir}/rti.sock"
        try:
            self._spawn(
                "rti",
                rti_command(self.dir, federates_arg, self.federation),
                env,
                parent_death=signal.SIGTERM,  # so it can remove the directory
            )
            self._wait_for_socket(f"{self.dir}/rti.sock")
            for name, args in commands.items():
                where = ["--rti", rti_address, "--federation", self.federation,
                         "--listen-dir", self.dir]  # fmt: skip
                end = args.index("--") if "--" in args else len(args)
                self._spawn(name, [*args[:end], *where, *args[end:]], env)
        except BaseException:
            self.terminate()
            raise

    def _spawn(
        self, name: str, args: list[str], env: dict[str, str], parent_death: int = signal.SIGKILL
    ) -> None:
        proc = subprocess.Popen(
            args,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent(parent_death),
        )
        self.procs[name] = proc
        assert proc.stdout is not None
        t = threading.Thread(target=self._pump, args=(name, proc.stdout), daemon=True)
        t.start()
        self._readers.append(t)

    def _pump(self, name: str, stream: IO[bytes]) -> None:
        for raw in stream:
            self.output(f"[{name}] {raw.decode(errors='replace').rstrip()}")
        stream.close()

    def _wait_for_socket(self, path: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            rti = self.procs["rti"]
            if rti.poll() is not None:
                raise RuntimeError(f"the RTI exited with code {rti.returncode} before listening")
            if time.monotonic() > deadline:
                raise RuntimeError("the RTI did not start listening in time")
            time.sleep(0.01)

    def wait(self, raise_interrupt: bool = False) -> int:
        """Wait for every process; the first non-zero exit code wins (0 if none).

        SIGTERM (e.g. from ``timeout`` or a process manager) is handled like
        Ctrl-C: the federation is torn down and the directory removed, and the
        status is :data:`INTERRUPTED`, or with ``raise_interrupt`` the
        KeyboardInterrupt goes on to the caller (a benchmark running federations
        as parts of a longer job, which must stop too, not report a failure)."""
        try:
            with sigterm_as_interrupt():
                self._watch()
        except KeyboardInterrupt:
            self.output("[launcher] interrupted: stopping the federation")
            self.terminate()
            if raise_interrupt:
                raise
            self.first_failure = self.first_failure or INTERRUPTED
        finally:
            self.cleanup()
        return self.first_failure

    def _watch(self) -> None:
        """Poll until every process ended, or the rest were stopped after one failed
        (its exit status: ``first_failure``)."""
        deadline = 0.0
        while True:
            running = False
            for name, proc in self.procs.items():
                code = proc.poll()
                if code is None:
                    running = True
                elif code != 0 and not self.first_failure:
                    self.first_failure = code if code > 0 else 128 - code
                    self.output(f"[launcher] {name} exited with code {code}; stopping the rest")
                    deadline = time.monotonic() + GRACE_S
            if not running:
                return
            if self.first_failure and time.monotonic() > deadline:
                self.terminate()
                return
            time.sleep(0.02)

    def terminate(self) -> None:
        """SIGTERM the federates (each then asks for a federation-wide stop, so
        shutdown reactions run), then the RTI once they are gone (it carries
        that stop); SIGKILL whatever is left after the grace period."""
        federates = [p for name, p in self.procs.items() if name != "rti"]
        rti = [p for name, p in self.procs.items() if name == "rti"]
        deadline = time.monotonic() + GRACE_S
        for group in (federates, rti):
            for proc in group:
                if proc.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGTERM)
            for proc in group:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(max(0.0, deadline - time.monotonic()))
        for proc in self.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.cleanup()

    def cleanup(self) -> None:
        for t in self._readers:
            t.join(timeout=2)
        shutil.rmtree(self.dir, ignore_errors=True)


def launch(program: str | Path, raise_interrupt: bool = False, **kwargs: Any) -> int:
    """Run a federated program to completion; returns the exit code
    (``raise_interrupt``: :meth:`Launch.wait`'s)."""
    return Launch(program, **kwargs).wait(raise_interrupt)


def rti_command(private_dir: str, federates_arg: list[str], federation: str) -> list[str]:
    """The RTI process of a federation whose sockets live in ``private_dir``
    (mode 0700, deleted by the RTI however it ends): ``federates_arg`` is
    ``[N]`` or ``["a,b,c", *options]``. The federates are then given
    ``--rti unix:DIR/rti.sock --federation ID --listen-dir DIR``; the secret
    travels in ``HPRM_SECRET``, never on a command line. Shared by ``hprm
    run``, ``hprm-ros run`` and the ``ros2 launch`` action."""
    return [sys.executable, "-m", "hprm_core.cli", "rti", "--address",
            f"unix:{private_dir}/rti.sock", "--federates", *federates_arg,
            "--federation", federation, "--remove-dir", private_dir]  # fmt: skip
