"""Advice from a job's profile: each rule looks at the job's data files (code and libraries are kept apart:
places.py), fires only when its evidence is there and the I/O time it could save is worth a change, and says
what it saw and what to try, leaving out what the job already does. The thresholds are below and in
docs/profile.md ("Advice").

A rule returns None when it does not fire; an Advice carries the numbers that made it fire (with the time it
could save), the thresholds they crossed, a one-line finding and a concrete suggestion.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any

import numpy as np

from iolens.profile.hdf5 import Hdf5Dataset, Hdf5File
from iolens.profile.job import NOT_DATA, Job, code_rows, data_rows, extent, io_column, io_sum
from iolens.profile.layers import MpiioFile
from iolens.profile.places import code_mask, fs_kind, libraries, parallel_dirs, parallel_mask
from iolens.profile.reader import FILE_NOT_REGULAR, NESTED_STDIO
from iolens.profile.sizes import bucket_upper

KiB = 1024
MiB = 1024 * KiB

# The gate every rule passes (docs/profile.md, "Advice"): the I/O time the change could save is at least
MIN_SAVING_S = 0.25  # seconds of the job's run time, and
MIN_SAVING_SHARE = 0.05  # of the time the job's processes ran.

# Evidence thresholds.
MIN_ACCESSES = 1000  # read+write calls before any access-pattern rule speaks
SMALL_ACCESS_BYTES = 100 * KiB  # an access is small when its histogram bucket ends at or below this
SMALL_ACCESS_SHARE = 0.5
META_SHARE = 0.3  # metadata time as a share of the I/O time on data
REPEATS = 4  # opens (stats) per file from which "open (stat) once" is advice
MIN_NAMESPACE_OPS = 1000  # creates, removes, renames, directory listings before "fewer of them" is advice
MIN_FILES = 100  # regular files read or written, before the many-small-files rule speaks
SMALL_FILE_BYTES = 1 * MiB  # a file is small when the largest offset accessed is below this
SMALL_FILE_SHARE = 0.5
# Below this share of sequential accesses, access is random. Uniformly random offsets are "sequential" (at or
# after the end of the previous access) half the time, so the bar is well above one half.
SEQ_SHARE = 0.75
MISALIGNED_SHARE = 0.5
MIN_SYNCS = 100
SYNCS_PER_WRITE = 0.1  # one fsync/fdatasync per 10 writes or more often
SYNCS_PER_FILE = 2  # more than once per file on average: not "once when the file is complete"
MIN_SHARED_FILES = 1
IMBALANCE_RATIO = 1.5  # slowest (or busiest) rank over the mean
MIN_IMBALANCE_BYTES = 64 * MiB
MAX_EXAMPLES = 5

# MPI-IO counters (Darshan's names) that say whether reads and writes were collective.
COLLECTIVE_COUNTERS = ("MPIIO_COLL_READS", "MPIIO_COLL_WRITES", "MPIIO_SPLIT_READS", "MPIIO_SPLIT_WRITES")
INDEPENDENT_COUNTERS = ("MPIIO_INDEP_READS", "MPIIO_INDEP_WRITES", "MPIIO_NB_READS", "MPIIO_NB_WRITES")


@dataclass(frozen=True)
class Advice:
    rule: str
    title: str
    finding: str
    suggestion: str
    evidence: dict[str, Any]
    thresholds: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


# --- what a change could save ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Saving:
    """The I/O time a change could save at most: `io_time_s`, the time of the calls the rule is about, summed
    over processes and threads; `share`, that over the time the job's processes ran (their run times summed:
    a one-process job's run time); `run_time_s`, that share of the job's run time (`of_s`)."""

    io_time_s: float
    share: float
    run_time_s: float
    of_s: float

    @property
    def worth(self) -> bool:
        return self.run_time_s >= MIN_SAVING_S and self.share >= MIN_SAVING_SHARE

    def evidence(self) -> dict[str, float]:
        return {"saving_s": self.io_time_s, "saving_share": self.share, "saving_run_time_s": self.run_time_s}

    def sentence(self) -> str:
        return (
            f"At most {self.run_time_s:.2f} s of the {self.of_s:.2f} s run could be saved "
            f"({self.io_time_s:.2f} s went to these calls, {_pct(self.share)} of the time the processes ran)."
        )


GATE = {"min_saving_s": MIN_SAVING_S, "min_saving_share": MIN_SAVING_SHARE}


class Facts:
    """What the rules share about one job, computed once: its data rows, each row's file system kind, the
    libraries it loaded, the time its processes ran."""

    def __init__(self, job: Job) -> None:
        self.job = job
        t = job.files
        self.t = t
        self.data = data_rows(t)
        kinds = np.array([fs_kind(fs) for _, fs in t.mount_list] + ["unknown"], dtype=object)
        self.kind = kinds[t.mount]  # mount -1 (none recorded) takes the last: "unknown"
        self.kind[parallel_mask(t.paths, parallel_dirs())] = "parallel"  # IOLENS_PARALLEL_FS
        self.memory = self.kind == "memory"
        self.shared = self.kind == "parallel"
        syncs = t.column("POSIX_FSYNCS") + t.column("POSIX_FDSYNCS")
        self.synced = syncs > 0
        # Under Darshan's meaning a sync's time is write time: the write time of a file synced after every
        # few writes is mostly its syncs' (fsync_heavy's), not its writes'.
        self.sync_bound = self.synced & (syncs >= SYNCS_PER_WRITE * t.column("POSIX_WRITES"))
        # Runtimes before the STDIO layer counted a sync's time in POSIX_F_META_TIME (reader.NESTED_STDIO).
        self.sync_in_meta = not t.has("STDIO_BYTES_READ")
        # Code and libraries, their directories too (not regular files), unless counted as data.
        self.code = code_rows(t)
        if not job.all_files:
            other = np.flatnonzero((t.flags & NOT_DATA) == FILE_NOT_REGULAR)
            self.code[other] = code_mask([t.paths[i] for i in other.tolist()])

    def col(self, name: str) -> np.ndarray:
        return self.t.column(name)

    def io(self, what: str) -> np.ndarray:
        """One of iolens's own per-file figures (job.LAYERED): the POSIX and STDIO layers added up."""
        return io_column(self.t, what)

    def io_total(self, what: str, mask: np.ndarray) -> int:
        return io_sum(self.t, what, mask)

    def io_seconds(self, whats: tuple[str, ...], mask: np.ndarray) -> float:
        return sum(self.io_total(w, mask) for w in whats) / 1e9

    def total(self, name: str, mask: np.ndarray) -> int:
        return int(self.col(name)[mask].sum(dtype=np.uint64)) if mask.any() else 0

    def seconds(self, names: tuple[str, ...], mask: np.ndarray) -> float:
        return sum(self.total(n, mask) for n in names) / 1e9

    @cached_property
    def process_seconds(self) -> float:
        return sum(log.run_time_s for log in self.job.logs)

    @cached_property
    def libraries(self) -> set[str]:
        return libraries(self.t.paths)

    @cached_property
    def mpi(self) -> bool:
        """Ranks to share work and results between (one rank gains nothing from collective I/O)."""
        return self.job.rank_count >= 2

    @cached_property
    def collective(self) -> float | None:
        return collective_share(self.job)

    def is_data(self, path: str) -> bool:
        row = self.t.row_of.get(path)
        return row is not None and bool(self.data[row])

    def rows_of(self, paths: list[str]) -> np.ndarray:
        """A mask of the rows of these paths (those the POSIX layer has)."""
        mask = np.zeros(len(self.t.paths), dtype=bool)
        rows = [self.t.row_of[p] for p in paths if p in self.t.row_of]
        mask[rows] = True
        return mask

    @cached_property
    def independent_small(self) -> list[MpiioFile]:
        """Data files that several ranks wrote with independent MPI-IO calls, all of at most 1 MiB
        (independent_small_writes' files; small_transfers leaves their POSIX writes to it)."""
        return [
            m
            for m in self.job.mpiio
            if m.independent_small_writes
            and m.count("MPIIO_INDEP_WRITES")
            and len(m.kind_ranks.get("independent", ())) >= 2
            and self.is_data(m.path)
        ]

    @cached_property
    def hdf5_unaligned(self) -> list[Hdf5File]:
        """HDF5 data files without alignment on a parallel file system (hdf5_alignment's; misaligned leaves
        them to it)."""
        return [h for h in self.job.hdf5 if h.unaligned and h.parallel_fs and self.is_data(h.path)]

    def saving(self, io_time_s: float) -> Saving:
        """A saving of cumulative I/O time (processes and threads add up)."""
        ps, run = self.process_seconds, self.job.run_time_s
        share = io_time_s / ps if ps > 0 else 0.0
        return Saving(io_time_s, share, min(share, 1.0) * run, run)

    def wall_saving(self, run_time_s: float) -> Saving:
        """A saving of the job's run time itself (the slowest rank's excess)."""
        run = self.job.run_time_s
        return Saving(run_time_s, run_time_s / run if run > 0 else 0.0, run_time_s, run)

    def collective_hint(self, what: str) -> str | None:
        """ "use collective MPI-IO (what)", unless the job has one rank or its MPI-IO is collective."""
        if not self.mpi:
            return None
        share = self.collective
        if share is None:
            return f"use collective MPI-IO ({what}) if the program does not already"
        if share >= 0.5:
            return None
        indep = _pct(1 - share)
        return f"use collective MPI-IO ({what}): {indep} of its MPI-IO reads and writes are independent"


