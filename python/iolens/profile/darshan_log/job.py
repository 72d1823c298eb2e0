"""A Darshan log as an iolens job (iolens.profile.job.Job), so that the report, its JSON, the advice and the
store treat it exactly as they treat iolens's own logs.

How (docs/profile.md, "Darshan logs"):
- Each rank's records become the log of one process (a ProcessLog built in memory, as reader.py would build
  it from an iolens log); the shared records (rank -1, Darshan's own reduction over every rank) are one more
  process, "shared records". build_job then merges them by path as it merges processes.
- A file's row holds the counters of every file-level module, under Darshan's names: POSIX, MPI-IO, STDIO,
  H5F and PNETCDF_FILE (a file's records share one record id). H5D datasets and PnetCDF variables are not
  files: they are listed in the job's `darshan` member (`datasets`, `variables`).
- Values are put in iolens's units: times (seconds) become integer nanoseconds, timestamps (seconds since
  the job started) nanoseconds + 1 (0: never), Darshan's -1 ("not recorded") 0, and MAX_BYTE_READ/WRITTEN
  (Darshan: the highest offset accessed) the end of the access (+ 1), as iolens records it. Counters
  about ranks (FASTEST/SLOWEST/VARIANCE), modes and alignments stay out of the rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from iolens.profile import merge as mg
from iolens.profile.darshan_log import format as fmt
from iolens.profile.darshan_log.modules import pnetcdf_modules
from iolens.profile.darshan_log.reader import DarshanLog, Records, Sink, parse_darshan_bytes, read_darshan_log
from iolens.profile.job import Job, build_job
from iolens.profile.reader import (
    FILE_NOT_REGULAR,
    FLAG_CLEAN,
    MINOR_VERSION,
    TRACE_DTYPE,
    FileTable,
    Header,
    ProcessLog,
    Schema,
    Section,
)

# The modules whose records are files (one record id per path): their counters share the file's row.
FILE_MODULES = (fmt.POSIX, fmt.MPIIO, fmt.STDIO, fmt.H5F, fmt.PNETCDF_FILE)
# Counters that say nothing about one process's I/O on a file, or that cannot be merged.
LEFT_OUT = ("FASTEST_RANK", "SLOWEST_RANK", "VARIANCE_RANK", "_MODE", "ALIGNMENT", "RENAMED_FROM")
TOP_DATASETS = 50


@dataclass
class DarshanJob(Job):
    """A Job read from a Darshan log: `darshan` is the report's `darshan` member (the log, its modules, the
    totals of each module under Darshan's names, the H5D datasets and PnetCDF variables)."""

    darshan: dict[str, Any] = field(default_factory=dict)
    log: DarshanLog | None = None


def merge_of(name: str) -> str:
    """How a Darshan counter combines over processes, in docs/profile-log.md's terms."""
    if name.endswith("_START_TIMESTAMP"):
        return mg.MIN
    if name.endswith("_END_TIMESTAMP") or "_MAX_" in name or name.endswith("USE_MPIIO"):
        return mg.MAX
    tail = name.rsplit("_", 2)
    if len(tail) == 3 and tail[1][-1:].isdigit() and tail[1].rstrip("0123456789") in ("ACCESS", "STRIDE"):
        return mg.TOPC if tail[2] == "COUNT" else mg.TOPV
    return mg.SUM


def _convert(name: str, values: np.ndarray, records: Records) -> np.ndarray:
    """One Darshan column in iolens's units, as uint64."""
    if values.dtype.kind == "f":
        ok = values > 0  # -1: not recorded; NaN and negatives never count
        ns = np.where(ok, np.round(np.where(ok, values, 0) * 1e9), 0).astype(np.uint64)
        if name.endswith("TIMESTAMP"):
            ns[ok] += np.uint64(1)
        return ns
    if name.endswith("_STRIDE"):
        return values.astype(np.uint64)  # a signed stride, as iolens keeps it: two's complement
    out = np.where(values > 0, values, 0).astype(np.uint64)
    if "MAX_BYTE_" in name:
        moved = records.column(name.replace("MAX_BYTE_", "BYTES_"))
        out[moved > 0] += np.uint64(1)
    return out


