"""What a kernel is made from: each rank's use of each data file (its counters), and each rank's namespace
operations, read from an iolens log directory, a Darshan log, or a profile stored in the database
(`profile:ID`).

A "rank" here is a stream of calls the replay runs as one process: an MPI rank, or, for a program that is
not MPI, each process that did data I/O (in start order). A file a job log reduced over all ranks (or a
Darshan shared record) is split evenly over the ranks it stands for: the reduction kept the sums only.
Only data files count (regular files, not excluded, not code or libraries: the report's data figures).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The process counters a kernel replays (namespace calls that belong to no file's record).
NAMESPACE_OPS = ("MKDIRS", "UNLINKS", "OPENDIRS", "READDIRS")


class SourceError(Exception):
    """The profile cannot be read: the message says which and why."""


@dataclass
class FileUse:
    """One rank's calls on one file: the file's counters (Darshan's names, iolens's units: times and
    timestamps in ns, timestamps + 1 since the process started, 0 for never)."""

    path: str
    rank: int
    counters: dict[str, int]
    # Ranks that use the same path (more than one: a file common to ranks).
    start_ns: int = 0  # the process's start, ns since the epoch: puts the ranks' timestamps on one clock


@dataclass
class Source:
    name: str
    ranks: int
    uses: list[FileUse]
    namespace: dict[int, dict[str, int]] = field(default_factory=dict)
    layers_above: dict[str, int] = field(default_factory=dict)  # "MPIIO"/"H5F": files of that layer
    # MPI ranks (they ran at once) or processes of a program that is not MPI (replayed one after another, in
    # the order they started: a parent and the children it waited for).
    mpi: bool = True
    approximations: list[str] = field(default_factory=list)


def load(text: str) -> Source:
    """A source named on the command line: `profile:ID` (the configured database, or $IOLENS_DB), a Darshan
    log, or an iolens log or directory of logs."""
    if text.startswith("profile:"):
        return _from_database(text, None)
    path = Path(text)
    if not path.exists():
        raise SourceError(f"{text}: no such file or directory")
    from iolens.profile import darshan_log
    from iolens.profile.job import load_job
    from iolens.profile.reader import ProfileLogError

    try:
        if path.is_file() and darshan_log.is_darshan_log(path):
            job = darshan_log.load_darshan_job(path)
        else:
            job = load_job(path)
    except (ProfileLogError, ValueError, OSError) as exc:
        raise SourceError(str(exc)) from None
    return from_job(job, text)


def from_job(job: Any, name: str) -> Source:
    from iolens.profile.job import data_rows

    t = job.files
    data_paths = {t.paths[i] for i in data_rows(t).nonzero()[0].tolist()}
    rank_of: dict[int, int] = {}
    logs = sorted(job.logs, key=lambda lg: lg.header.start_wall_ns)
    mpi_ranks = sorted({lg.header.rank for lg in logs if lg.header.rank >= 0})
    uses: list[FileUse] = []
    namespace: dict[int, dict[str, int]] = {}
    next_rank = 0
    per_log: list[tuple[Any, list[tuple[str, dict[str, int]]]]] = []
    for lg in logs:
        rows = [
            (p, lg.table.counters(i))
            for i, p in enumerate(lg.table.paths)
            if p in data_paths and _did_something(lg.table.counters(i))
        ]
        ns = {k: int(lg.proc.get(k, 0)) for k in NAMESPACE_OPS}
        if not rows and not any(ns.values()):
            continue
        per_log.append((lg, rows))
    if mpi_ranks:
        rank_of = {r: i for i, r in enumerate(mpi_ranks)}
        nranks = len(mpi_ranks)
    else:
        nranks = max(len(per_log), 1)
    for lg, rows in per_log:
        r = lg.header.rank
        if mpi_ranks:
            if r < 0:
                # A Darshan job's shared records, or a process that is no rank: rank 0 stands in for it.
                own = 0
            else:
                own = rank_of[r]
        else:
            own = next_rank
            next_rank += 1
        ns = namespace.setdefault(own, dict.fromkeys(NAMESPACE_OPS, 0))
        for k in NAMESPACE_OPS:
            ns[k] += int(lg.proc.get(k, 0))
        for path, c in rows:
            over = job.reduced_ranks.get(path) or (nranks if (mpi_ranks and r < 0) else 0)
            if over and over > 1:
                for k in range(over):
                    uses.append(FileUse(path, k, _share(c, k, over), lg.header.start_wall_ns))
            else:
                uses.append(FileUse(path, own, c, lg.header.start_wall_ns))
    above = {"MPIIO": len(job.mpiio), "H5F": len(job.hdf5)}
    notes = []
    if above["MPIIO"]:
        notes.append(
            f"{above['MPIIO']} MPI-IO file(s): replayed as the POSIX calls that reached the file (collective "
            "aggregation is baked into which rank made which call)"
        )
    if above["H5F"]:
        notes.append(f"{above['H5F']} HDF5 file(s): replayed as the POSIX calls the HDF5 library made")
    if not mpi_ranks and nranks > 1:
        notes.append(f"{nranks} processes (not MPI ranks): replayed one after another, in start order")
    return Source(
        name, nranks, uses, namespace, layers_above=above, approximations=notes, mpi=bool(mpi_ranks)
    )


def _did_something(c: dict[str, int]) -> bool:
    keys = ("POSIX_OPENS", "STDIO_OPENS", "POSIX_READS", "POSIX_WRITES", "STDIO_READS", "STDIO_WRITES")
    return any(c.get(k, 0) for k in keys) or bool(c.get("POSIX_STATS", 0))


# Counters that are not counts or sums: kept as they are when a reduced record is split over ranks.
_NOT_SUMS = ("TIMESTAMP", "MAX_BYTE", "ACCESS", "STRIDE", "_RANK", "VARIANCE", "MODE", "ALIGNMENT")


def _share(c: dict[str, int], k: int, n: int) -> dict[str, int]:
    """Rank k's part of a record summed over n ranks: each count split evenly, the remainder to the first
    ranks, so that the parts add up to the whole."""
    out = {}
    for name, v in c.items():
        if any(s in name for s in _NOT_SUMS):
            out[name] = v
        else:
            out[name] = v // n + (1 if k < v % n else 0)
    return out


def _from_database(text: str, url: str | None) -> Source:
    num = text.partition(":")[2]
    if not num.isdigit():
        raise SourceError(f"{text!r}: expected profile:ID with a number")
    from iolens.store import queries
    from iolens.store.api import open_store
    from iolens.store.db import StoreError

    try:
        store = open_store(url)
    except StoreError as exc:
        raise SourceError(str(exc)) from None
    try:
        prof = queries.get_profile(store.db, int(num))
        rows = queries.profile_file_counters(store.db, int(num))
    except (StoreError, queries.NotFound) as exc:
        raise SourceError(str(exc)) from None
    finally:
        store.close()
    doc = prof.get("document") or {}
    summary = doc.get("summary") or {}
    nranks = max(int(summary.get("ranks") or 0), 1)
    start_ns = int(summary.get("start_wall_ns") or 0)
    ops = doc.get("operations") or {}
    from iolens.profile.places import is_code

    uses: list[FileUse] = []
    for row in rows:
        # Data files only, as the report's figures: not code or libraries, not pipes, sockets or ttys (whose
        # names are not paths, or are devices).
        path = str(row["path"])
        if is_code(path) or not path.startswith("/") or (path.startswith("/dev/") and "/shm/" not in path):
            continue
        c = {k: int(v) for k, v in (row["counters"] or {}).items() if isinstance(v, int | float)}
        procs = max(int(row.get("processes") or 1), 1)
        over = min(procs, nranks)
        for k in range(over):
            uses.append(FileUse(row["path"], k, _share(c, k, over) if over > 1 else c, start_ns))
    namespace = {
        k: {
            n: int(ops.get(n, 0)) // nranks + (1 if k < int(ops.get(n, 0)) % nranks else 0)
            for n in NAMESPACE_OPS
        }
        for k in range(nranks)
    }
    notes = [
        "from the database: a file's counters are merged over the processes that had it; they are split "
        "evenly over min(processes, ranks) ranks"
    ]
    return Source(text, nranks, uses, namespace, approximations=notes, mpi=nranks > 1)