def collective_share(job: Job) -> float | None:
    """The share of the job's MPI-IO reads and writes that were collective (split collectives included), from
    the MPI-IO layer's counters (Darshan's names, job.mpiio); None when the job made no MPI-IO reads or
    writes (no MPI-IO layer recorded): the rules then cannot tell, and say "if the program does not use it
    already"."""
    coll = indep = 0
    # Beneath collective H5Dwrite/H5Dread calls HDF5 writes its metadata with independent MPI-IO calls (and
    # may break a collective transfer into independent ones): for such a file, its HDF5 calls say how the
    # program asked for its data to move.
    h5 = {h.path: h for h in job.hdf5 if any(_h5_collective(d) for d in h.datasets)}
    for f in job.mpiio:
        if f.path in h5:
            datasets = h5[f.path].datasets
            coll += sum(_h5_collective(d) for d in datasets)
            indep += sum(d.independent_writes + d.independent_reads for d in datasets)
            continue
        coll += sum(f.count(n) for n in COLLECTIVE_COUNTERS)
        indep += sum(f.count(n) for n in INDEPENDENT_COUNTERS)
    # A Darshan log's job carries its MPI-IO counters as columns of the file table (profile/darshan_log).
    t = job.files
    coll += sum(int(t.column(n).sum(dtype=np.uint64)) for n in COLLECTIVE_COUNTERS if t.has(n))
    indep += sum(int(t.column(n).sum(dtype=np.uint64)) for n in INDEPENDENT_COUNTERS if t.has(n))
    return coll / (coll + indep) if coll + indep else None


