"""The MPI-IO layer of a job (docs/profile.md, "MPI-IO"): each file's MPIIO module records merged over the
job's processes, the ranks that used it and how, the hints in effect, and what the POSIX layer beneath did
to the same file (the records share the path: the runtime names both by the file's absolute path).

Collective buffering shows as the difference between the layers: N ranks made collective MPI-IO writes to
a file, and fewer of them (the aggregators) made the POSIX writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from iolens.profile.merge import Accumulator, MergePlan

if TYPE_CHECKING:
    from iolens.profile.job import Job

MODULE = "MPIIO"
# Operation kinds, as Darshan counts them: _shared calls are independent, _ordered ones collective; split
# collectives count at their _begin; non-blocking calls (the _all ones too) count as NB at their issue.
KINDS = ("INDEP", "COLL", "SPLIT", "NB")
KIND_LABELS = {
    "INDEP": "independent",
    "COLL": "collective",
    "SPLIT": "split collective",
    "NB": "non-blocking",
}
# Transfers this small are "small" for the rules (Darshan's buckets end at 1M inclusive).
SMALL_BUCKETS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M")
BUCKETS = (*SMALL_BUCKETS, "1M_4M", "4M_10M", "10M_100M", "100M_1G", "1G_PLUS")
BUCKET_LABELS = [b.replace("_PLUS", "+").replace("_", "-") for b in BUCKETS]  # "100K-1M", "1G+"


def agg_access_sizes(c: Callable[[str], int], module: str) -> dict[str, list[Any]]:
    """A module's access-size histogram (Darshan's MODULE_SIZE_{READ,WRITE}_AGG_* counters) for the JSON."""
    return {
        "buckets": list(BUCKET_LABELS),
        "read": [c(f"{module}_SIZE_READ_AGG_{b}") for b in BUCKETS],
        "write": [c(f"{module}_SIZE_WRITE_AGG_{b}") for b in BUCKETS],
    }


@dataclass
class MpiioFile:
    """One file's MPI-IO layer over the whole job."""

    path: str
    counters: dict[str, int]
    ranks: tuple[int, ...]
    # Ranks (by MPI-IO record) that made reads or writes of each kind, and those whose POSIX records of the
    # same path read or wrote it.
    kind_ranks: dict[str, tuple[int, ...]]
    mpiio_writer_ranks: tuple[int, ...]
    mpiio_reader_ranks: tuple[int, ...]
    posix_writer_ranks: tuple[int, ...]
    posix_reader_ranks: tuple[int, ...]
    posix_writes: int
    posix_reads: int
    hints: dict[str, str] = field(default_factory=dict)
    hints_differ: bool = False  # ranks saw different hints (the hints of the lowest rank are shown)

    def count(self, name: str) -> int:
        return self.counters.get(name, 0)

    @property
    def ops(self) -> dict[str, dict[str, int]]:
        """Reads and writes by kind: independent, collective, split collective, non-blocking."""
        return {
            KIND_LABELS[k]: {
                "reads": self.count(f"MPIIO_{k}_READS"),
                "writes": self.count(f"MPIIO_{k}_WRITES"),
            }
            for k in KINDS
        }

    @property
    def opens(self) -> int:
        return self.count("MPIIO_INDEP_OPENS") + self.count("MPIIO_COLL_OPENS")

    @property
    def shared(self) -> bool:
        """Opened by more than one rank (or on a communicator of more than one process)."""
        return len(self.ranks) > 1 or self.count("MPIIO_OPEN_COMM_SIZE") > 1

    @property
    def writes(self) -> int:
        """MPI-IO writes of every kind."""
        return sum(self.count(f"MPIIO_{k}_WRITES") for k in KINDS)

    @property
    def collective_writes(self) -> int:
        return self.count("MPIIO_COLL_WRITES") + self.count("MPIIO_SPLIT_WRITES")

    @property
    def collective_reads(self) -> int:
        return self.count("MPIIO_COLL_READS") + self.count("MPIIO_SPLIT_READS")

    @property
    def written_collectively(self) -> bool:
        """Some rank wrote the file with collective MPI-IO calls (so "use collective I/O" must not fire)."""
        return self.collective_writes > 0

    @property
    def small_writes(self) -> int:
        """MPI-IO writes of at most 1 MiB (Darshan's buckets, whatever their kind)."""
        return sum(self.count(f"MPIIO_SIZE_WRITE_AGG_{b}") for b in SMALL_BUCKETS)

    @property
    def independent_small_writes(self) -> int:
        """Independent writes (blocking or not) of a shared file when every write of it is small: the case
        a rule suggesting collective I/O is for. 0 when the file is not shared or has larger writes."""
        indep = self.count("MPIIO_INDEP_WRITES") + self.count("MPIIO_NB_WRITES")
        writes = indep + self.collective_writes
        if not self.shared or indep == 0 or self.small_writes < writes:
            return 0
        return indep

    @property
    def collective_buffering(self) -> dict[str, object] | None:
        """Evidence of collective buffering: more ranks wrote (read) collectively through MPI-IO than wrote
        (read) the file through POSIX. None when nothing shows it."""
        out: dict[str, object] = {}
        for what, coll, mpi_ranks, posix_ranks in (
            ("write", self.collective_writes, self.mpiio_writer_ranks, self.posix_writer_ranks),
            ("read", self.collective_reads, self.mpiio_reader_ranks, self.posix_reader_ranks),
        ):
            if coll and posix_ranks and len(posix_ranks) < len(mpi_ranks):
                out[what] = {"mpiio_ranks": len(mpi_ranks), "posix_ranks": len(posix_ranks),
                             "aggregators": list(posix_ranks)}  # fmt: skip
        return out or None

    def to_json(self) -> dict[str, Any]:
        """The file's entry of the JSON report's `layers.mpiio` (docs/profile.md, "The JSON report")."""
        c = self.count
        top = [[c(f"MPIIO_ACCESS{k}_ACCESS"), c(f"MPIIO_ACCESS{k}_COUNT")] for k in range(1, 5)]
        return {
            "path": self.path,
            "ranks": list(self.ranks),
            "multi_rank": self.shared,
            "opens": {"independent": c("MPIIO_INDEP_OPENS"), "collective": c("MPIIO_COLL_OPENS")},
            "open_comm_size": c("MPIIO_OPEN_COMM_SIZE"),
            "mode": c("MPIIO_MODE"),
            "ops": self.ops,
            "kind_ranks": {k: list(v) for k, v in self.kind_ranks.items()},
            "bytes_read": c("MPIIO_BYTES_READ"),
            "bytes_written": c("MPIIO_BYTES_WRITTEN"),
            "access_sizes": agg_access_sizes(c, "MPIIO"),
            "common_access_sizes": [pair for pair in top if pair[1]],
            "read_time_s": c("MPIIO_F_READ_TIME") / 1e9,
            "write_time_s": c("MPIIO_F_WRITE_TIME") / 1e9,
            "meta_time_s": c("MPIIO_F_META_TIME") / 1e9,
            "max_read_time_s": c("MPIIO_F_MAX_READ_TIME") / 1e9,
            "max_write_time_s": c("MPIIO_F_MAX_WRITE_TIME") / 1e9,
            "views": c("MPIIO_VIEWS"),
            "syncs": c("MPIIO_SYNCS"),
            "set_sizes": c("MPIIO_SET_SIZES"),
            "preallocates": c("MPIIO_PREALLOCATES"),
            "rw_switches": c("MPIIO_RW_SWITCHES"),
            "errors": c("MPIIO_ERRORS"),
            "hints_given": c("MPIIO_HINTS"),
            "hints": dict(self.hints),
            "hints_differ": self.hints_differ,
            "posix": {
                "reads": self.posix_reads,
                "writes": self.posix_writes,
                "reader_ranks": list(self.posix_reader_ranks),
                "writer_ranks": list(self.posix_writer_ranks),
            },
            "written_collectively": self.written_collectively,
            "independent_small_writes": self.independent_small_writes,
            "collective_buffering": self.collective_buffering,
        }


