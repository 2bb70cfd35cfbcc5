"""How an HPRM process writes its output: whole lines, log lines in one format.

A federate's stdout and stderr usually share one pipe to whoever started it
(``hprm run``'s launcher, ``ros2 launch``), and launchers set
``PYTHONUNBUFFERED`` so output shows at once. Unbuffered, ``print("PUB",
"sent")`` is four writes, and a log line from another thread (a stop on
SIGTERM, say) can land between them: ``PUB[hprm.federation] INFO: ...``. A
line-buffered stream writes each finished line in one call, so lines from the
two streams never cut each other; the output still shows line by line.
(Two threads printing to the same stream at once can still mix their pieces:
Python's ``print`` is not atomic.)
"""

from __future__ import annotations

import io
import logging
import sys

LOG_FORMAT = "[%(name)s] %(levelname)s: %(message)s"


def setup_process_output() -> None:
    """Line-buffer stdout and stderr and log INFO and up as ``[logger] LEVEL: text``.

    Call once at the start of a process's ``main``; a stream that is not a
    standard text stream (a test's capture, say) is left as it is.
    """
    for stream in (sys.stdout, sys.stderr):
        if type(stream) is io.TextIOWrapper:
            stream.reconfigure(line_buffering=True, write_through=False)
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