def _kept(number: int) -> list[str]:
    """The counters of a file-level module that go into the rows."""
    layout = fmt.MODULES[number].layout
    return [n for n in layout.counters + layout.fcounters if not any(x in n for x in LEFT_OUT)]


class _Module:
    """One file-level module's records, converted as they come (a piece of the region at a time): their
    ids and ranks, the kept counters in iolens's units (one row per record, in the log's order, in a
    growing buffer: never a second copy of the region), and the module's totals in Darshan's units."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.names = _kept(number)
        self.ids: list[np.ndarray] = []
        self.ranks: list[np.ndarray] = []
        self.data = bytearray()
        self.n = 0
        self.totals: dict[str, float | int] = {"records": 0}

    def feed(self, records: Records) -> None:
        self.n += len(records)
        self.ids.append(records.ids.copy())
        self.ranks.append(records.ranks.copy())
        _add_totals(self.totals, records)
        layout = records.module.layout
        block = np.empty((len(records), len(self.names)), dtype=np.uint64)
        for k, name in enumerate(self.names):
            if name in layout.counters:
                src = records.counters[:, layout.counters.index(name)]
            else:
                src = records.fcounters[:, layout.fcounters.index(name)]
            block[:, k] = _convert(name, src, records)
        self.data += memoryview(block).cast("B")  # no bytes copy of the block on the way

    def matrix(self, extra_rows: int = 0) -> np.ndarray:
        """The rows (then extra_rows rows of zeros): a view of the buffer, which then cannot grow."""
        if extra_rows:
            self.data += bytes(8 * len(self.names) * extra_rows)
        return np.frombuffer(self.data, dtype=np.uint64).reshape(-1, len(self.names))


def _mounts(paths: list[str], mounts: list[tuple[str, str]]) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Each path's mount (index into the list, -1 none): the longest mount point it lies under, worked out
    once per directory (100k files in a few directories: a few lookups)."""
    by_dir: dict[str, int] = {}
    exact = {m: i for i, (m, _) in enumerate(mounts)}

    def find(d: str) -> int:
        for i, (m, _) in enumerate(mounts):  # longest first
            if d == m or d.startswith(m.rstrip("/") + "/"):
                return i
        return -1

    out = []
    for p in paths:
        i = exact.get(p)
        if i is None:
            d = p[: p.rfind("/")]  # the directory ("" for "/x" and for names without one)
            i = by_dir.get(d)
            if i is None:
                i = by_dir[d] = find(d or "/")
        out.append(i)
    return np.array(out, dtype=np.intp), mounts


def _process_log(
    log: DarshanLog,
    rank: int,
    label: str,
    table: FileTable,
    names: list[str],
    merges: list[str],
    hostname: str,
) -> ProcessLog:
    col = table.column
    proc = {
        "OPENS": col("POSIX_OPENS"),
        "READS": col("POSIX_READS"),
        "WRITES": col("POSIX_WRITES"),
        "BYTES_READ": col("POSIX_BYTES_READ"),
        "BYTES_WRITTEN": col("POSIX_BYTES_WRITTEN"),
        "STATS": col("POSIX_STATS"),
        "SEEKS": col("POSIX_SEEKS"),
        "FSYNCS": col("POSIX_FSYNCS") + col("POSIX_FDSYNCS"),
        "RENAMES": col("POSIX_RENAME_SOURCES"),
        "MMAPS": col("POSIX_MMAPS"),
        "READ_TIME": col("POSIX_F_READ_TIME"),
        "WRITE_TIME": col("POSIX_F_WRITE_TIME"),
        "META_TIME": col("POSIX_F_META_TIME"),
    }
    proc_values = np.array([int(v.sum(dtype=np.uint64)) for v in proc.values()], dtype=np.uint64)
    start_ns = int(round(log.start_s * 1e9))
    end_ns = int(round(log.run_time_s * 1e9))
    words = log.exe.split()
    header = Header(
        version=1, header_size=0, flags=FLAG_CLEAN, chunk_size=0, chunk_count=0, pid=0, ppid=0,
        start_wall_ns=start_ns, start_mono_ns=0, end_ns=end_ns, exit_status=0, exit_signal=0,
        rank=rank if log.nprocs > 1 and rank >= 0 else -1, n_file_counters=len(names),
        n_proc_counters=len(proc), trace_dropped=0, minor_version=MINOR_VERSION, n_file_data_counters=0,
        job_id=str(log.jobid), hostname=hostname, exe=words[0] if words else "", parent_log="",
        cmdline=words,
    )  # fmt: skip
    schema = Schema(
        file_rec=Section(tuple(names), tuple(merges)),
        proc=Section(tuple(proc), tuple(mg.SUM for _ in proc)),
    )
    return ProcessLog(
        path=Path(f"{log.path}{label}"),
        header=header,
        schema=schema,
        table=table,
        proc_values=proc_values,
        threads=1,
        truncated=False,
        messages=[],
        end_ns=end_ns,
        trace_array=np.zeros(0, dtype=TRACE_DTYPE),
    )


