"""Where `iolens ior`'s output goes, as IOR sends it: IOR's layout (text, or `-O summaryFormat=JSON|CSV`) to
standard output or to `-O summaryFile=F`, its log lines beside it, or iolens's rich view for a person.

- `-O summaryFormat=JSON|CSV` without summaryFile: standard output holds that document and nothing else (the
  `-v` log lines IOR mixes in go to standard error), whatever the text format.
- `-O summaryFile=F`: F gets IOR's output in its format; standard output gets what IOR prints there (`Writing
  output to F` and the log lines) in the classic text format, or the rich view.
- Otherwise: the classic text or the rich view, as `--text-format` chose (auto: classic unless standard
  output is a terminal).

Whatever the layout, `-O saveRankPerformanceDetailsCSV=F` gets IOR's per-rank CSV (report/ior_rank_csv.py).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from iolens import atomic
from iolens.messages import error
from iolens.report import ior_test
from iolens.report.ior_classic import render_ior_classic
from iolens.report.ior_formats import render_ior_csv, render_ior_json
from iolens.report.ior_rank_csv import write_rank_csvs

TEXT_FORMATS = ("auto", "classic", "rich")

# -O summaryFormat → the writer of that layout: (tests' documents, verbosity, results stream, log stream).
RENDERERS: dict[str, Callable[[Sequence[dict[str, Any]], int, TextIO, TextIO | None], None]] = {
    "default": render_ior_classic,
    "json": render_ior_json,
    "csv": render_ior_csv,
}


def wants_classic(text_format: str) -> bool:
    """Whether the classic layout is shown: asked for, or `auto` and standard output is not a person's
    terminal. A rank of an MPI job (`mpirun iolens ior ...`) counts as not: Open MPI hands its ranks a
    pseudo-terminal even when the job's output goes to a file that scripts parse, as IOR's does."""
    if text_format != "auto":
        return text_format == "classic"
    from iolens import launch

    return not sys.stdout.isatty() or launch.mpi_job() is not None


def rich_view_shown(docs: Sequence[dict[str, Any]], classic: bool) -> bool:
    """Whether show() puts the rich view on standard output (not IOR's layout, and no JSON/CSV there)."""
    if not docs or classic:
        return False
    first = docs[0]
    return ior_test.summary_format(first) == "default" or bool(ior_test.summary_file_of(first))


def show(docs: Sequence[dict[str, Any]], classic: bool, rich_view: Callable[[], None]) -> bool:
    """Write the run's output (see the module's docstring); False when summaryFile or the per-rank CSV could
    not be written (said on standard error)."""
    if not docs:
        return True
    return _show_layout(docs, classic, rich_view) & write_rank_csvs(docs)


def _show_layout(docs: Sequence[dict[str, Any]], classic: bool, rich_view: Callable[[], None]) -> bool:
    first = docs[0]
    fmt = ior_test.summary_format(first)
    verbosity = ior_test.verbosity_of(first)
    render = RENDERERS[fmt]
    summary_file = ior_test.summary_file_of(first)
    if not summary_file:
        if fmt != "default":
            render(docs, verbosity, sys.stdout, sys.stderr)
        elif classic:
            render(docs, verbosity, sys.stdout, None)
        else:
            rich_view()
        return True
    buf = io.StringIO()
    if classic:
        sys.stdout.write(f"Writing output to {summary_file}\n")
        render(docs, verbosity, buf, sys.stdout)
    else:
        render(docs, verbosity, buf, io.StringIO())
        rich_view()
    sys.stdout.flush()
    try:
        atomic.write_text(Path(summary_file), buf.getvalue())
    except OSError as exc:
        error(f"-O summaryFile: cannot write {summary_file}: {exc.strerror}", 1)
        return False
    return True