def _schema(job: Job) -> tuple[list[str], list[str]]:
    names: list[str] = []
    merges: dict[str, str] = {}
    for log in job.logs:
        mod = log.modules.get(MODULE)
        if mod is None:
            continue
        for n, m in zip(mod.section.names, mod.section.merges, strict=True):
            if n not in merges:
                merges[n] = m
                names.append(n)
    return names, [merges[n] for n in names]


def mpiio_files(job: Job) -> list[MpiioFile]:
    """Every file with MPI-IO records in the job, by path."""
    names, merges = _schema(job)
    if not names:
        return []
    index = {n: i for i, n in enumerate(names)}
    paths: dict[str, int] = {}
    blocks: list[tuple[np.ndarray, np.ndarray]] = []
    per_rank: dict[str, dict[int, np.ndarray]] = {}  # path -> rank -> that rank's values (for kinds)
    hints: dict[str, dict[int, dict[str, str]]] = {}
    for log in job.logs:
        mod = log.modules.get(MODULE)
        if mod is None or not len(mod):
            continue
        vals = np.zeros((len(mod), len(names)), dtype=np.uint64)
        for j, n in enumerate(mod.section.names):
            vals[:, index[n]] = mod.values[:, j]
        rows = np.array([paths.setdefault(p, len(paths)) for p in mod.paths], dtype=np.intp)
        blocks.append((rows, vals))
        for k, p in enumerate(mod.paths):
            mine = per_rank.setdefault(p, {})
            for rank in job.record_ranks(log, p):
                mine[rank] = mine[rank] + vals[k] if rank in mine else vals[k].copy()
                if "hints" in mod.texts[k]:
                    hints.setdefault(p, {})[rank] = _parse_hints(mod.texts[k]["hints"])
    plan = MergePlan.build(names, merges)[0]
    acc = Accumulator(plan, len(paths))
    for rows, vals in blocks:
        acc.add(rows, vals)
    merged = acc.finish()
    out = []
    for p, row in paths.items():
        ranks = per_rank[p]

        def did(*counters: str, _ranks: dict[int, np.ndarray] = ranks) -> tuple[int, ...]:
            cols = [index[c] for c in counters if c in index]
            return tuple(sorted(r for r, v in _ranks.items() if any(int(v[c]) for c in cols)))

        kind_ranks = {KIND_LABELS[k]: did(f"MPIIO_{k}_READS", f"MPIIO_{k}_WRITES") for k in KINDS}
        writers = did(*(f"MPIIO_{k}_WRITES" for k in KINDS))
        readers = did(*(f"MPIIO_{k}_READS" for k in KINDS))
        pw, pr, nw, nr = _posix_beneath(job, p)
        seen = hints.get(p, {})
        shown = seen[min(seen)] if seen else {}
        out.append(
            MpiioFile(
                path=p,
                counters=dict(zip(names, merged[row].tolist(), strict=True)),
                ranks=tuple(sorted(ranks)),
                kind_ranks=kind_ranks,
                mpiio_writer_ranks=writers,
                mpiio_reader_ranks=readers,
                posix_writer_ranks=pw,
                posix_reader_ranks=pr,
                posix_writes=nw,
                posix_reads=nr,
                hints=shown,
                hints_differ=any(h != shown for h in seen.values()),
            )
        )
    return sorted(out, key=lambda f: f.path)


