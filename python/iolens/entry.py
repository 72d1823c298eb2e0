"""The `iolens` command's entry point (console script and `python -m iolens`).

Importing the CLI takes a few hundred milliseconds (rich, the store, ...). A stop signal in that time would
otherwise end the process with Python's defaults (a traceback for SIGINT, a silent death for SIGTERM): from
the first moment it is recorded instead, and the command then ends as it ends for any stop signal
(docs/reliability.md). Only the interpreter's own start, before this module runs, is left uncovered.
"""

from __future__ import annotations

import signal

from iolens import interrupt


def main() -> int:
    interrupt.STOP.record_from_now()
    from iolens.cli import main as cli_main

    status = cli_main()
    # The command is over and has said so: a stop signal now changes nothing. Blocked, it is not delivered
    # while Python shuts down (which puts the default handlers back: the process would die of it).
    signal.pthread_sigmask(signal.SIG_BLOCK, interrupt.STOP_SIGNALS)
    return status