def _h5_collective(d: Hdf5Dataset) -> int:
    """A dataset's reads and writes made with a collective transfer list (H5FD_MPIO_COLLECTIVE)."""
    return d.count("H5D_COLL_WRITES") + d.count("H5D_COLL_READS")


def _join(parts: list[str]) -> str:
    text = "; ".join(p for p in parts if p)
    return text[:1].upper() + text[1:] + "."


# --- the rules ------------------------------------------------------------------------------------------


def _bucket_columns(f: Facts, kind: str) -> tuple[list[str], list[str]]:
    """The size-bucket counters of a kind ("READ", "WRITE"): the small ones and all of them."""
    prefix = f"POSIX_SIZE_{kind}_"
    names = [n for n in f.t.names if n.startswith(prefix)]
    labels = [n[len(prefix) :].replace("_PLUS", "+").replace("_", "-") for n in names]
    small = [n for n, lab in zip(names, labels, strict=True) if bucket_upper(lab) <= SMALL_ACCESS_BYTES]
    return small, names


def _row_sum(f: Facts, names: list[str], mask: np.ndarray) -> np.ndarray:
    out = np.zeros(int(np.count_nonzero(mask)))
    for n in names:
        out += f.col(n)[mask]
    return out


def _unmerged(m: MpiioFile) -> bool:
    """Written with collective MPI-IO calls that reached the file system unaggregated: no fewer ranks wrote
    it through POSIX than made the calls, in more writes than the calls."""
    merged = (m.collective_buffering or {}).get("write")
    return m.collective_writes > 0 and not merged and m.posix_writes > m.writes


def _mpi_mean(files: list[MpiioFile]) -> float:
    """The mean size of the files' MPI-IO writes."""
    calls = sum(m.writes for m in files)
    return sum(m.count("MPIIO_BYTES_WRITTEN") for m in files) / calls if calls else 0.0


def small_transfers(job: Job, r: dict[str, Any], f: Facts) -> Advice | None:
    """Small reads (writes) of files read (written) in one call are not counted: that call moved all the
    file had to give, and cannot be larger (packing the files is many_small_files' advice)."""
    # The POSIX writes beneath independent small MPI-IO writes to a shared file are independent_small_writes'
    d = f.data & ~f.rows_of([m.path for m in f.independent_small])
    total = small = 0
    io_ns = 0.0
    # Files the program wrote with collective MPI-IO calls that the MPI library did not aggregate: as many
    # ranks wrote them through POSIX, in more (smaller) writes than the calls (Open MPI's OMPIO may do so).
    unmerged = [m for m in f.job.mpiio if _unmerged(m) and f.is_data(m.path)]
    beneath = f.rows_of([m.path for m in unmerged])[d]
    small_beneath = 0
    for kind in ("READ", "WRITE"):
        small_cols, all_cols = _bucket_columns(f, kind)
        n, s = _row_sum(f, all_cols, d), _row_sum(f, small_cols, d)
        s[f.col(f"POSIX_{kind}S")[d] < 2] = 0
        total += int(n.sum())
        small += int(s.sum())
        small_beneath += int(s[beneath].sum()) if kind == "WRITE" else 0
        # Each file's read (write) time, in the share of its calls that were small (not the write time of a
        # file synced after every few writes: that may be its syncs').
        part = np.divide(s, n, out=np.zeros_like(s), where=(n > 0) & ~(f.sync_bound[d] & (kind == "WRITE")))
        io_ns += float((f.col(f"POSIX_F_{kind}_TIME")[d] * part).sum())
    if total < MIN_ACCESSES or small < SMALL_ACCESS_SHARE * total:
        return None
    gain = f.saving(io_ns / 1e9)
    if not gain.worth:
        return None
    s = r["summary"]
    calls = s["reads"] + s["writes"]
    mean = (s["bytes_read"] + s["bytes_written"]) / calls if calls else 0.0
    # stdio calls: the STDIO layer's, or in a log made before it (reader.NESTED_STDIO) the same calls nested
    # in the POSIX counters
    stdio = sum(f.total(p + n, d) for p in ("", NESTED_STDIO) for n in ("STDIO_READS", "STDIO_WRITES"))
    parts = []
    coll_calls = sum(m.collective_writes for m in unmerged)
    if unmerged:
        ranks = sorted({rank for m in unmerged for rank in m.posix_writer_ranks})
        parts.append(
            f"{small_beneath} of the small writes lie beneath {coll_calls} collective MPI-IO writes (mean "
            f"{_mpi_mean(unmerged) / KiB:.1f} KiB) that the MPI library did not aggregate: {len(ranks)} "
            "rank(s) wrote their own pieces. Turn collective buffering on: with ROMIO the hints "
            "romio_cb_write=enable and cb_nodes; with Open MPI's OMPIO its aggregating components "
            "(--mca fcoll vulcan or two_phase) or ROMIO (--mca io romio321)"
        )
    if small_beneath < small:  # other small transfers: the program's own
        parts.append(
            "aggregate into transfers of 1 MiB or more: keep data in memory and read or write large blocks"
        )
        if stdio:
            parts.append("give the stdio streams a large buffer (setvbuf)")
        parts.append(f.collective_hint("MPI_File_write_all, MPI_File_read_all") or "")
        if "hdf5" in f.libraries:
            parts.append("with HDF5, make chunks of 1 MiB or more and a chunk cache that holds them")
        else:
            parts.append("or write through a library that aggregates (HDF5 with chunking, ADIOS2)")
    return Advice(
        "small_transfers",
        "Small transfers",
        f"{small} of {total} reads and writes ({_pct(small / total)}) moved at most 100 KiB each, in files "
        f"read or written in several calls (mean transfer {mean / KiB:.1f} KiB). " + gain.sentence(),
        _join(parts),
        {
            "accesses": total,
            "small_accesses": small,
            "small_share": small / total,
            "mean_access_bytes": mean,
            "stdio_calls": stdio,
            "not_aggregated_writes": small_beneath,
            "not_aggregated_collective_writes": coll_calls,
            **gain.evidence(),
        },
        {
            "min_accesses": MIN_ACCESSES,
            "small_access_bytes": SMALL_ACCESS_BYTES,
            "small_share": SMALL_ACCESS_SHARE,
            **GATE,
        },
    )


