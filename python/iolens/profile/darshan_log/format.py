"""What a Darshan log holds, as the format's documentation (darshan-util's darshan-logutils.c and the
include/darshan-*-log-format.h headers of Darshan 3.4) describes it: the module numbers, and for each module
and record version the counters of a record in file order, under Darshan's names.

A record is `u64 id, i64 rank`, for H5D and PNETCDF_VAR (from H5D version 2) `u64 file_rec_id`, then
`i64 counters[]`, then `f64 fcounters[]`. A record of an older version is read in its own layout and put into
the current one by name: counters the older version did not have get the value the darshan library gives
them (-1, "not recorded"; 0 for POSIX_RENAMED_FROM and H5D's file_rec_id).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Module numbers of log format 3.41 (Darshan 3.4). Logs before 3.20 have no H5D (the numbers from H5D on are
# one lower) and logs before 3.41 no PNETCDF_VAR (the numbers from it on are one lower).
POSIX, MPIIO, H5F, H5D, PNETCDF_FILE, PNETCDF_VAR, BGQ, LUSTRE, STDIO, DXT_POSIX, DXT_MPIIO = range(1, 12)
MODULE_NAMES = (
    "NULL", "POSIX", "MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "BG/Q", "LUSTRE", "STDIO",
    "DXT_POSIX", "DXT_MPIIO", "MDHIM", "APXC", "APMPI", "HEATMAP", "DFS", "DAOS",
)  # fmt: skip

BUCKETS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M", "100M_1G",
           "1G_PLUS")  # fmt: skip
RANK_TAIL = ("FASTEST_RANK", "FASTEST_RANK_BYTES", "SLOWEST_RANK", "SLOWEST_RANK_BYTES")
F_RANK_TAIL = ("F_FASTEST_RANK_TIME", "F_SLOWEST_RANK_TIME", "F_VARIANCE_RANK_TIME", "F_VARIANCE_RANK_BYTES")
STAMPS = tuple(f"F_{k}_{e}_TIMESTAMP" for e in ("START", "END") for k in ("OPEN", "READ", "WRITE", "CLOSE"))
TIMES = ("F_READ_TIME", "F_WRITE_TIME", "F_META_TIME", "F_MAX_READ_TIME", "F_MAX_WRITE_TIME")


def _p(prefix: str, names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return tuple(f"{prefix}_{n}" for n in names)


def _sizes(kind: str) -> list[str]:
    """The access size histogram: SIZE_READ_0_100 ... SIZE_WRITE_1G_PLUS (kind "" or "AGG_")."""
    return [f"SIZE_{rw}_{kind}{b}" for rw in ("READ", "WRITE") for b in BUCKETS]


def _top4(*what: str) -> list[str]:
    """The four most common values (ACCESS1_ACCESS ... ACCESS4_ACCESS), then their four counts."""
    out = []
    for w in what:
        out += [f"{w}{k}_{w}" for k in range(1, 5)] + [f"{w}{k}_COUNT" for k in range(1, 5)]
    return out


def _shapes() -> list[str]:
    """The four most common hyperslab shapes of H5D and PNETCDF_VAR, then their counts."""
    out = []
    for k in range(1, 5):
        out += [f"ACCESS{k}_ACCESS"] + [
            f"ACCESS{k}_{w}_D{d}" for w in ("LENGTH", "STRIDE") for d in range(1, 6)
        ]
    return out + [f"ACCESS{k}_COUNT" for k in range(1, 5)]


def _verbs(*prefixes: str, flavours: str) -> list[str]:
    return [f"{p}_VAR{f}" for p in prefixes for f in ("", *flavours.split())]


@dataclass(frozen=True)
class Layout:
    """The counters of a module's record of one version, in file order."""

    counters: tuple[str, ...]
    fcounters: tuple[str, ...]
    file_rec_id: bool = False

    @property
    def size(self) -> int:
        return 16 + 8 * self.file_rec_id + 8 * (len(self.counters) + len(self.fcounters))


@dataclass(frozen=True)
class Module:
    """A module iolens reads: its current layout and the older versions it converts from."""

    number: int
    name: str
    current: int
    layouts: dict[int, Layout] = field(default_factory=dict)
    # Counters that an older version lacks get -1, except these (the library's defaults).
    zero_defaults: frozenset[str] = frozenset()

    @property
    def layout(self) -> Layout:
        return self.layouts[self.current]


