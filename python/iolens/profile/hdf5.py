"""The HDF5 layer of a job (docs/profile.md, "HDF5"): each file's H5F module records and each dataset's H5D
records merged over the job's processes, with the ranks that used them and the file system the file is on
(from the POSIX layer: the records share the file's path).

A dataset's records are named "FILE:DATASET" (Darshan's record name); the runtime records the dataset's
own name beside them, so the file is that name's prefix, never a guess at where a ':' splits the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from iolens.profile.layers import agg_access_sizes
from iolens.profile.merge import Accumulator, MergePlan
from iolens.profile.places import declared_parallel, parallel_dirs

if TYPE_CHECKING:
    from iolens.profile.job import Job

# File systems on which HDF5's default 1-byte alignment splits objects across stripes (the rule "HDF5 file
# without alignment on a parallel file system" reads `parallel_fs`).
PARALLEL_FS = frozenset({"lustre", "gpfs", "beegfs", "fuse.beegfs", "pvfs2", "orangefs", "panfs", "cephfs",
                         "ceph", "daos", "fuse.daos", "wekafs", "nfs", "nfs4"})  # fmt: skip
SELECTIONS = {
    "all": "H5D_ALL_SELECTS",
    "regular_hyperslab": "H5D_REGULAR_HYPERSLAB_SELECTS",
    "irregular_hyperslab": "H5D_IRREGULAR_HYPERSLAB_SELECTS",
    "points": "H5D_POINT_SELECTS",
}


@dataclass
class ModuleRows:
    """One module over a job: per record name, the merged counters, the ranks with records, and texts."""

    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    ranks: dict[str, tuple[int, ...]] = field(default_factory=dict)
    rank_values: dict[str, dict[int, dict[str, int]]] = field(default_factory=dict)
    texts: dict[str, dict[str, str]] = field(default_factory=dict)


def module_rows(job: Job, module: str) -> ModuleRows:
    """The records of `module` in every log of the job, merged per record name by the log's merge rules."""
    names: list[str] = []
    merges: list[str] = []
    for log in job.logs:
        mod = log.modules.get(module)
        if mod is not None:
            for n, m in zip(mod.section.names, mod.section.merges, strict=True):
                if n not in names:
                    names.append(n)
                    merges.append(m)
    out = ModuleRows()
    if not names:
        return out
    col = {n: i for i, n in enumerate(names)}
    row_of: dict[str, int] = {}
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for log in job.logs:
        mod = log.modules.get(module)
        if mod is None or not len(mod):
            continue
        vals = np.zeros((len(mod), len(names)), dtype=np.uint64)
        vals[:, [col[n] for n in mod.section.names]] = mod.values
        parts.append((np.array([row_of.setdefault(p, len(row_of)) for p in mod.paths], dtype=np.intp), vals))
        for k, p in enumerate(mod.paths):
            values = dict(zip(names, vals[k].tolist(), strict=True))
            for rank in job.record_ranks(log, p):
                out.rank_values.setdefault(p, {})[rank] = values
            for key, text in mod.texts[k].items():
                out.texts.setdefault(p, {}).setdefault(key, text)
    acc = Accumulator(MergePlan.build(names, merges)[0], len(row_of))
    for rows, vals in parts:
        acc.add(rows, vals)
    merged = acc.finish()
    for p, r in row_of.items():
        out.counters[p] = dict(zip(names, merged[r].tolist(), strict=True))
        out.ranks[p] = tuple(sorted(out.rank_values[p]))
    return out


