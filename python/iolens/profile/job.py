"""A job: the logs of every process of one run (one job id), read and put together: the process tree
(parent_log links, exec chains), one row of counters per path merged over every process (merge.py), and the
totals per mount (file system type) and per rank.

Which figures count what (docs/profile.md, "How the figures are computed"): data figures (bytes, reads,
writes, their times) come from the records of regular files; metadata time is the processes' META_TIME
(it includes namespace operations such as mkdir that belong to no file).

The runtime counts a program's calls in two layers with Darshan's counters and meanings: POSIX_* (calls on
descriptors) and STDIO_* (calls on streams). They are disjoint (a stream's data reaches the file through the
C library's internal calls, which the runtime does not see), so the program's I/O, counted once, is the sum
of the two: io_column() gives iolens's own figures that way, and every total here is made of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from iolens.profile.hdf5 import Hdf5File, hdf5_files
from iolens.profile.joblog import (
    FILE_REDUCED,
    FLAG_AFTER_JOBLOG,
    JOB_SUFFIX,
    ReducedFile,
    is_job_log,
    read_job_log,
    reduced_files,
)
from iolens.profile.layers import MpiioFile, mpiio_files
from iolens.profile.merge import Accumulator, MergePlan
from iolens.profile.places import code_mask
from iolens.profile.pnetcdf import PnetcdfFile, pnetcdf_files
from iolens.profile.reader import (
    EXEC_MESSAGE,
    FILE_EXCLUDED,
    FILE_NOT_REGULAR,
    LOG_SUFFIXES,
    FileTable,
    ProcessLog,
    ProfileLogError,
    log_stem,
    read_log,
)

# Ours, never in a log: a regular file of code or libraries (places.py), kept apart from the data unless the
# report is asked for all files (--all-files).
FILE_CODE = 1 << 17
# A FILES flag of any of these kinds takes a file out of the data figures.
NOT_DATA = FILE_EXCLUDED | FILE_NOT_REGULAR | FILE_CODE


@dataclass
class IoTotals:
    """What some processes did to regular files, plus their metadata time (ns)."""

    bytes_read: int = 0
    bytes_written: int = 0
    reads: int = 0
    writes: int = 0
    read_time_ns: int = 0
    write_time_ns: int = 0
    meta_time_ns: int = 0
    files: int = 0

    @property
    def io_time_ns(self) -> int:
        return self.read_time_ns + self.write_time_ns + self.meta_time_ns

    def add(self, other: IoTotals) -> None:
        self.bytes_read += other.bytes_read
        self.bytes_written += other.bytes_written
        self.reads += other.reads
        self.writes += other.writes
        self.read_time_ns += other.read_time_ns
        self.write_time_ns += other.write_time_ns
        self.meta_time_ns += other.meta_time_ns
        self.files += other.files


# iolens's own per-file figures: the same counter of the two layers added (names as in IoTotals).
LAYERED: dict[str, tuple[str, str]] = {
    "bytes_read": ("POSIX_BYTES_READ", "STDIO_BYTES_READ"),
    "bytes_written": ("POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN"),
    "reads": ("POSIX_READS", "STDIO_READS"),
    "writes": ("POSIX_WRITES", "STDIO_WRITES"),
    "read_time_ns": ("POSIX_F_READ_TIME", "STDIO_F_READ_TIME"),
    "write_time_ns": ("POSIX_F_WRITE_TIME", "STDIO_F_WRITE_TIME"),
    "meta_time_ns": ("POSIX_F_META_TIME", "STDIO_F_META_TIME"),
    "opens": ("POSIX_OPENS", "STDIO_OPENS"),
    "seeks": ("POSIX_SEEKS", "STDIO_SEEKS"),
}


def io_column(table: FileTable, what: str) -> np.ndarray:
    """One of iolens's own per-file figures (LAYERED) for every row: POSIX + STDIO, the program's I/O once."""
    posix, stdio = LAYERED[what]
    return table.column(posix) + table.column(stdio)


def extent(table: FileTable) -> np.ndarray:
    """Per row, the largest offset read or written + 1 in either layer (0 for a file never read or written):
    Darshan's MAX_BYTE counters hold the offset of the last byte, so a file of one byte has 0 there."""
    last = np.maximum.reduce(
        [
            table.column(f"{layer}_MAX_BYTE_{kind}")
            for layer in ("POSIX", "STDIO")
            for kind in ("READ", "WRITTEN")
        ]
    )
    accessed = (io_column(table, "reads") + io_column(table, "writes")) > 0
    return np.where(accessed, last + np.uint64(1), np.uint64(0))


