"""The per-rank CSV files the IO500 app leaves in its result directory, one per phase: PHASE.csv.

- ior phases: IOR's `-O saveRankPerformanceDetailsCSV` (the engine takes the option; the lines are written
  from its document by report/ior_rank_csv.py, as `iolens ior` does).
- mdtest phases: `--saveRankPerformanceDetails`, written by the engine itself.
- find, find-easy, find-hard: what the app's phase_find.c writes after pfind (io500 02091cf, pfind 2742734):
  a `runtime: … rate: …` line, pfind's header, and a line per rank. iolens's find has no figure for pfind's
  `unknown` (dirents without d_type: counted in stat_calls with the -newer/-size stats) nor for its job
  stealing (iolens shares work by levels, docs/find.md): those fields are left empty. `total` is the entries
  the rank scanned, directories included, as result.txt's total-files and the phase's score (pfind's counts
  non-directories only); `checked` the entries it read from directories (the starting point is scanned but
  not read from a directory, pfind's checked_dirents).
"""

from __future__ import annotations

from pathlib import Path

from iolens import atomic, results
from iolens.report.ior_rank_csv import HEADER as IOR_HEADER
from iolens.report.ior_rank_csv import rank_lines

FIND_HEADER = (
    "rank, errors, unknown, found, total, checked, job steal msgs received, work items send, job steal msgs "
    "send, work items stolen, time spend in job stealing in s, number of completion tokens send"
)
# pfind's job-stealing columns (6) and its unknown-dirents column: iolens has no such figures.
_NO_STEALING = ", , , , , , "


def find_csv_text(find: results.FindSection) -> str:
    """pfind's CSV for one find phase (the app writes it from rank 0 of the find's processes)."""
    lines = [f"runtime: {find.time_s:f} rate: {find.rate_per_s:f}", FIND_HEADER]
    for r in sorted(find.per_rank, key=lambda x: x.rank):
        # The starting point is rank 0's scanned entry that no directory listed: not a checked dirent.
        checked = max(r.scanned - 1, 0) if r.rank == 0 else r.scanned
        lines.append(f"{r.rank}, {r.errors}, , {r.matched}, {r.scanned}, {checked}{_NO_STEALING}".rstrip())
    return "\n".join(lines) + "\n"


def write_phase_csv(phase: str, doc: results.Document, resultdir: Path) -> str | None:
    """Write RESULTDIR/PHASE.csv for an ior or find phase from its engine document (mdtest's engine wrote its
    own); the error text when it cannot be written, else None."""
    path = resultdir / f"{phase}.csv"
    if isinstance(doc, results.IorDocument):
        text = "\n".join([IOR_HEADER, *rank_lines(doc.raw)]) + "\n"
    elif isinstance(doc, results.FindDocument) and doc.find is not None:
        text = find_csv_text(doc.find)
    else:
        return None
    try:
        atomic.write_text(path, text)
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror}"
    return None
