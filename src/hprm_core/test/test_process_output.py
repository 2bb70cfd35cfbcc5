"""A process's printed lines and log lines reach a shared pipe whole."""

import os
import re
import subprocess
import sys
import textwrap

# One thread prints lines in many pieces while the main thread logs; both
# streams go to one pipe, as a launcher reads a federate's output.
_RACE = textwrap.dedent(
    """
    import logging, sys, threading
    from hprm_core.process_output import setup_process_output
    if sys.argv[1] == "setup":
        setup_process_output()
    else:
        logging.basicConfig(level=logging.INFO, format="[%(name)s] %(levelname)s: %(message)s")
    def printer():
        for i in range(3000):
            print("PUB", "sent", i, "of", "many", "pieces")
    t = threading.Thread(target=printer)
    t.start()
    for i in range(3000):
        logging.getLogger("hprm.test").info("stop %d", i)
    t.join()
    """
)
_WHOLE = re.compile(r"PUB sent \d+ of many pieces|\[hprm\.test\] INFO: stop \d+")


def _race(mode):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    out = subprocess.run(
        [sys.executable, "-c", _RACE, mode],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return out.splitlines()


def test_print_and_log_lines_from_two_threads_never_cut_each_other():
    lines = _race("setup")
    assert len(lines) == 6000
    cut = [x for x in lines if not _WHOLE.fullmatch(x)]
    assert cut == []


def test_unbuffered_without_the_setup_the_same_race_cuts_lines():
    """The race above is real: without the setup the same program cuts lines
    (a print is several writes, each one releasing the GIL to the logger)."""
    lines = _race("plain")
    assert any(not _WHOLE.fullmatch(x) for x in lines), "no line was cut: the race did not happen"