def io_sum(table: FileTable, what: str, mask: np.ndarray) -> int:
    """The total of one of iolens's own per-file figures (LAYERED) over the rows of mask."""
    return int(io_column(table, what)[mask].sum(dtype=np.uint64)) if mask.any() else 0


def data_rows(table: FileTable) -> np.ndarray:
    """Rows of regular files of data (neither excluded, nor a pipe, socket, tty or device, nor code)."""
    return (table.flags & NOT_DATA) == 0


def code_rows(table: FileTable) -> np.ndarray:
    """Rows of the regular files of code and libraries kept apart from the data."""
    return (table.flags & FILE_CODE) != 0


def mark_code(table: FileTable, all_files: bool) -> None:
    """Flag the table's regular files of code and libraries FILE_CODE (none when all_files)."""
    flags = table.flags & np.uint32(~FILE_CODE & 0xFFFFFFFF)
    if not all_files:
        regular = (flags & (FILE_EXCLUDED | FILE_NOT_REGULAR)) == 0
        flags = np.where(regular & code_mask(table.paths), flags | np.uint32(FILE_CODE), flags)
    table.flags = flags.astype(np.uint32, copy=False)


def opened_rows(table: FileTable) -> np.ndarray:
    """Rows of files that were opened, read or written (not only stat'ed or renamed), in either layer."""
    return (
        (io_column(table, "opens") > 0) | (io_column(table, "reads") > 0) | (io_column(table, "writes") > 0)
    )


def table_totals(table: FileTable, mask: np.ndarray, meta_time_ns: int = 0) -> IoTotals:
    touched = mask & opened_rows(table)
    return IoTotals(
        bytes_read=io_sum(table, "bytes_read", mask),
        bytes_written=io_sum(table, "bytes_written", mask),
        reads=io_sum(table, "reads", mask),
        writes=io_sum(table, "writes", mask),
        read_time_ns=io_sum(table, "read_time_ns", mask),
        write_time_ns=io_sum(table, "write_time_ns", mask),
        meta_time_ns=meta_time_ns,
        files=int(np.count_nonzero(touched)),
    )


def log_totals(log: ProcessLog) -> IoTotals:
    return table_totals(log.table, data_rows(log.table), log.proc.get("META_TIME", 0))


@dataclass
class ProcessNode:
    """A log in the job's process tree. relation: "root", "child" (fork, spawn) or "exec" (the same
    process after exec: the parent's log ended with flag 4)."""

    index: int
    log: ProcessLog
    totals: IoTotals
    parent: int | None = None
    relation: str = "root"
    children: list[int] = field(default_factory=list)


@dataclass
class MountTotals:
    dir: str
    fs_type: str
    totals: IoTotals
    meta_time_ns: int = 0  # the files' own POSIX_F_META_TIME + STDIO_F_META_TIME (opens, stats ... on them)


@dataclass
class RankTotals:
    rank: int
    logs: int
    totals: IoTotals