def _parse_hints(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
    return out


def _posix_beneath(job: Job, path: str) -> tuple[tuple[int, ...], tuple[int, ...], int, int]:
    """Ranks whose POSIX records of path wrote it, read it, and the POSIX writes and reads (every process)."""
    writers: set[int] = set()
    readers: set[int] = set()
    writes = reads = 0
    for log in job.logs:
        row = log.table.row_of.get(path)
        if row is None:
            continue
        w = int(log.table.column("POSIX_WRITES")[row])
        r = int(log.table.column("POSIX_READS")[row])
        writes += w
        reads += r
        if w:
            writers.update(job.record_ranks(log, path))
        if r:
            readers.update(job.record_ranks(log, path))
    return tuple(sorted(writers)), tuple(sorted(readers)), writes, reads


def posix_files(job: Job, paths: Iterable[str]) -> list[dict[str, Any]]:
    """What the POSIX layer did to each of these paths (the files of the layers above it), merged over the
    job: the bottom of the report's layer stack (`layers.posix_files`, docs/profile.md, "The layer stack")."""
    t = job.files
    out = []
    for path in sorted(set(paths)):
        row = t.row_of.get(path)
        if row is None:
            continue

        def c(name: str, _row: int = row) -> int:
            return int(t.column(name)[_row]) if t.has(name) else 0

        writers, readers, _, _ = _posix_beneath(job, path)
        mount = t.mount_of(row)
        out.append(
            {
                "path": path,
                "fs_type": mount[1] if mount else None,
                "reads": c("POSIX_READS"),
                "writes": c("POSIX_WRITES"),
                "bytes_read": c("POSIX_BYTES_READ"),
                "bytes_written": c("POSIX_BYTES_WRITTEN"),
                "reader_ranks": list(readers),
                "writer_ranks": list(writers),
                "access_sizes": {
                    "buckets": list(BUCKET_LABELS),
                    "read": [c(f"POSIX_SIZE_READ_{b}") for b in BUCKETS],
                    "write": [c(f"POSIX_SIZE_WRITE_{b}") for b in BUCKETS],
                },
                "file_not_aligned": c("POSIX_FILE_NOT_ALIGNED"),
                "read_time_s": c("POSIX_F_READ_TIME") / 1e9,
                "write_time_s": c("POSIX_F_WRITE_TIME") / 1e9,
                "meta_time_s": c("POSIX_F_META_TIME") / 1e9,
            }
        )
    return out