def _without(names: tuple[str, ...], *gone: str) -> tuple[str, ...]:
    return tuple(n for n in names if n not in gone)


_POSIX_C = _p("POSIX", [
    "OPENS", "FILENOS", "DUPS", "READS", "WRITES", "SEEKS", "STATS", "MMAPS", "FSYNCS", "FDSYNCS",
    "RENAME_SOURCES", "RENAME_TARGETS", "RENAMED_FROM", "MODE", "BYTES_READ", "BYTES_WRITTEN",
    "MAX_BYTE_READ", "MAX_BYTE_WRITTEN", "CONSEC_READS", "CONSEC_WRITES", "SEQ_READS", "SEQ_WRITES",
    "RW_SWITCHES", "MEM_NOT_ALIGNED", "MEM_ALIGNMENT", "FILE_NOT_ALIGNED", "FILE_ALIGNMENT",
    "MAX_READ_TIME_SIZE", "MAX_WRITE_TIME_SIZE", *_sizes(""), *_top4("STRIDE", "ACCESS"), *RANK_TAIL,
])  # fmt: skip
_POSIX_F = _p("POSIX", [*STAMPS, *TIMES, *F_RANK_TAIL])
_POSIX_V3_C = _without(_POSIX_C, *_p("POSIX", ["FILENOS", "DUPS", "RENAME_SOURCES", "RENAME_TARGETS",
                                                "RENAMED_FROM"]))  # fmt: skip
_NO_CLOSE_START_OPEN_END = ("F_CLOSE_START_TIMESTAMP", "F_OPEN_END_TIMESTAMP")

_MPIIO_C = _p("MPIIO", [
    "INDEP_OPENS", "COLL_OPENS", "INDEP_READS", "INDEP_WRITES", "COLL_READS", "COLL_WRITES", "SPLIT_READS",
    "SPLIT_WRITES", "NB_READS", "NB_WRITES", "SYNCS", "HINTS", "VIEWS", "MODE", "BYTES_READ", "BYTES_WRITTEN",
    "RW_SWITCHES", "MAX_READ_TIME_SIZE", "MAX_WRITE_TIME_SIZE", *_sizes("AGG_"), *_top4("ACCESS"), *RANK_TAIL,
])  # fmt: skip
_MPIIO_F = _p("MPIIO", [*STAMPS, *TIMES, *F_RANK_TAIL])

_H5F_C = _p("H5F", ["OPENS", "FLUSHES", "USE_MPIIO"])
_H5F_F = _p("H5F", ["F_OPEN_START_TIMESTAMP", "F_CLOSE_START_TIMESTAMP", "F_OPEN_END_TIMESTAMP",
                    "F_CLOSE_END_TIMESTAMP", "F_META_TIME"])  # fmt: skip
_H5D_C = _p("H5D", [
    "OPENS", "READS", "WRITES", "FLUSHES", "BYTES_READ", "BYTES_WRITTEN", "RW_SWITCHES",
    "REGULAR_HYPERSLAB_SELECTS", "IRREGULAR_HYPERSLAB_SELECTS", "POINT_SELECTS", "MAX_READ_TIME_SIZE",
    "MAX_WRITE_TIME_SIZE", *_sizes("AGG_"), *_shapes(), "DATASPACE_NDIMS", "DATASPACE_NPOINTS",
    "DATATYPE_SIZE", *[f"CHUNK_SIZE_D{d}" for d in range(1, 6)], "USE_MPIIO_COLLECTIVE", "USE_DEPRECATED",
    *RANK_TAIL,
])  # fmt: skip
_H5D_F = _p("H5D", [*STAMPS, *TIMES, *F_RANK_TAIL])

_PNC_FILE_C = _p("PNETCDF_FILE", ["CREATES", "OPENS", "REDEFS", "INDEP_WAITS", "COLL_WAITS", "SYNCS",
                                  "BYTES_READ", "BYTES_WRITTEN", "WAIT_FAILURES"])  # fmt: skip
_PNC_FILE_F = _p("PNETCDF_FILE", ["F_OPEN_START_TIMESTAMP", "F_CLOSE_START_TIMESTAMP",
                                  "F_WAIT_START_TIMESTAMP",
                                  "F_OPEN_END_TIMESTAMP", "F_CLOSE_END_TIMESTAMP", "F_WAIT_END_TIMESTAMP",
                                  "F_META_TIME", "F_WAIT_TIME"])  # fmt: skip