@dataclass
class Job:
    job_id: str
    logs: list[ProcessLog]
    nodes: list[ProcessNode]
    roots: list[int]
    # One row per path over every process; `mount` indexes files.mount_list.
    files: FileTable
    # Per path: processes (a log and the logs that continue it after exec) that have it, that read it, wrote
    # it, did both; and whether some process first read it after another one first wrote it.
    procs: np.ndarray
    readers: np.ndarray
    writers: np.ndarray
    both: np.ndarray
    read_after_write: np.ndarray
    file_merges: list[str]
    proc: dict[str, int]
    mounts: list[MountTotals]
    ranks: list[RankTotals]
    messages: list[str]
    # Code and libraries counted as data (--all-files) rather than kept apart.
    all_files: bool = False

    @cached_property
    def files_plan(self) -> MergePlan:
        return MergePlan.build(self.files.names, self.file_merges)[0]

    @property
    def start_wall_ns(self) -> int:
        return min(log.header.start_wall_ns for log in self.logs)

    @property
    def end_wall_ns(self) -> int:
        return max(log.end_wall_ns for log in self.logs)

    @property
    def run_time_s(self) -> float:
        return max(self.end_wall_ns - self.start_wall_ns, 0) / 1e9

    @property
    def processes(self) -> int:
        """Processes, not logs: an exec continues the same process in a new log."""
        return sum(1 for n in self.nodes if n.relation != "exec")

    @property
    def rank_count(self) -> int:
        return len(self.ranks)

    def file(self, path: str) -> dict[str, int]:
        """The counters of one path, merged over every process."""
        return self.files.counters(self.files.row_of[path])

    @cached_property
    def mpiio(self) -> list[MpiioFile]:
        """The MPI-IO layer: one entry per file the job opened with MPI_File_open (layers.py)."""
        return mpiio_files(self)

    @cached_property
    def reduced(self) -> list[ReducedFile]:
        """The files of a job log reduced over all ranks, with their per-rank spread (joblog.py)."""
        return reduced_files(self.logs)

    @cached_property
    def reduced_ranks(self) -> dict[str, int]:
        """Path (or object name) -> the number of ranks its one reduced record stands for."""
        return {f.path: f.ranks for f in self.reduced}

    def record_ranks(self, log: ProcessLog, path: str) -> Sequence[int]:
        """The ranks a log's record of path stands for. A record reduced over all ranks (rank 0's member of a
        job log holds it, the others hold none) is every rank's, and its ranks made the same kinds of calls
        on it (the runtime reduces no other file): a kind of call it counts, every rank made. Any other record
        is its log's own rank's."""
        n = self.reduced_ranks.get(path)
        return range(n) if n else (log.header.rank,)

    @cached_property
    def hdf5(self) -> list[Hdf5File]:
        """The HDF5 layer: one entry per HDF5 file, with its datasets (hdf5.py)."""
        return hdf5_files(self)

    @cached_property
    def pnetcdf(self) -> list[PnetcdfFile]:
        """The PnetCDF layer: one entry per PnetCDF file, with its variables (pnetcdf.py)."""
        return pnetcdf_files(self)


# --- finding and reading the logs ------------------------------------------------------------------------


def log_paths(path: str | Path) -> list[Path]:
    """The logs of a directory (not its subdirectories), or the one file given. When both the live `.iolp`
    and the compressed `.iolpz` of one process are there, both are returned (load_jobs picks one)."""
    p = Path(path)
    if p.is_dir():
        return sorted(q for q in p.iterdir() if q.suffix in (*LOG_SUFFIXES, JOB_SUFFIX) and q.is_file())
    if p.exists():
        return [p]
    raise ProfileLogError(f"{p}: no such file or directory")


