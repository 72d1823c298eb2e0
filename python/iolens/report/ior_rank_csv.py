"""IOR's `-O saveRankPerformanceDetailsCSV=F`: one line per rank per write or read phase with that rank's time
from open to close, its transfer time, and the bytes per second each gives for the rank's share of the phase
(the phase's bytes over the ranks taking part, as IOR divides its aggregate size). Header and number layout
are IOR 4.0.0's; the times are the engine's per-rank figures (`per_rank[].total_s`, `per_rank[].xfer_s`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from iolens import atomic
from iolens.messages import error
from iolens.report.ior_test import Doc, config_value

HEADER = "access,rank,runtime-with-openclose,runtime,throughput-withopenclose,throughput"


def rank_csv_of(doc: Doc) -> str:
    """The document's `-O saveRankPerformanceDetailsCSV` ("" when none)."""
    return str(config_value(doc, "save-rank-performance-details-csv", default="") or "")


def _rate(share: float, seconds: float) -> float:
    return share / seconds if seconds > 0 else float("inf")


def rank_lines(doc: Doc) -> list[str]:
    """The CSV lines of one test, in the order of its phases (write and read of each iteration)."""
    lines = []
    for p in doc.get("phases") or []:
        ranks = [r for r in p.get("per_rank") or [] if isinstance(r, dict)]
        if p.get("name") not in ("write", "read") or not ranks:
            continue
        share = float(p.get("bytes") or 0) / len(ranks)
        for r in ranks:
            total = float(r.get("total_s") or 0)
            xfer = float(r.get("xfer_s") or 0)
            lines.append(
                f"{p['name']},{int(r.get('rank') or 0)},{total:.10e},{xfer:.10e},"
                f"{_rate(share, total):.10e},{_rate(share, xfer):.10e}"
            )
    return lines


def write_rank_csvs(docs: Sequence[Doc]) -> bool:
    """Write each file the tests name: IOR's header, then the lines of every test that names it, in test
    order (IOR truncates the file when it reads the option and appends after each phase). False when one
    could not be written (said on standard error)."""
    files: dict[str, list[str]] = {}
    for doc in docs:
        name = rank_csv_of(doc)
        if name:
            files.setdefault(name, [HEADER]).extend(rank_lines(doc))
    ok = True
    for name, lines in files.items():
        try:
            atomic.write_text(Path(name), "\n".join(lines) + "\n")
        except OSError as exc:
            error(f"-O saveRankPerformanceDetailsCSV: cannot write {name}: {exc.strerror}", 1)
            ok = False
    return ok