NAMESPACE_OPS = ("MKDIRS", "RMDIRS", "UNLINKS", "RENAMES", "READDIRS", "OPENDIRS", "LINKS")


def metadata_bound(job: Job, r: dict[str, Any], f: Facts) -> Advice | None:
    """Metadata time on data: the processes' META_TIME less the code and libraries' own (the loader's opens,
    an interpreter listing its package directories) and less that of files synced after every few writes
    (fsync_heavy's). A sync's time is write time (Darshan's meaning, which the runtime keeps); a log made
    before it kept that (one without the STDIO layer) has it in the synced files' metadata time, which is
    then left out for every synced file."""
    d = f.data
    not_data = f.io_total("meta_time_ns", f.code)
    # Files synced after every few writes: their opens and removals come with the syncs (a database's
    # journal, made, synced and removed per transaction), and the fix is fsync_heavy's (fewer, larger
    # transactions). In a log made before a sync's time moved to write time, every synced file's metadata
    # time holds its syncs.
    not_data += f.io_total("meta_time_ns", (f.synced if f.sync_in_meta else f.sync_bound) & ~f.code)
    meta = max(job.proc.get("META_TIME", 0) - not_data, 0) / 1e9
    io = f.io_seconds(("read_time_ns", "write_time_ns"), d) + meta
    if io <= 0 or meta < META_SHARE * io:
        return None
    gain = f.saving(meta)
    if not gain.worth:
        return None
    opened = d & (f.io("opens") > 0)
    stated = d & (f.col("POSIX_STATS") > 0)
    opens, stats = f.io_total("opens", d), f.total("POSIX_STATS", d)
    n_opened, n_stated = int(opened.sum()), int(stated.sum())
    namespace = sum(job.proc.get(n, 0) for n in NAMESPACE_OPS)
    parts = []
    if n_opened and opens >= REPEATS * n_opened:
        parts.append(f"open each file once and keep it open ({opens} opens of {n_opened} file(s))")
    if n_stated and stats >= REPEATS * n_stated:
        parts.append(f"stat once and keep the result ({stats} stats of {n_stated} file(s))")
    if namespace >= MIN_NAMESPACE_OPS:
        parts.append(
            f"create, remove, rename and list fewer files and directories ({namespace} such operations): "
            "keep temporary data in memory or in one file"
        )
    if not parts:
        return None  # nothing the job does more than it must: a file opened once is opened once
    if f.mpi:
        parts.append("let one rank open, stat or list and share the result (MPI_Bcast) instead of every rank")
    return Advice(
        "metadata_bound",
        "Metadata-bound",
        f"{meta:.2f} s of the {io:.2f} s spent in I/O calls on data ({_pct(meta / io)}) went to metadata "
        f"({opens} opens of {n_opened} data files, {stats} stats of {n_stated}, {namespace} directory and "
        "namespace operations). " + gain.sentence(),
        _join(parts),
        {
            "meta_time_s": meta,
            "io_time_s": io,
            "meta_share": meta / io,
            "metadata_ops": r["summary"]["metadata_ops"],
            "opens": opens,
            "stats": stats,
            "namespace_ops": namespace,
            **gain.evidence(),
        },
        {
            "meta_share": META_SHARE,
            "repeats": REPEATS,
            "min_namespace_ops": MIN_NAMESPACE_OPS,
            **GATE,
        },
    )