def _read_all(paths: Sequence[Path], single: bool) -> tuple[list[ProcessLog], list[str]]:
    """Read the logs; with several, a broken one is skipped (and said), a single one is an error."""
    by_stem: dict[str, list[Path]] = {}
    logs: list[ProcessLog] = []
    messages: list[str] = []
    for p in paths:
        if not is_job_log(p):
            by_stem.setdefault(log_stem(p.name), []).append(p)
            continue
        # A job log's members are the ranks' logs: never a choice between them and a per-process log of the
        # same name (which, beside a job log, holds what its rank counted after MPI_Finalize).
        try:
            job_log = read_job_log(p)
        except ProfileLogError as exc:
            if single:
                raise
            messages.append(f"skipped: {exc}")
            continue
        logs.extend(job_log.logs)
        messages.append(
            f"{p.name}: one log of {job_log.header.nranks} rank(s), {job_log.header.reduced_files} file(s) "
            "reduced over all ranks"
        )
    for stem, group in by_stem.items():
        # The compressed log is the finished one; the live one is the fallback if it is damaged.
        group.sort(key=lambda q: q.suffix != ".iolpz")
        chosen: ProcessLog | None = None
        errors: list[str] = []
        for q in group:
            try:
                log = read_log(q)
            except ProfileLogError as exc:
                if single:
                    raise
                errors.append(str(exc))
                continue
            if chosen is None or (chosen.truncated and not log.truncated):
                chosen = log
            if not chosen.truncated:
                break
        if chosen is None:
            messages.extend(f"skipped: {e}" for e in errors)
        else:
            if errors:
                messages.append(f"{stem}: used {chosen.name}; " + "; ".join(errors))
            logs.append(chosen)
    return logs, messages


def load_jobs(source: str | Path | Iterable[Path], all_files: bool = False) -> list[Job]:
    """The jobs of a directory, a log file, or a list of log files, grouped by job id; all_files: code and
    libraries count as data (by default they are kept apart)."""
    if isinstance(source, str | Path):
        paths = log_paths(source)
        where = str(source)
    else:
        paths = list(source)
        where = ", ".join(str(p) for p in paths[:3]) + (" ..." if len(paths) > 3 else "")
    if not paths:
        raise ProfileLogError(f"{where}: no profile logs (*.iolp, *.iolpz)")
    single = len(paths) == 1 and not Path(paths[0]).is_dir()
    logs, messages = _read_all(paths, single)
    if not logs:
        raise ProfileLogError(f"{where}: no readable profile log; " + "; ".join(messages))
    groups: dict[str, list[ProcessLog]] = {}
    for log in logs:
        groups.setdefault(log.header.job_id, []).append(log)
    jobs = [build_job(job_id, group, list(messages), all_files) for job_id, group in groups.items()]
    jobs.sort(key=lambda j: j.start_wall_ns)
    return jobs


def load_job(path: str | Path) -> Job:
    """The one job of a directory or log file; ProfileLogError if the logs belong to several jobs."""
    jobs = load_jobs(path)
    if len(jobs) > 1:
        ids = ", ".join(repr(j.job_id) for j in jobs)
        raise ProfileLogError(f"{path}: logs of {len(jobs)} jobs ({ids}); use load_jobs() to read them all")
    return jobs[0]


# --- putting the logs together ---------------------------------------------------------------------------


def _tree(logs: list[ProcessLog], messages: list[str]) -> tuple[list[ProcessNode], list[int]]:
    nodes = [ProcessNode(i, log, log_totals(log)) for i, log in enumerate(logs)]
    by_stem = {log.stem: i for i, log in enumerate(logs)}
    for node in nodes:
        parent_log = node.log.header.parent_log
        if not parent_log:
            continue
        j = by_stem.get(log_stem(parent_log))
        if j is None or j == node.index:
            messages.append(f"{node.log.name}: its parent's log {parent_log} is not among the logs")
            continue
        parent = logs[j]
        node.parent = j
        same_pid = parent.header.pid == node.log.header.pid
        node.relation = "exec" if parent.exec_replaced and same_pid else "child"
    # Children of a parent in start order; a cycle (a damaged link) is broken where it closes.
    reached: set[int] = set()
    roots = [n.index for n in nodes if n.parent is None]
    for n in nodes:
        if n.parent is not None:
            nodes[n.parent].children.append(n.index)
    stack = list(roots)
    while stack:
        i = stack.pop()
        reached.add(i)
        stack.extend(c for c in nodes[i].children if c not in reached)
    for n in nodes:
        if n.index not in reached:
            if n.parent is not None:
                nodes[n.parent].children.remove(n.index)
            n.parent, n.relation = None, "root"
            roots.append(n.index)
            reached.add(n.index)
    return nodes, roots


