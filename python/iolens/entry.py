"""The `iolens` command's entry point (console script and `python -m iolens`).

Importing the CLI takes a few hundred milliseconds (rich, the store, ...). A stop signal in that time would
otherwise end the process with Python's defaults (a traceback for SIGINT, a silent death for SIGTERM): from
the first moment it is recorded instead, and the command then ends as it ends for any stop signal
(docs/reliability.md). Only the interpreter's own start, before this module runs, is left uncovered.
"""

from __future__ import annotations

import io
import os
import signal
import sys
from typing import Any

from iolens import interrupt


class _ReaderGone(io.TextIOBase):
    """Standard output that outlives its reader (`iolens ior ... | head`): once a write finds the pipe
    closed, the rest goes to /dev/null instead of raising BrokenPipeError in the middle of the command, so a
    run still cleans up and stores its result, and help text piped into head ends quietly."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def _gone(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._inner.fileno())
        os.close(devnull)

    def write(self, s: str) -> int:
        try:
            return int(self._inner.write(s))
        except BrokenPipeError:
            self._gone()
            return len(s)

    def flush(self) -> None:
        try:
            self._inner.flush()
        except BrokenPipeError:
            self._gone()

    def fileno(self) -> int:
        return int(self._inner.fileno())

    def isatty(self) -> bool:
        return bool(self._inner.isatty())

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(self._inner.encoding)


def main() -> int:
    interrupt.STOP.record_from_now()
    sys.stdout = _ReaderGone(sys.stdout)
    from iolens.cli import main as cli_main

    status = cli_main()
    # The command is over and has said so: a stop signal now changes nothing. Blocked, it is not delivered
    # while Python shuts down (which puts the default handlers back: the process would die of it).
    signal.pthread_sigmask(signal.SIG_BLOCK, interrupt.STOP_SIGNALS)
    return status