def many_small_files(job: Job, r: dict[str, Any], f: Facts) -> Advice | None:
    rows = f.data & ((f.io("reads") > 0) | (f.io("writes") > 0))
    n = int(np.count_nonzero(rows))
    if n < MIN_FILES:
        return None
    size = extent(f.t)  # the largest offset read or written + 1, in either layer
    small_rows = rows & (size < SMALL_FILE_BYTES)
    small = int(np.count_nonzero(small_rows))
    if small < SMALL_FILE_SHARE * n:
        return None
    gain = f.saving(f.io_seconds(("meta_time_ns", "read_time_ns", "write_time_ns"), small_rows))
    if not gain.worth:
        return None
    median = float(np.median(size[rows]))
    parts = [
        "pack small files into fewer large ones (an HDF5 or NetCDF container, ADIOS2, or an archive read in "
        "place)"
    ]
    on_shared = int(np.count_nonzero(small_rows & f.shared))
    if on_shared:
        parts.append(
            f"keep small temporary files ({on_shared} of them are on a shared file system) on node-local "
            "storage (/tmp, /dev/shm) instead"
        )
    return Advice(
        "many_small_files",
        "Many small files",
        f"{small} of the {n} data files read or written ({_pct(small / n)}) are smaller than 1 MiB "
        f"(median {median / KiB:.1f} KiB). " + gain.sentence(),
        _join(parts),
        {
            "files_with_data": n,
            "small_files": small,
            "small_share": small / n,
            "median_file_bytes": median,
            "on_shared_fs": on_shared,
            **gain.evidence(),
        },
        {
            "min_files": MIN_FILES,
            "small_file_bytes": SMALL_FILE_BYTES,
            "small_share": SMALL_FILE_SHARE,
            **GATE,
        },
    )


def random_access(job: Job, r: dict[str, Any], f: Facts) -> Advice | None:
    """The first read (write) of each (thread, file) follows no other, so it can never be sequential: those
    are left out, and a job that reads or writes many files once each shows no random access. Files in memory
    (tmpfs) are left out: access order costs nothing there."""
    rows = f.data & ~f.memory
    evidence: dict[str, Any] = {}
    said: list[str] = []
    io_s = 0.0
    for kind, first in (("read", f.t.first_reads), ("write", f.t.first_writes)):
        calls = f.total(f"POSIX_{kind.upper()}S", rows)
        firsts = int(first[rows].sum(dtype=np.uint64)) if rows.any() else 0
        n = calls - firsts
        seq = f.total(f"POSIX_SEQ_{kind.upper()}S", rows)
        if n >= MIN_ACCESSES and seq < SEQ_SHARE * n:
            evidence.update(
                {
                    f"{kind}s": calls,
                    f"first_{kind}s": firsts,
                    f"seq_{kind}s": seq,
                    f"seq_{kind}_share": seq / n,
                }
            )
            said.append(
                f"{n - seq} of {n} {kind}s after the first of each file ({_pct((n - seq) / n)}) did not "
                f"start at or after the end of the previous {kind}"
            )
            timed = rows & ~f.sync_bound if kind == "write" else rows
            io_s += f.seconds((f"POSIX_F_{kind.upper()}_TIME",), timed) * (n - seq) / calls
    if not evidence:
        return None
    gain = f.saving(io_s)
    if not gain.worth:
        return None
    parts = [
        "access files in offset order where the algorithm allows (sort or batch the requests)",
        "read larger contiguous blocks and pick the parts in memory",
        f.collective_hint("the library then sorts and merges the requests") or "",
    ]
    if np.count_nonzero(rows & f.shared & ((f.col("POSIX_READS") > 0) | (f.col("POSIX_WRITES") > 0))):
        parts.append(
            "if the access is random by nature, the file system's small-request rate is the limit: consider "
            "node-local or flash storage for that data"
        )
    return Advice(
        "random_access",
        "Random access",
        "; ".join(said) + ". " + gain.sentence(),
        _join(parts),
        {**evidence, **gain.evidence()},
        {"min_accesses": MIN_ACCESSES, "seq_share": SEQ_SHARE, **GATE},
    )


