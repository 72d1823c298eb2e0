"""How every command speaks to a person: the one-line error, and the console for reports."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from iolens.report.printable import printable

PROG = "iolens"


def error(message: str, status: int = 2) -> int:
    """Say `iolens: error: MESSAGE` on standard error, one line (no markup; control characters from paths and
    names shown escaped, report/printable.py); return the status."""
    Console(stderr=True, highlight=False).print(Text(f"{PROG}: error: {printable(message)}"), soft_wrap=True)
    return status


def out_console() -> Console:
    console = Console(highlight=False)
    if not console.is_terminal:
        # Piped output goes to logs and files: keep the wide tables on one line each.
        console.width = 200
    return console