def _blocks(mods: list[_Module], n_rows: int, inverse: np.ndarray) -> list[np.ndarray]:
    """One block of columns per module, every row (inverse: the row of each record, the modules' records
    one after the other). The first module's records, when they are rows 0, 1, 2 ..., are its block as
    they are; the others' are put in their rows."""
    blocks = []
    at = 0
    for k, mod in enumerate(mods):
        rows = inverse[at : at + mod.n]
        at += mod.n
        if k == 0 and bool((rows == np.arange(rows.size)).all()):
            blocks.append(mod.matrix(n_rows - mod.n))
            continue
        block = np.zeros((n_rows, len(mod.names)), dtype=np.uint64)
        if mod.n:
            block[rows] = mod.matrix()
        blocks.append(block)
    return blocks


def _rows_of(ranks: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One row per (rank, record id): the rows' ranks and ids, and each record's row. Rows come in the
    order of their first record: the first module's records, in the log's order, are rows 0, 1, 2 ... (its
    block then needs no copy)."""
    if ranks.size and (ranks == ranks[0]).all():
        u_ids, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
        u_ranks = np.full(u_ids.size, ranks[0], dtype=np.int64)
    else:
        by = np.lexsort((ids, ranks))  # stable: a group's first is its earliest record
        r, i = ranks[by], ids[by]
        new = np.ones(by.size, dtype=bool)
        new[1:] = (r[1:] != r[:-1]) | (i[1:] != i[:-1])
        group = np.cumsum(new) - 1
        inverse = np.empty(by.size, dtype=np.intp)
        inverse[by] = group
        first, u_ranks, u_ids = by[new], r[new], i[new]
    order = np.argsort(first, kind="stable")
    place = np.empty(order.size, dtype=np.intp)
    place[order] = np.arange(order.size)
    return u_ranks[order], u_ids[order], place[inverse.ravel()]


def darshan_job(
    log: DarshanLog, modules: dict[int, _Module] | None = None, all_files: bool = False
) -> DarshanJob:
    """The job of a log: `modules`, the file-level modules load_darshan_job had converted while reading,
    or (None) those of `log.records`, which are then released (a 100k-record log's are 70 MB)."""
    if modules is None:
        modules = {}
        for number in FILE_MODULES:
            if number in log.records:
                modules[number] = _Module(number)
                modules[number].feed(log.records.pop(number))
    member = darshan_member(log, {fmt.MODULES[m].name: mod.totals for m, mod in modules.items()})
    # POSIX always (the report's figures are POSIX's), the other file modules when the log has them.
    mods = [modules.get(fmt.POSIX) or _Module(fmt.POSIX)]
    mods += [modules[m] for m in FILE_MODULES if m != fmt.POSIX and m in modules]
    names = [n for mod in mods for n in mod.names]
    merges = [merge_of(n) for n in names]
    # One row per (rank, record id) over the file modules.
    all_ranks = np.concatenate([np.zeros(0, np.int64), *(r for mod in mods for r in mod.ranks)])
    all_ids = np.concatenate([np.zeros(0, np.uint64), *(i for mod in mods for i in mod.ids)])
    u_ranks, u_ids, inverse = _rows_of(all_ranks, all_ids)
    del all_ranks, all_ids
    blocks = _blocks(mods, u_ids.size, inverse)
    del inverse, mods, modules
    id_list = u_ids.tolist()
    paths_all = [log.names.get(i) or f"(Darshan record {i:016x}: no name)" for i in id_list]
    mount_all, mount_list = _mounts(paths_all, log.mounts)
    special = np.array([p.startswith("<") and p.endswith(">") for p in paths_all], dtype=bool)
    reads_col = blocks[0][:, names.index("POSIX_READS")] > 0
    writes_col = blocks[0][:, names.index("POSIX_WRITES")] > 0

    logs: list[ProcessLog] = []
    ranks = u_ranks
    # Only a DXT trace names the ranks' hosts.
    hosts: dict[int, str] = {}
    for f in log.dxt:
        if f.hostname:
            hosts.setdefault(f.rank, f.hostname)
    for rank in np.unique(ranks).tolist():
        rows = np.flatnonzero(ranks == rank)
        whole = rows.size == u_ids.size
        n = rows.size
        table = FileTable(
            names=names,
            paths=paths_all if whole else [paths_all[i] for i in rows.tolist()],
            flags=np.where(special[rows], FILE_NOT_REGULAR, 0).astype(np.uint32),
            mount=mount_all if whole else mount_all[rows],
            mount_list=mount_list,
            blocks=blocks if whole else [b[rows] for b in blocks],
            contributions=np.ones(n, dtype=np.uint32),
            first_reads=reads_col[rows].astype(np.uint32),
            first_writes=writes_col[rows].astype(np.uint32),
        )
        label = "" if whole else (" (shared records)" if rank < 0 else f" (rank {rank})")
        # The shared records' host: the job's, when it ran on one.
        host = (
            hosts.get(rank, "") if rank >= 0 or len(set(hosts.values())) != 1 else next(iter(hosts.values()))
        )
        logs.append(_process_log(log, rank, label, table, names, merges, host))
        logs[-1].modules.update(pnetcdf_modules(log, rank, table))  # the layer as iolens's logs have it
    if not logs:
        empty = FileTable(names, [], np.zeros(0, np.uint32), np.zeros(0, np.intp), mount_list,
                          [b[:0] for b in blocks], np.zeros(0, np.uint32),
                          np.zeros(0, np.uint32), np.zeros(0, np.uint32))  # fmt: skip
        logs.append(_process_log(log, -1, "", empty, names, merges, ""))
    del blocks
    job = build_job(str(log.jobid), logs, list(log.messages), all_files)
    if log.nprocs > 1:
        # A shared record is every rank's: the file was the job's processes', not one process's.
        shared = {paths_all[i] for i in np.flatnonzero(ranks < 0).tolist()}
        for p in shared:
            r = job.files.row_of[p]
            job.procs[r] = max(int(job.procs[r]), log.nprocs)
    return DarshanJob(**{f.name: getattr(job, f.name) for f in fields(Job)}, darshan=member, log=log)


def load_darshan_job(path: str | Path, data: bytes | None = None, all_files: bool = False) -> DarshanJob:
    """The job of one Darshan log (its bytes when given), its file-level modules converted as the log is
    read; DarshanLogError (a ProfileLogError) when it cannot be read."""
    modules = {m: _Module(m) for m in FILE_MODULES}
    sinks: dict[int, Sink] = {m: mod.feed for m, mod in modules.items()}
    if data is None:
        log = read_darshan_log(path, sinks)
    else:
        log = parse_darshan_bytes(Path(path), data, sinks)
    return darshan_job(log, {m: modules[m] for m in log.streamed}, all_files)


# --- the report's `darshan` member -------------------------------------------------------------------------


def summable(name: str) -> bool:
    """Counters whose sum over records means something (counts, bytes, cumulative times)."""
    if merge_of(name) != mg.SUM or any(x in name for x in LEFT_OUT):
        return False
    keep_out = ("_ACCESS", "_LENGTH_D", "_STRIDE_D", "NDIMS", "NPOINTS", "DATATYPE_SIZE", "CHUNK_SIZE",
                "USE_", "IS_RECORD_VAR", "TIME_SIZE")  # fmt: skip
    return not any(x in name for x in keep_out)


def _add_totals(out: dict[str, float | int], records: Records) -> None:
    """Add the records to a module's totals: the sum of each summable counter (-1, not recorded, as 0)."""
    layout = records.module.layout
    out["records"] = int(out.get("records", 0)) + len(records)
    for k, name in enumerate(layout.counters):
        if summable(name):
            col = records.counters[:, k]
            out[name] = int(out.get(name, 0)) + int(col[col > 0].sum())
    for k, name in enumerate(layout.fcounters):
        if summable(name):
            col = records.fcounters[:, k]
            out[name] = float(out.get(name, 0.0)) + float(col[col > 0].sum())


DATASET_COUNTERS = {
    fmt.H5D: ("H5D_OPENS", "H5D_READS", "H5D_WRITES", "H5D_BYTES_READ", "H5D_BYTES_WRITTEN",
              "H5D_REGULAR_HYPERSLAB_SELECTS", "H5D_IRREGULAR_HYPERSLAB_SELECTS", "H5D_POINT_SELECTS",
              "H5D_DATASPACE_NDIMS", "H5D_DATASPACE_NPOINTS", "H5D_DATATYPE_SIZE", "H5D_CHUNK_SIZE_D1",
              "H5D_CHUNK_SIZE_D2", "H5D_CHUNK_SIZE_D3", "H5D_USE_MPIIO_COLLECTIVE", "H5D_F_READ_TIME",
              "H5D_F_WRITE_TIME", "H5D_F_META_TIME"),
    fmt.PNETCDF_VAR: ("PNETCDF_VAR_OPENS", "PNETCDF_VAR_INDEP_READS", "PNETCDF_VAR_INDEP_WRITES",
                      "PNETCDF_VAR_COLL_READS", "PNETCDF_VAR_COLL_WRITES", "PNETCDF_VAR_NB_READS",
                      "PNETCDF_VAR_NB_WRITES", "PNETCDF_VAR_BYTES_READ", "PNETCDF_VAR_BYTES_WRITTEN",
                      "PNETCDF_VAR_NDIMS", "PNETCDF_VAR_NPOINTS", "PNETCDF_VAR_DATATYPE_SIZE",
                      "PNETCDF_VAR_F_READ_TIME", "PNETCDF_VAR_F_WRITE_TIME", "PNETCDF_VAR_F_META_TIME"),
}  # fmt: skip


def _datasets(log: DarshanLog, number: int) -> list[dict[str, Any]]:
    """H5D datasets or PnetCDF variables: the records moving the most bytes, with their shape and counts."""
    records = log.records[number]
    prefix = "H5D" if number == fmt.H5D else "PNETCDF_VAR"
    moved = records.column(f"{prefix}_BYTES_READ").clip(0) + records.column(f"{prefix}_BYTES_WRITTEN").clip(0)
    order = np.lexsort((np.arange(moved.size), -moved))[:TOP_DATASETS]
    out = []
    for i in order.tolist():
        file_id = int(records.file_rec_ids[i]) if records.file_rec_ids is not None else 0
        row: dict[str, Any] = {
            "name": log.names.get(int(records.ids[i]), ""),
            "file": log.names.get(file_id) if file_id else None,
            "rank": int(records.ranks[i]),
        }
        for name in DATASET_COUNTERS[number]:
            v = records.column(name)[i]
            row[name] = float(v) if isinstance(v, np.floating) else int(v)
        out.append(row)
    return out


def darshan_member(log: DarshanLog, layers: dict[str, dict[str, float | int]]) -> dict[str, Any]:
    """The report's `darshan` member; `layers`: the totals of the modules already converted."""
    for number, records in log.records.items():
        _add_totals(layers.setdefault(fmt.MODULES[number].name, {}), records)
    order = [m.name for m in sorted(fmt.MODULES.values(), key=lambda m: m.number)]
    return {
        "log_version": log.version,
        "library_version": log.metadata.get("lib_ver"),
        "modules": dict(log.modules),
        "partial": list(log.partial),
        "metadata": dict(log.metadata),
        "exe": log.exe,
        "uid": log.uid,
        "nprocs": log.nprocs,
        "layers": {name: layers[name] for name in order if name in layers},
        "datasets": _datasets(log, fmt.H5D) if fmt.H5D in log.records else [],
        "variables": _datasets(log, fmt.PNETCDF_VAR) if fmt.PNETCDF_VAR in log.records else [],
    }