def misaligned(job: Job, r: dict[str, Any], f: Facts) -> Advice | None:
    """Only files on shared (parallel, network) file systems: there a misaligned access spans stripes and
    takes locks on both; on a node's own disk or in memory the page cache absorbs it. HDF5 files without
    alignment are hdf5_alignment's."""
    rows = f.data & f.shared & ~f.rows_of([h.path for h in f.hdf5_unaligned])
    n = f.total("POSIX_READS", rows) + f.total("POSIX_WRITES", rows)
    bad = f.total("POSIX_FILE_NOT_ALIGNED", rows)
    if n < MIN_ACCESSES or bad < MISALIGNED_SHARE * n:
        return None
    timed = f.seconds(("POSIX_F_READ_TIME",), rows) + f.seconds(("POSIX_F_WRITE_TIME",), rows & ~f.sync_bound)
    gain = f.saving(timed * bad / n)
    if not gain.worth:
        return None
    t = f.t
    where_rows = rows & (f.col("POSIX_FILE_NOT_ALIGNED") > 0)
    fs = sorted({t.mount_list[m][1] for m in set(t.mount[where_rows].tolist()) if m >= 0})
    where = f" on {', '.join(fs)}" if fs else ""
    parts = [
        "align offsets and transfer sizes to the file system's block size (the stripe size on Lustre or GPFS)"
    ]
    parts.append("pad headers and records to a multiple of it")
    if "hdf5" in f.libraries:
        parts.append("set HDF5's alignment (H5Pset_alignment)")
    if f.mpi:
        parts.append("give MPI-IO the striping_unit hint")
    return Advice(
        "misaligned",
        "Misaligned access",
        f"{bad} of {n} reads and writes ({_pct(bad / n)}) started at an offset that is not a multiple of the "
        f"file system's block size{where}. " + gain.sentence(),
        _join(parts),
        {
            "accesses": n,
            "file_not_aligned": bad,
            "misaligned_share": bad / n,
            "fs_types": fs,
            **gain.evidence(),
        },
        {"min_accesses": MIN_ACCESSES, "misaligned_share": MISALIGNED_SHARE, **GATE},
    )


def fsync_heavy(job: Job, r: dict[str, Any], f: Facts) -> Advice | None:
    """Files in memory are left out (a sync there does nothing). The time a sync takes is inside the synced
    files' write time (Darshan's meaning, the runtime's too; logs made before it kept that had it in the
    metadata time): the saving is both, an upper bound."""
    rows = f.data & ~f.memory & f.synced
    fsyncs, fdsyncs = f.total("POSIX_FSYNCS", rows), f.total("POSIX_FDSYNCS", rows)
    syncs, writes, files = fsyncs + fdsyncs, f.total("POSIX_WRITES", rows), int(np.count_nonzero(rows))
    if syncs < MIN_SYNCS or syncs < SYNCS_PER_WRITE * writes or syncs < SYNCS_PER_FILE * files:
        return None
    gain = f.saving(f.seconds(("POSIX_F_META_TIME", "POSIX_F_WRITE_TIME"), rows))
    if not gain.worth:
        return None
    per = writes / syncs
    return Advice(
        "fsync_heavy",
        "Frequent syncs",
        f"{syncs} fsync/fdatasync calls for {writes} writes to {files} file(s): one every {per:.1f} writes. "
        + gain.sentence(),
        "Sync once when a file (a checkpoint, an output step) is complete, not after every write; if each "
        "step must be durable, write the whole step first and sync once per step (a database: one "
        "transaction per batch, not per row).",
        {
            "syncs": syncs,
            "fsyncs": fsyncs,
            "fdsyncs": fdsyncs,
            "writes": writes,
            "files": files,
            "writes_per_sync": per,
            **gain.evidence(),
        },
        {
            "min_syncs": MIN_SYNCS,
            "syncs_per_write": SYNCS_PER_WRITE,
            "syncs_per_file": SYNCS_PER_FILE,
            **GATE,
        },
    )


def shared_read_after_write(job: Job, r: dict[str, Any], f: Facts) -> Advice | None:
    """Files in memory are left out: passing data through /dev/shm is passing it in memory already. So are
    files whose every reader also wrote them (the ranks of a shared checkpoint reading back their parts)."""
    t = f.t
    # Some process first read the file after another one first wrote it (a process is a log and the logs
    # that continue it after exec; a read that came before the other's write is no read of its data), and
    # some reader never wrote it.
    mask = f.data & ~f.memory & job.read_after_write & (job.readers > job.both)
    rows = np.flatnonzero(mask)
    if rows.size < MIN_SHARED_FILES:
        return None
    gain = f.saving(f.io_seconds(("read_time_ns", "write_time_ns"), mask))
    if not gain.worth:
        return None
    moved = (f.io("bytes_written")[rows] + f.io("bytes_read")[rows]).astype(np.float64)
    paths = [t.paths[i] for i in rows.tolist()]
    order = sorted(range(rows.size), key=lambda k: (-moved[k], paths[k]))[:MAX_EXAMPLES]
    examples = [
        {
            "path": paths[k],
            "processes": int(job.procs[rows[k]]),
            "writers": int(job.writers[rows[k]]),
            "readers": int(job.readers[rows[k]]),
        }
        for k in order
    ]
    first = examples[0]
    passing = (
        "pass such data in memory (MPI messages)" if f.mpi else "pass such data through a pipe or memory"
    )
    parts = [passing, "or separate the write and read phases with a sync and a barrier"]
    if np.count_nonzero(mask & f.shared):
        parts.insert(
            0,
            "on a parallel file system a reader sees another process's data only after the writer's close or "
            "sync and a synchronisation between them, and byte-range locks can serialise them",
        )
    return Advice(
        "shared_read_after_write",
        "Read-after-write on shared files",
        f"{rows.size} file(s) written by one process and read by another after that, e.g. {first['path']} "
        f"({first['writers']} writer(s), {first['readers']} reader(s) among {first['processes']} processes). "
        + gain.sentence(),
        _join(parts),
        {"files": int(rows.size), "examples": examples, **gain.evidence()},
        {"min_files": MIN_SHARED_FILES, **GATE},
    )