_PNC_VAR_C = _p("PNETCDF_VAR", [
    "OPENS", "INDEP_READS", "INDEP_WRITES", "COLL_READS", "COLL_WRITES", "NB_READS", "NB_WRITES",
    "BYTES_READ", "BYTES_WRITTEN", "RW_SWITCHES", *_verbs("PUT", "GET", flavours="1 A S M N D"),
    *_verbs("IPUT", "IGET", "BPUT", flavours="1 A S M N"), "MAX_READ_TIME_SIZE", "MAX_WRITE_TIME_SIZE",
    *_sizes("AGG_"), *_shapes(), "NDIMS", "NPOINTS", "DATATYPE_SIZE", "IS_RECORD_VAR", *RANK_TAIL,
])  # fmt: skip
_PNC_VAR_F = _p("PNETCDF_VAR", [*STAMPS, *TIMES, *F_RANK_TAIL])

_STDIO_C = _p("STDIO", ["OPENS", "FDOPENS", "READS", "WRITES", "SEEKS", "FLUSHES", "BYTES_WRITTEN",
                        "BYTES_READ", "MAX_BYTE_READ", "MAX_BYTE_WRITTEN", *RANK_TAIL])  # fmt: skip
_STDIO_F = _p("STDIO", ["F_META_TIME", "F_WRITE_TIME", "F_READ_TIME", "F_OPEN_START_TIMESTAMP",
                        "F_CLOSE_START_TIMESTAMP", "F_WRITE_START_TIMESTAMP", "F_READ_START_TIMESTAMP",
                        "F_OPEN_END_TIMESTAMP", "F_CLOSE_END_TIMESTAMP", "F_WRITE_END_TIMESTAMP",
                        "F_READ_END_TIMESTAMP", *F_RANK_TAIL])  # fmt: skip

MODULES: dict[int, Module] = {
    m.number: m
    for m in (
        Module(POSIX, "POSIX", 4, {
            4: Layout(_POSIX_C, _POSIX_F),
            3: Layout(_POSIX_V3_C, _POSIX_F),
            2: Layout(_POSIX_V3_C, _without(_POSIX_F, *_p("POSIX", _NO_CLOSE_START_OPEN_END))),
        }, frozenset({"POSIX_RENAMED_FROM"})),
        Module(MPIIO, "MPI-IO", 3, {
            3: Layout(_MPIIO_C, _MPIIO_F),
            2: Layout(_MPIIO_C, _without(_MPIIO_F, *_p("MPIIO", _NO_CLOSE_START_OPEN_END))),
            1: Layout(_MPIIO_C, _without(_MPIIO_F, *_p("MPIIO", _NO_CLOSE_START_OPEN_END))),
        }),
        Module(H5F, "H5F", 3, {
            3: Layout(_H5F_C, _H5F_F),
            2: Layout(_H5F_C[:1], _H5F_F[:4]),
            1: Layout(_H5F_C[:1], (_H5F_F[0], _H5F_F[3])),
        }),
        Module(H5D, "H5D", 2, {
            2: Layout(_H5D_C, _H5D_F, file_rec_id=True),
            1: Layout(_H5D_C, _H5D_F),
        }),
        Module(PNETCDF_FILE, "PNETCDF_FILE", 3, {3: Layout(_PNC_FILE_C, _PNC_FILE_F)}),
        Module(PNETCDF_VAR, "PNETCDF_VAR", 1, {1: Layout(_PNC_VAR_C, _PNC_VAR_F, file_rec_id=True)}),
        Module(STDIO, "STDIO", 2, {
            2: Layout(_STDIO_C, _STDIO_F),
            1: Layout(_without(_STDIO_C, "STDIO_FDOPENS"), _STDIO_F),
        }),
    )
}  # fmt: skip

# DXT: a record is `u64 id, i64 rank, i64 shared_record, char hostname[64], i64 write_count, i64 read_count`,
# then write_count write segments and read_count read segments: `i64 offset, i64 length, f64 start, f64 end`
# (seconds since the job started), and from DXT_POSIX version 2 `u64 pthread_id`.
DXT_HEADER_SIZE = 104
DXT_SEGMENT_SIZE = {1: 32, 2: 40}
