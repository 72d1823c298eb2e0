"""Advice from a job's profile: each rule looks at figures of the report, fires only when its evidence is
there (the thresholds are below and in docs/profile.md), and says what it saw and what to try.

A rule returns None when it does not fire; an Advice carries the numbers that made it fire, the thresholds
they crossed, a one-line finding and a concrete suggestion.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from iolens.profile.job import Job, data_rows, extent, io_column

KiB = 1024
MiB = 1024 * KiB

# Thresholds (docs/profile.md, "Advice").
MIN_ACCESSES = 1000  # read+write calls before any access-pattern rule speaks
SMALL_ACCESS_BYTES = 100 * KiB  # an access is small when its histogram bucket ends at or below this
SMALL_ACCESS_SHARE = 0.5
META_SHARE = 0.3  # metadata time as a share of the cumulative I/O time
MIN_META_TIME_S = 1.0
MIN_FILES = 100  # regular files read or written, before the many-small-files rule speaks
SMALL_FILE_BYTES = 1 * MiB  # a file is small when the largest offset accessed is below this
SMALL_FILE_SHARE = 0.5
SEQ_SHARE = 0.5  # below this share of sequential accesses, access is random
MISALIGNED_SHARE = 0.5
MIN_SYNCS = 100
SYNCS_PER_WRITE = 0.1  # one fsync/fdatasync per 10 writes or more often
MIN_SHARED_FILES = 1
IMBALANCE_RATIO = 1.5  # slowest (or busiest) rank over the mean
MIN_IMBALANCE_TIME_S = 1.0
MIN_IMBALANCE_BYTES = 64 * MiB
MAX_EXAMPLES = 5


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


_UNITS = {"": 1, "K": KiB, "M": MiB, "G": 1024 * MiB, "T": 1024 * 1024 * MiB}


def bucket_upper(label: str) -> float:
    """Upper bound in bytes of a histogram bucket labelled like "10K-100K" or "1G+" (infinite)."""
    if label.endswith("+"):
        return float("inf")
    m = re.fullmatch(r"\d+[KMGT]?-(\d+)([KMGT]?)", label)
    if not m:
        return float("inf")
    return float(int(m[1]) * _UNITS[m[2]])


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def small_transfers(job: Job, r: dict[str, Any]) -> Advice | None:
    sizes = r["access_sizes"]
    total = sum(sizes["read"]) + sum(sizes["write"])
    small = sum(
        rd + wr
        for label, rd, wr in zip(sizes["buckets"], sizes["read"], sizes["write"], strict=True)
        if bucket_upper(label) <= SMALL_ACCESS_BYTES
    )
    if total < MIN_ACCESSES or small < SMALL_ACCESS_SHARE * total:
        return None
    s = r["summary"]
    calls = s["reads"] + s["writes"]
    mean = (s["bytes_read"] + s["bytes_written"]) / calls if calls else 0.0
    return Advice(
        "small_transfers",
        "Small transfers",
        f"{small} of {total} reads and writes ({_pct(small / total)}) moved at most 100 KiB each "
        f"(mean transfer {mean / KiB:.1f} KiB).",
        "Aggregate into transfers of 1 MiB or more: buffer in memory and write large blocks, use collective "
        "MPI-IO (MPI_File_write_all) or a library that aggregates (HDF5 with chunking, ADIOS2); with stdio, "
        "give the stream a large buffer (setvbuf).",
        {"accesses": total, "small_accesses": small, "small_share": small / total, "mean_access_bytes": mean},
        {
            "min_accesses": MIN_ACCESSES,
            "small_access_bytes": SMALL_ACCESS_BYTES,
            "small_share": SMALL_ACCESS_SHARE,
        },
    )


def metadata_bound(job: Job, r: dict[str, Any]) -> Advice | None:
    s = r["summary"]
    meta, io = s["meta_time_s"], s["io_time_s"]
    if io <= 0 or meta < MIN_META_TIME_S or meta < META_SHARE * io:
        return None
    ops = r["operations"]
    return Advice(
        "metadata_bound",
        "Metadata-bound",
        f"{meta:.2f} s of the {io:.2f} s spent in I/O calls ({_pct(meta / io)}) went to metadata "
        f"({s['metadata_ops']} operations: {ops.get('OPENS', 0)} opens, {ops.get('STATS', 0)} stats).",
        "Open each file once and keep it open, stat once and keep the result, avoid open/close around "
        "every small write, and let one rank list or stat a directory and share the result instead of every "
        "rank doing it.",
        {
            "meta_time_s": meta,
            "io_time_s": io,
            "meta_share": meta / io,
            "metadata_ops": s["metadata_ops"],
            "opens": ops.get("OPENS", 0),
            "stats": ops.get("STATS", 0),
        },
        {"meta_share": META_SHARE, "min_meta_time_s": MIN_META_TIME_S},
    )


def many_small_files(job: Job, r: dict[str, Any]) -> Advice | None:
    t = job.files
    data = data_rows(t) & ((io_column(t, "reads") > 0) | (io_column(t, "writes") > 0))
    n = int(np.count_nonzero(data))
    if n < MIN_FILES:
        return None
    size = extent(t)[data]
    small = int(np.count_nonzero(size < SMALL_FILE_BYTES))
    if small < SMALL_FILE_SHARE * n:
        return None
    median = float(np.median(size))
    return Advice(
        "many_small_files",
        "Many small files",
        f"{small} of the {n} files read or written ({_pct(small / n)}) are smaller than 1 MiB "
        f"(median {median / KiB:.1f} KiB).",
        "Pack small files into fewer large ones (an HDF5 or NetCDF container, ADIOS2, or an archive read in "
        "place), or keep many small temporary files on node-local storage (/tmp, /dev/shm) instead of the "
        "parallel file system.",
        {"files_with_data": n, "small_files": small, "small_share": small / n, "median_file_bytes": median},
        {"min_files": MIN_FILES, "small_file_bytes": SMALL_FILE_BYTES, "small_share": SMALL_FILE_SHARE},
    )


def random_access(job: Job, r: dict[str, Any]) -> Advice | None:
    """The first read (write) of each (thread, file) follows no other, so it can never be sequential: those
    are left out, and a job that reads or writes many files once each shows no random access."""
    p = r["access_patterns"]
    evidence: dict[str, Any] = {}
    said: list[str] = []
    for kind in ("read", "write"):
        n = p[f"{kind}s"] - p[f"first_{kind}s"]
        seq = p[f"seq_{kind}s"]
        if n >= MIN_ACCESSES and seq < SEQ_SHARE * n:
            evidence.update(
                {
                    f"{kind}s": p[f"{kind}s"],
                    f"first_{kind}s": p[f"first_{kind}s"],
                    f"seq_{kind}s": seq,
                    f"seq_{kind}_share": seq / n,
                }
            )
            said.append(
                f"{n - seq} of {n} {kind}s after the first of each file ({_pct((n - seq) / n)}) did not "
                f"start at or after the end of the previous {kind}"
            )
    if not evidence:
        return None
    return Advice(
        "random_access",
        "Random access",
        "; ".join(said) + ".",
        "Access files in offset order where the algorithm allows (sort or batch the requests), read larger "
        "contiguous blocks and pick the parts in memory, or use collective MPI-IO so the library reorders; "
        "if the access is random by nature, the file system's small-request rate is the limit: consider "
        "node-local or flash storage for that data.",
        evidence,
        {"min_accesses": MIN_ACCESSES, "seq_share": SEQ_SHARE},
    )


def misaligned(job: Job, r: dict[str, Any]) -> Advice | None:
    p = r["access_patterns"]
    n, bad = p["reads"] + p["writes"], p["file_not_aligned"]
    if n < MIN_ACCESSES or bad < MISALIGNED_SHARE * n:
        return None
    t = job.files
    rows = data_rows(t) & (t.column("POSIX_FILE_NOT_ALIGNED") > 0)
    fs = sorted({t.mount_list[m][1] for m in set(t.mount[rows].tolist()) if m >= 0})
    where = f" on {', '.join(fs)}" if fs else ""
    return Advice(
        "misaligned",
        "Misaligned access",
        f"{bad} of {n} reads and writes ({_pct(bad / n)}) started at an offset that is not a multiple of the "
        f"file system's block size{where}.",
        "Align offsets and transfer sizes to the file system's block size (the stripe size on Lustre or "
        "GPFS): pad headers and records to a multiple of it, set HDF5's alignment (H5Pset_alignment), or "
        "give MPI-IO the striping_unit hint.",
        {"accesses": n, "file_not_aligned": bad, "misaligned_share": bad / n, "fs_types": fs},
        {"min_accesses": MIN_ACCESSES, "misaligned_share": MISALIGNED_SHARE},
    )


def fsync_heavy(job: Job, r: dict[str, Any]) -> Advice | None:
    p = r["access_patterns"]
    syncs, writes = p["fsyncs"] + p["fdsyncs"], p["writes"]
    if syncs < MIN_SYNCS or syncs < SYNCS_PER_WRITE * writes:
        return None
    per = writes / syncs
    return Advice(
        "fsync_heavy",
        "Frequent syncs",
        f"{syncs} fsync/fdatasync calls for {writes} writes: one every {per:.1f} writes.",
        "Sync once when a file (a checkpoint, an output step) is complete, not after every write; if each "
        "step must be durable, write the whole step first and sync once per step.",
        {
            "syncs": syncs,
            "fsyncs": p["fsyncs"],
            "fdsyncs": p["fdsyncs"],
            "writes": writes,
            "writes_per_sync": per,
        },
        {"min_syncs": MIN_SYNCS, "syncs_per_write": SYNCS_PER_WRITE},
    )


def shared_read_after_write(job: Job, r: dict[str, Any]) -> Advice | None:
    t = job.files
    # Some process first read the file after another one first wrote it (a process is a log and the logs
    # that continue it after exec; a read that came before the other's write is no read of its data).
    rows = np.flatnonzero(data_rows(t) & job.read_after_write)
    if rows.size < MIN_SHARED_FILES:
        return None
    moved = io_column(t, "bytes_written")[rows] + io_column(t, "bytes_read")[rows]
    top = rows[np.argsort(-moved.astype(np.float64), kind="stable")[:MAX_EXAMPLES]]
    examples = [
        {
            "path": t.paths[i],
            "processes": int(job.procs[i]),
            "writers": int(job.writers[i]),
            "readers": int(job.readers[i]),
        }
        for i in top.tolist()
    ]
    first = examples[0]
    return Advice(
        "shared_read_after_write",
        "Read-after-write on shared files",
        f"{rows.size} file(s) written by one process and read by another after that, e.g. {first['path']} "
        f"({first['writers']} writer(s), {first['readers']} reader(s) among {first['processes']} processes).",
        "On a parallel file system a reader sees another process's data only after the writer's close or "
        "sync and a synchronisation between them (MPI_File_sync and a barrier), and byte-range locks can "
        "serialise them: pass such data in memory (MPI messages), or separate the write and read phases with "
        "a sync and a barrier.",
        {"files": int(rows.size), "examples": examples},
        {"min_files": MIN_SHARED_FILES},
    )


def rank_imbalance(job: Job, r: dict[str, Any]) -> Advice | None:
    imb = r["rank_imbalance"]
    if imb is None:
        return None
    said: list[str] = []
    evidence: dict[str, Any] = {"ranks": imb["ranks"]}
    t, b = imb["io_time_s"], imb["bytes"]
    if t["mean"] > 0 and t["max"] >= MIN_IMBALANCE_TIME_S and t["max"] >= IMBALANCE_RATIO * t["mean"]:
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
    return Advice(
        "rank_imbalance",
        "Imbalance across ranks",
        "; ".join(said) + ".",
        "Spread the I/O over the ranks (collective MPI-IO or parallel HDF5 instead of funnelling data "
        "through one rank); if the work is balanced, look for a slow node or storage target serving the "
        "slowest rank.",
        evidence,
        {
            "ratio": IMBALANCE_RATIO,
            "min_io_time_s": MIN_IMBALANCE_TIME_S,
            "min_bytes": MIN_IMBALANCE_BYTES,
        },
    )


RULES: tuple[Callable[[Job, dict[str, Any]], Advice | None], ...] = (
    small_transfers,
    metadata_bound,
    many_small_files,
    random_access,
    misaligned,
    fsync_heavy,
    shared_read_after_write,
    rank_imbalance,
)


def advise(job: Job, report: dict[str, Any]) -> list[Advice]:
    """Every rule that fires on the job (report: the job's report dict without its advice)."""
    out = []
    for rule in RULES:
        a = rule(job, report)
        if a is not None:
            out.append(a)
    return out