def rank_imbalance(job: Job, r: dict[str, Any], f: Facts) -> Advice | None:
    """Quiet when the job's MPI-IO is collective: then a few aggregator ranks do the file system's I/O for
    all by design, and their POSIX time is not an imbalance to spread."""
    imb = r["rank_imbalance"]
    if imb is None or (f.collective or 0.0) >= 0.5:
        return None
    said: list[str] = []
    evidence: dict[str, Any] = {"ranks": imb["ranks"]}
    t, b = imb["io_time_s"], imb["bytes"]
    if t["mean"] > 0 and t["max"] >= IMBALANCE_RATIO * t["mean"]:
        said.append(
            f"rank {t['max_rank']} spent {t['max']:.2f} s in I/O, {t['max'] / t['mean']:.1f}x the mean "
            f"{t['mean']:.2f} s of {imb['ranks']} ranks"
        )
        evidence["io_time_s"] = t
    if b["mean"] > 0 and b["max"] >= MIN_IMBALANCE_BYTES and b["max"] >= IMBALANCE_RATIO * b["mean"]:
        said.append(
            f"rank {b['max_rank']} moved {b['max'] / MiB:.1f} MiB, {b['max'] / b['mean']:.1f}x the mean "
            f"{b['mean'] / MiB:.1f} MiB"
        )
        evidence["bytes"] = b
    if not said:
        return None
    # Balanced, the slowest rank would take the mean: its excess is what the run could be shorter.
    gain = f.wall_saving(max(t["max"] - t["mean"], 0.0))
    if not gain.worth:
        return None
    parts = [
        "spread the I/O over the ranks instead of funnelling data through one",
        f.collective_hint("or parallel HDF5") or "",
        "if the work is balanced, look for a slow node or storage target serving the slowest rank",
    ]
    return Advice(
        "rank_imbalance",
        "Imbalance across ranks",
        "; ".join(said) + ". " + gain.sentence(),
        _join(parts),
        {**evidence, **gain.evidence()},
        {"ratio": IMBALANCE_RATIO, "min_bytes": MIN_IMBALANCE_BYTES, **GATE},
    )


def _example(paths: list[str]) -> str:
    more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
    return f"{paths[0]}{more}"


def independent_small_writes(job: Job, r: dict[str, Any], f: Facts) -> Advice | None:
    """Several ranks write one file with independent MPI-IO calls (MPI_File_write, _write_at, _write_shared)
    of at most 1 MiB each, and no larger writes: each call reaches the file system on its own, where
    collective calls would let the library merge the ranks' pieces into large writes by a few aggregators.
    Non-blocking writes are left out (Darshan's NB count does not tell MPI_File_iwrite_all apart), and so
    are files whose writes are collective already (those are not independent writes)."""
    files = f.independent_small
    writes = sum(m.count("MPIIO_INDEP_WRITES") for m in files)
    if writes < MIN_ACCESSES:
        return None
    # Each file's MPI-IO write time, in the share of its writes that were independent.
    io_ns = 0.0
    for m in files:
        io_ns += m.count("MPIIO_F_WRITE_TIME") * m.count("MPIIO_INDEP_WRITES") / m.writes
    gain = f.saving(io_ns / 1e9)
    if not gain.worth:
        return None
    ranks = sorted({rank for m in files for rank in m.kind_ranks["independent"]})
    mean = _mpi_mean(files)
    posix_writes = sum(m.posix_writes for m in files)
    posix_ranks = sorted({rank for m in files for rank in m.posix_writer_ranks})
    paths = [m.path for m in sorted(files, key=lambda m: (-m.count("MPIIO_INDEP_WRITES"), m.path))]
    h5 = {h.path: h for h in job.hdf5}
    parts = []
    in_h5 = [h5[p] for p in paths if p in h5]
    if any(any(_h5_collective(d) for d in h.datasets) for h in in_h5):
        parts.append(
            "the data of the HDF5 file(s) moves collectively already: these are HDF5's metadata writes, "
            "which H5Pset_coll_metadata_write(fapl, 1) (and H5Pset_all_coll_metadata_ops(fapl, 1) for the "
            "reads) makes collective"
        )
    elif in_h5:
        parts.append(
            "ask HDF5 for collective transfers: H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE) on the transfer "
            "list given to H5Dwrite"
        )
    if len(in_h5) < len(files):
        parts.append(
            "make the writes collective: MPI_File_write_at_all in place of MPI_File_write_at (every rank "
            "calls it, one with nothing to write passes a count of 0), or describe each rank's pieces with a "
            "file view (MPI_File_set_view with a vector or subarray type) and write them in one "
            "MPI_File_write_all; the library then merges the ranks' pieces into large contiguous writes by a "
            "few aggregator ranks (collective buffering)"
        )
    off = [m.path for m in files if m.hints.get("romio_cb_write") == "disable"]
    if off:
        parts.append(f"and let it aggregate: romio_cb_write is disable for {_example(off)}")
    return Advice(
        "independent_small_writes",
        "Independent small writes to a shared file",
        f"{writes} independent MPI-IO writes (MPI_File_write, _write_at) of at most 1 MiB (mean "
        f"{mean / KiB:.1f} KiB) by {len(ranks)} ranks to {len(files)} shared file(s), e.g. "
        f"{_example(paths)}: they became {posix_writes} POSIX writes by {len(posix_ranks)} rank(s). "
        + gain.sentence(),
        _join(parts),
        {
            "independent_writes": writes,
            "files": len(files),
            "ranks": len(ranks),
            "mean_write_bytes": mean,
            "posix_writes": posix_writes,
            "posix_writer_ranks": len(posix_ranks),
            "paths": paths[:MAX_EXAMPLES],
            **gain.evidence(),
        },
        {"min_accesses": MIN_ACCESSES, "small_access_bytes": MiB, **GATE},
    )