@dataclass
class FileObject:
    """An object inside a file (an HDF5 dataset, a PnetCDF variable) over the whole job."""

    file: str
    name: str
    counters: dict[str, int]
    ranks: tuple[int, ...]
    writer_ranks: tuple[int, ...]
    reader_ranks: tuple[int, ...]

    def count(self, name: str) -> int:
        return self.counters.get(name, 0)

    def io_json(self, prefix: str) -> dict[str, Any]:
        """The JSON entries every such object has, from its module's counters (prefix: H5D, ...)."""
        c = self.count
        top = [[c(f"{prefix}_ACCESS{k}_ACCESS"), c(f"{prefix}_ACCESS{k}_COUNT")] for k in range(1, 5)]
        return {
            "access_sizes": agg_access_sizes(c, prefix),
            "common_access_sizes": [pair for pair in top if pair[1]],
            "rw_switches": c(f"{prefix}_RW_SWITCHES"),
            "read_time_s": c(f"{prefix}_F_READ_TIME") / 1e9,
            "write_time_s": c(f"{prefix}_F_WRITE_TIME") / 1e9,
            "meta_time_s": c(f"{prefix}_F_META_TIME") / 1e9,
            "max_read_time_s": c(f"{prefix}_F_MAX_READ_TIME") / 1e9,
            "max_write_time_s": c(f"{prefix}_F_MAX_WRITE_TIME") / 1e9,
            "errors": c(f"{prefix}_ERRORS"),
            "writer_ranks": list(self.writer_ranks),
            "reader_ranks": list(self.reader_ranks),
        }


Obj = TypeVar("Obj", bound=FileObject)


def objects_by_file(
    rows: ModuleRows, text: str, kind: type[Obj], writes: tuple[str, ...], reads: tuple[str, ...]
) -> dict[str, list[Obj]]:
    """A module's objects by file. Records are named "FILE:NAME" and the runtime records NAME as the text
    `text`, so the file is the key without it (never a guess at where a ':' splits them); `writes`, `reads`:
    the counters that make a rank a writer, a reader."""
    by_file: dict[str, list[Obj]] = {}
    for key, counters in rows.counters.items():
        name = rows.texts.get(key, {}).get(text, "")
        path = key[: -len(name) - 1] if name and key.endswith(":" + name) else key
        vals = rows.rank_values[key]
        by_file.setdefault(path, []).append(
            kind(
                file=path,
                name=name or key,
                counters=counters,
                ranks=rows.ranks[key],
                writer_ranks=_did(vals, *writes),
                reader_ranks=_did(vals, *reads),
            )
        )
    return by_file


@dataclass
class Hdf5Dataset(FileObject):
    """One dataset over the whole job."""

    @property
    def chunk_shape(self) -> list[int]:
        """The chunk's dimensions, first to last (Darshan's D1 is the last); [] when not chunked."""
        dims = [self.count(f"H5D_CHUNK_SIZE_D{k}") for k in range(1, 6)]
        n = min(self.count("H5D_DATASPACE_NDIMS"), 5) if self.count("H5D_CHUNKED") else 0
        return list(reversed(dims[:n]))

    @property
    def independent_writes(self) -> int:
        return self.count("H5D_WRITES") - self.count("H5D_COLL_WRITES")

    @property
    def independent_reads(self) -> int:
        return self.count("H5D_READS") - self.count("H5D_COLL_READS")

    def to_json(self, shared_file: bool) -> dict[str, Any]:
        """The dataset's entry in its file's `datasets` (docs/profile.md, "The JSON report")."""
        c = self.count
        return {
            "name": self.name,
            "ranks": list(self.ranks),
            "opens": c("H5D_OPENS"),
            "creates": c("H5D_CREATES"),
            "closes": c("H5D_CLOSES"),
            "flushes": c("H5D_FLUSHES"),
            "reads": c("H5D_READS"),
            "writes": c("H5D_WRITES"),
            "collective": {"reads": c("H5D_COLL_READS"), "writes": c("H5D_COLL_WRITES")},
            "independent": {"reads": self.independent_reads, "writes": self.independent_writes},
            "use_mpiio_collective": bool(c("H5D_USE_MPIIO_COLLECTIVE")),
            "bytes_read": c("H5D_BYTES_READ"),
            "bytes_written": c("H5D_BYTES_WRITTEN"),
            "selections": {k: c(v) for k, v in SELECTIONS.items()},
            "ndims": c("H5D_DATASPACE_NDIMS"),
            "npoints": c("H5D_DATASPACE_NPOINTS"),
            "datatype_size": c("H5D_DATATYPE_SIZE"),
            "chunked": bool(c("H5D_CHUNKED")),
            "chunk_shape": self.chunk_shape,
            "deprecated_api": bool(c("H5D_USE_DEPRECATED")),
            **self.io_json("H5D"),
            # For the rule "independent H5Dwrite to a shared file": writes not made collectively, to a
            # file more than one rank opened (0 otherwise).
            "independent_writes_multi_rank": self.independent_writes if shared_file else 0,
        }


