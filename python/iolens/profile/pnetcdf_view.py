"""The text of the report's PnetCDF layer (`layers.pnetcdf`), above MPI-IO and POSIX: per variable its puts
and gets by how they were made (independent, collective, non-blocking), bytes and time; per file its opens,
define and data mode switches, waits, and what MPI-IO and POSIX did beneath. Reads only the report dict."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

MODES = ("independent", "collective", "non-blocking")


def _by_mode(counts: dict[str, int]) -> str:
    return "/".join(str(counts[m]) for m in MODES)


def _ranks(ranks: list[int]) -> str:
    """How many ranks; "all" for a Darshan log's shared record (rank -1, every rank's)."""
    return "all" if -1 in ranks else str(len(ranks))


def pnetcdf_view(
    files: list[dict[str, Any]],
    table: Callable[[str, Sequence[str], Sequence[Sequence[str | Text]]], Table],
    size: Callable[[float], str],
    secs: Callable[[float], str],
) -> list[RenderableType]:
    if not files:
        return []
    rows = [
        (Text(f"{f['path']}:{v['name']}"), _ranks(v["ranks"]), str(v["opens"]), _by_mode(v["reads"]),
         _by_mode(v["writes"]), size(v["bytes_read"]), size(v["bytes_written"]),
         secs(v["read_time_s"] + v["write_time_s"] + v["meta_time_s"]))
        for f in files
        for v in f["variables"]
    ]  # fmt: skip
    out: list[RenderableType] = []
    if rows:
        out.append(
            table(
                "PnetCDF variables (reads, writes: independent/collective/non-blocking)",
                ["variable", "ranks", "opens", "reads", "writes", "read", "written", "time"],
                rows,
            )
        )
    for f in files:
        w = f["waits"]
        line = (
            f"PnetCDF file {f['path']}: {f['creates']} creates, {f['opens']} opens, {f['closes']} closes, "
            f"{f['redefs']} redefs, {f['indep_data_begins']} independent data modes, "
            f"waits {w['independent']}/{w['collective']} (independent/collective), "
            f"written {size(f['bytes_written'])}, read {size(f['bytes_read'])}, ranks {_ranks(f['ranks'])}, "
            f"meta {secs(f['meta_time_s'])}, wait {secs(f['wait_time_s'])}"
        )
        below = []
        mpi, posix = f["beneath"].get("mpiio"), f["beneath"].get("posix")
        if mpi:
            below.append(
                f"MPI-IO {mpi['writes']} writes ({mpi['collective_writes']} collective), {mpi['reads']} reads"
            )
        if posix:
            below.append(f"POSIX {posix['writes']} writes, {posix['reads']} reads")
        if below:
            line += "; beneath: " + ", ".join(below)
        out.append(Text(line, style="dim", overflow="fold"))
    return out