def _stripe(job: Job, path: str) -> int | None:
    """The stripe size of a file when the MPI-IO hints in effect say it (striping_unit), else None."""
    for m in job.mpiio:
        if m.path == path:
            value = m.hints.get("striping_unit", "")
            return int(value) if value.isdigit() and int(value) > 1 else None
    return None


def hdf5_alignment(job: Job, r: dict[str, Any], f: Facts) -> Advice | None:
    """HDF5 files on a parallel file system without alignment (H5Pset_alignment never called: HDF5 puts each
    dataset wherever the file ends), whose reads and writes beneath started mostly off the file system's
    block boundaries: such a transfer spans one more stripe than it must and shares a stripe, and its lock,
    with its neighbour's."""
    n = bad = 0
    io_ns = 0.0
    hit: list[Hdf5File] = []
    for h in f.hdf5_unaligned:
        row = f.t.row_of[h.path]
        calls = int(f.col("POSIX_READS")[row] + f.col("POSIX_WRITES")[row])
        off = int(f.col("POSIX_FILE_NOT_ALIGNED")[row])
        if not calls or off < MISALIGNED_SHARE * calls:
            continue
        timed = int(f.col("POSIX_F_READ_TIME")[row])
        if not f.sync_bound[row]:
            timed += int(f.col("POSIX_F_WRITE_TIME")[row])
        io_ns += timed * off / calls
        n, bad = n + calls, bad + off
        hit.append(h)
    if not hit:
        return None
    gain = f.saving(io_ns / 1e9)
    if not gain.worth:
        return None
    paths = [h.path for h in hit]
    datasets = sum(len(h.datasets) for h in hit)
    stripes = {s for s in (_stripe(job, p) for p in paths) if s}
    stripe = min(stripes) if len(stripes) == 1 else None
    fs = sorted(
        {f"{h.fs_type or '?'}{' under IOLENS_PARALLEL_FS' if h.declared_parallel else ''}" for h in hit}
    )
    interval = str(stripe) if stripe else "STRIPE"
    where = (
        f"the stripe size {stripe} bytes (the striping_unit hint)"
        if stripe
        else "STRIPE the file system's stripe size (lfs getstripe -S FILE on Lustre, the block size on GPFS)"
    )
    snippet = (
        f"H5Pset_alignment(fapl, 65536, {interval}) on the file access list before H5Fcreate, {where}: "
        "every object of 64 KiB or more then starts on a stripe boundary (h5py: "
        f"h5py.File(name, 'w', alignment_threshold=65536, alignment_interval={interval}))"
    )
    parts = [snippet, "make each rank's part of a dataset a multiple of the stripe size where the layout can"]
    return Advice(
        "hdf5_alignment",
        "HDF5 file without alignment on a parallel file system",
        f"{len(hit)} HDF5 file(s) ({datasets} dataset(s)) on a parallel file system ({', '.join(fs)}) "
        f"without alignment (H5Pset_alignment not called), e.g. {_example(paths)}: {bad} of the {n} reads "
        f"and writes beneath ({_pct(bad / n)}) started off the file system's block boundaries. "
        + gain.sentence(),
        _join(parts),
        {
            "files": len(hit),
            "datasets": datasets,
            "accesses": n,
            "file_not_aligned": bad,
            "misaligned_share": bad / n,
            "stripe_size": stripe,
            "fs_types": fs,
            "paths": paths[:MAX_EXAMPLES],
            **gain.evidence(),
        },
        {"misaligned_share": MISALIGNED_SHARE, **GATE},
    )


RULES: tuple[Callable[[Job, dict[str, Any], Facts], Advice | None], ...] = (
    small_transfers,
    metadata_bound,
    many_small_files,
    random_access,
    misaligned,
    fsync_heavy,
    shared_read_after_write,
    rank_imbalance,
    independent_small_writes,
    hdf5_alignment,
)


def advise(job: Job, report: dict[str, Any]) -> list[Advice]:
    """Every rule that fires on the job (report: the job's report dict without its advice)."""
    facts = Facts(job)
    out = []
    for rule in RULES:
        a = rule(job, report, facts)
        if a is not None:
            out.append(a)
    return out