@dataclass
class LayerFile:
    """A file of a layer with objects inside (HDF5, PnetCDF) over the whole job: its path, its merged file
    counters, the ranks with a record of it and its file system type (file_entries gives these four)."""

    path: str
    counters: dict[str, int]
    ranks: tuple[int, ...]
    fs_type: str | None

    def count(self, name: str) -> int:
        return self.counters.get(name, 0)


@dataclass
class Hdf5File(LayerFile):
    """One HDF5 file over the whole job, with its datasets."""

    datasets: list[Hdf5Dataset]
    declared_parallel: bool = False  # under a directory IOLENS_PARALLEL_FS declares parallel

    @property
    def shared(self) -> bool:
        """Used by more than one rank (their H5F or H5D records)."""
        dataset_ranks = {r for d in self.datasets for r in d.ranks}
        return len(set(self.ranks) | dataset_ranks) > 1

    @property
    def parallel_fs(self) -> bool:
        return self.declared_parallel or (self.fs_type is not None and self.fs_type in PARALLEL_FS)

    @property
    def unaligned(self) -> bool:
        """HDF5's default: no alignment of objects (H5Pset_alignment never called, or to 1 byte)."""
        return self.count("H5F_ALIGNMENT") <= 1

    def to_json(self) -> dict[str, Any]:
        """The file's entry of the JSON report's `layers.hdf5` (docs/profile.md, "The JSON report")."""
        c = self.count
        shared = self.shared
        return {
            "path": self.path,
            "ranks": list(self.ranks),
            "multi_rank": shared,
            "opens": c("H5F_OPENS"),
            "creates": c("H5F_CREATES"),
            "opens_rdwr": c("H5F_OPENS_RDWR"),
            "opens_swmr": c("H5F_OPENS_SWMR"),
            "flushes": c("H5F_FLUSHES"),
            "closes": c("H5F_CLOSES"),
            "errors": c("H5F_ERRORS"),
            "use_mpiio": bool(c("H5F_USE_MPIIO")),
            "alignment": c("H5F_ALIGNMENT"),
            "align_threshold": c("H5F_ALIGN_THRESHOLD"),
            "meta_time_s": c("H5F_F_META_TIME") / 1e9,
            "fs_type": self.fs_type,
            "parallel_fs": self.parallel_fs,
            # For the rule "HDF5 file without alignment on a parallel file system".
            "unaligned_on_parallel_fs": self.unaligned and self.parallel_fs,
            "datasets": [d.to_json(shared) for d in self.datasets],
        }


def _did(values: dict[int, dict[str, int]], *counters: str) -> tuple[int, ...]:
    return tuple(sorted(r for r, v in values.items() if any(v.get(c, 0) for c in counters)))


def hdf5_files(job: Job) -> list[Hdf5File]:
    """Every HDF5 file of the job (opened with H5Fopen/H5Fcreate, or holding a dataset used), by path."""
    files = module_rows(job, "H5F")
    dsets = module_rows(job, "H5D")
    by_file = objects_by_file(dsets, "dataset", Hdf5Dataset, ("H5D_WRITES",), ("H5D_READS",))
    declared = parallel_dirs()
    return [
        Hdf5File(*entry, declared_parallel=declared_parallel(entry[0], declared))
        for entry in file_entries(job, files, by_file)
    ]


def file_entries(
    job: Job, files: ModuleRows, by_file: dict[str, list[Obj]]
) -> list[tuple[str, dict[str, int], tuple[int, ...], str | None, list[Obj]]]:
    """Per file with a record of the file module or an object, by path: its path, merged counters, ranks,
    file system type (from the POSIX layer's record of the path) and its objects by name."""
    out = []
    for path in sorted(set(files.counters) | set(by_file)):
        row = job.files.row_of.get(path)
        mount = job.files.mount_of(row) if row is not None else None
        objects = sorted(by_file.get(path, []), key=lambda o: o.name)
        out.append(
            (
                path,
                files.counters.get(path, {}),
                files.ranks.get(path, ()),
                mount[1] if mount else None,
                objects,
            )
        )
    return out