def _job_schema(logs: list[ProcessLog], messages: list[str]) -> tuple[list[str], list[str]]:
    names: list[str] = []
    merges: dict[str, str] = {}
    for log in logs:
        for name, merge in zip(log.schema.file.names, log.schema.file.merges, strict=True):
            if name not in merges:
                merges[name] = merge
                names.append(name)
            elif merges[name] != merge:
                messages.append(
                    f"{log.name}: counter {name} merges by {merge}, another log says {merges[name]}; "
                    f"{merges[name]} is used"
                )
    return names, [merges[n] for n in names]


def _aligned(log: ProcessLog, names: list[str]) -> np.ndarray:
    """The log's file values in the job's column order (zeros for counters its runtime did not have)."""
    if log.table.names == names:
        return log.table.values
    out = np.zeros((len(log.table), len(names)), dtype=np.uint64)
    index = {n: i for i, n in enumerate(names)}
    for n in log.table.names:
        out[:, index[n]] = log.table.column(n)
    return out


def process_of(nodes: list[ProcessNode]) -> list[int]:
    """Each log's process: the index of the first log of its exec chain (an exec goes on in a new log)."""
    out = []
    for n in nodes:
        i = n.index
        while nodes[i].relation == "exec" and nodes[i].parent is not None:
            i = nodes[i].parent
        out.append(i)
    return out


NEVER = np.iinfo(np.int64).max


def first_stamp(table: FileTable, what: str) -> np.ndarray:
    """Per row, the first read or write (what: "READ" or "WRITE") in either layer: the smaller non-zero of the
    two layers' start timestamps (ns since the process start + 1; 0: never)."""
    a = table.column(f"POSIX_F_{what}_START_TIMESTAMP")
    b = table.column(f"STDIO_F_{what}_START_TIMESTAMP")
    return np.where((a == 0) | ((b != 0) & (b < a)), b, a)


def _first_times(log: ProcessLog, rows: np.ndarray, what: str, late: bool) -> np.ndarray:
    """Wall-clock ns of the first read or write (what) of the log's rows. A row that has the access but no
    timestamp (a log without the counter) gets the log's end when late, else its start: the rule that asks
    about the order then stays quiet rather than guess."""
    stamp = first_stamp(log.table, what)[rows].astype(np.int64)
    unknown = log.end_wall_ns if late else log.header.start_wall_ns
    return np.where(stamp > 0, log.header.start_wall_ns + stamp - 1, unknown)


def _per_process(entries: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """(path row, process, time) entries, one per (process, path) with the earliest time of each."""
    if not entries:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    g = np.concatenate([e[0] for e in entries]).astype(np.int64)
    p = np.concatenate([e[1] for e in entries]).astype(np.int64)
    t = np.concatenate([e[2] for e in entries]).astype(np.int64)
    order = np.lexsort((t, p, g))
    g, p, t = g[order], p[order], t[order]
    first = np.ones(g.size, dtype=bool)
    first[1:] = (g[1:] != g[:-1]) | (p[1:] != p[:-1])
    return g[first], p[first], t[first]


def _read_after_write(n: int, writes: tuple[np.ndarray, ...], reads: tuple[np.ndarray, ...]) -> np.ndarray:
    """Per path: some process's first read came after another process's first write."""
    wg, wp, wt = writes
    tw1 = np.full(n, NEVER, dtype=np.int64)  # the earliest write, by process p1
    p1 = np.full(n, -1, dtype=np.int64)
    tw2 = np.full(n, NEVER, dtype=np.int64)  # the earliest write by another process
    order = np.lexsort((wt, wg))
    wg, wp, wt = wg[order], wp[order], wt[order]
    lead = np.ones(wg.size, dtype=bool)
    lead[1:] = wg[1:] != wg[:-1]
    tw1[wg[lead]], p1[wg[lead]] = wt[lead], wp[lead]
    second = np.zeros(wg.size, dtype=bool)
    second[1:] = lead[:-1] & ~lead[1:]
    tw2[wg[second]] = wt[second]
    rg, rp, rt = reads
    after = np.where(rp != p1[rg], rt > tw1[rg], rt > tw2[rg])
    out = np.zeros(n, dtype=bool)
    out[rg[after]] = True
    return out


def _merge_files(
    logs: list[ProcessLog], processes: list[int], messages: list[str]
) -> tuple[FileTable, list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    names, merges = _job_schema(logs, messages)
    plan, _ = MergePlan.build(names, merges)
    gids_of: list[np.ndarray] = []
    if len(logs) == 1:
        # One process: its table has one row per path already.
        paths = logs[0].table.paths
        gids_of.append(np.arange(len(paths), dtype=np.intp))
    else:
        index: dict[str, int] = {}
        for log in logs:
            gids_of.append(
                np.fromiter(
                    (index.setdefault(p, len(index)) for p in log.table.paths), np.intp, len(log.table)
                )
            )
        paths = list(index)
    n = len(paths)
    flags = np.zeros(n, dtype=np.uint32)
    mount = np.full(n, -1, dtype=np.intp)
    mount_index: dict[tuple[str, str], int] = {}
    first_reads = np.zeros(n, dtype=np.uint32)
    first_writes = np.zeros(n, dtype=np.uint32)
    have: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    read: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    wrote: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    if len(logs) == 1 and names == logs[0].table.names:
        # One process: its table is already one row per path.
        blocks = logs[0].table.blocks
    else:
        acc = Accumulator(plan, n)
        for log, gids in zip(logs, gids_of, strict=True):
            acc.add(gids, _aligned(log, names))
        blocks = [acc.finish()]
    for k, (log, gids) in enumerate(zip(logs, gids_of, strict=True)):
        t = log.table
        flags[gids] |= t.flags
        # Mount indexes of this log's table, in the job's mount list.
        local = np.array([mount_index.setdefault(m, len(mount_index)) for m in t.mount_list], dtype=np.intp)
        if local.size:
            has = t.mount >= 0
            unset = has & (mount[gids] < 0)
            mount[gids[unset]] = local[t.mount[unset]]
        first_reads[gids] += t.first_reads
        first_writes[gids] += t.first_writes
        proc = np.full(gids.size, processes[k], dtype=np.int64)
        have.append((gids, proc, np.zeros(gids.size, dtype=np.int64)))
        r = np.flatnonzero(io_column(t, "reads") > 0)
        w = np.flatnonzero(io_column(t, "writes") > 0)
        read.append((gids[r], proc[r], _first_times(log, r, "READ", late=False)))
        wrote.append((gids[w], proc[w], _first_times(log, w, "WRITE", late=True)))
    # Processes, not logs: the logs of an exec chain are one process.
    procs = np.bincount(_per_process(have)[0], minlength=n)
    reads, writes = _per_process(read), _per_process(wrote)
    readers, writers = np.bincount(reads[0], minlength=n), np.bincount(writes[0], minlength=n)
    either = _per_process([reads, writes])[0]  # the (path, process) pairs that read or wrote
    both = readers + writers - np.bincount(either, minlength=n)
    raw = _read_after_write(n, writes, reads)
    mount_list = [m for m, _ in sorted(mount_index.items(), key=lambda kv: kv[1])]
    table = FileTable(
        names=names,
        paths=paths,
        flags=flags,
        mount=mount,
        mount_list=mount_list,
        blocks=blocks,
        contributions=procs.astype(np.uint32),
        first_reads=first_reads,
        first_writes=first_writes,
    )
    return table, merges, procs, readers, writers, both, raw


def _mount_totals(table: FileTable) -> list[MountTotals]:
    data = data_rows(table)
    out: list[MountTotals] = []
    for m in sorted(set(table.mount[data].tolist())):
        mask = data & (table.mount == m)
        where = table.mount_list[m] if m >= 0 else ("(unknown)", "?")
        totals = table_totals(table, mask)
        out.append(MountTotals(where[0], where[1], totals, io_sum(table, "meta_time_ns", mask)))
    out.sort(key=lambda mt: -(mt.totals.bytes_read + mt.totals.bytes_written))
    return out


def _rank_totals(nodes: list[ProcessNode]) -> list[RankTotals]:
    ranks: dict[int, RankTotals] = {}
    paths: dict[int, set[str]] = {}
    for n in nodes:
        rank = n.log.header.rank
        if rank < 0:
            continue
        rt = ranks.setdefault(rank, RankTotals(rank, 0, IoTotals()))
        rt.logs += 1
        files = rt.totals.files
        t = n.log.table
        # A file reduced over all ranks is every rank's: its spread says who did what (reduced_files).
        own = (t.flags & FILE_REDUCED) == 0
        rt.totals.add(n.totals if own.all() else table_totals(t, data_rows(t) & own, n.totals.meta_time_ns))
        rt.totals.files = files
        mask = data_rows(t) & opened_rows(t) & own
        paths.setdefault(rank, set()).update(t.paths[i] for i in np.flatnonzero(mask).tolist())
    for rank, rt in ranks.items():
        rt.totals.files = len(paths[rank])
    return [ranks[r] for r in sorted(ranks)]


def _merge_procs(logs: list[ProcessLog]) -> dict[str, int]:
    """The processes' counters combined by their merges (sums, for version 1)."""
    names: list[str] = []
    merges: dict[str, str] = {}
    for log in logs:
        for name, merge in zip(log.schema.proc.names, log.schema.proc.merges, strict=True):
            if name not in merges:
                merges[name] = merge
                names.append(name)
    acc = Accumulator(MergePlan.build(names, [merges[n] for n in names])[0], 1)
    for log in logs:
        row = np.zeros((1, len(names)), dtype=np.uint64)
        for name, v in log.proc.items():
            row[0, names.index(name)] = v
        acc.add(np.zeros(1, dtype=np.intp), row)
    return dict(zip(names, acc.finish()[0].tolist(), strict=True))


def build_job(
    job_id: str, logs: list[ProcessLog], messages: list[str] | None = None, all_files: bool = False
) -> Job:
    messages = list(messages or [])
    logs = sorted(logs, key=lambda log: (log.header.start_wall_ns, log.header.pid, log.name))
    for log in logs:
        mark_code(log.table, all_files)
    nodes, roots = _tree(logs, messages)
    files, merges, procs, readers, writers, both, raw = _merge_files(logs, process_of(nodes), messages)
    for f in reduced_files(logs):
        # One record (rank 0's) stands for every rank: it counted as one process, one reader, one writer.
        row = files.row_of.get(f.path)
        if row is None:
            continue
        procs[row] = max(int(procs[row]), f.ranks)
        readers[row] += f.reader_ranks - (f.reader_ranks > 0)
        writers[row] += f.writer_ranks - (f.writer_ranks > 0)
        both[row] += f.read_write_ranks - (f.reader_ranks > 0 and f.writer_ranks > 0)
        raw[row] |= f.read_after_other_write
    proc_acc = _merge_procs(logs)
    execs = 0
    for log in logs:
        execs += EXEC_MESSAGE in log.messages
        messages.extend(f"{log.name}: {m}" for m in log.messages if m != EXEC_MESSAGE)
    if execs:
        what = "1 log ends" if execs == 1 else f"{execs} logs end"
        messages.append(f"{what} where the process called exec: it goes on in its successor's log")
    after = sum(1 for log in logs if log.header.flags & FLAG_AFTER_JOBLOG and not log.member)
    if after:
        messages.append(
            f"{after} per-process log(s) hold only what their rank did after MPI_Finalize (the rest is in "
            "the job log)"
        )
    return Job(
        job_id=job_id,
        logs=logs,
        nodes=nodes,
        roots=roots,
        files=files,
        procs=procs,
        readers=readers,
        writers=writers,
        both=both,
        read_after_write=raw,
        file_merges=merges,
        proc=proc_acc,
        mounts=_mount_totals(files),
        ranks=_rank_totals(nodes),
        messages=messages,
        all_files=all_files,
    )
