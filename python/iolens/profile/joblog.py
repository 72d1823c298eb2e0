"""Reader of the job log (`.iolj`): one file per MPI job, written by the ranks at MPI_Finalize
(docs/profile-log.md, "The job log"; docs/profile.md, "One log per job").

A job log holds each rank's log image (a member, compressed as a `.iolpz` holds it), read here into the
same ProcessLog a per-process log gives: reports and the store take a job log as they take a directory of
per-process logs. The files every rank had are in rank 0's member only, reduced over all ranks (FILES flag
FILE_REDUCED), with the per-rank spread in the SPREAD module (reduced_files() reads it).

A job log whose header, index or a member is damaged or cut short is refused with one ProfileLogError
naming the file, the rank and what is wrong: a job log is written whole or not kept by the runtime, so a
damaged one is a copy gone wrong, and the ranks' per-process logs may still be at hand.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from iolens.profile.reader import ProcessLog, ProfileLogError, read_compressed

if TYPE_CHECKING:
    from iolens.profile.job import Job

JOB_MAGIC = b"IOLJOB01"
JOB_VERSION = 1
JOB_SUFFIX = ".iolj"
HEADER_SIZE = 256
ENTRY_SIZE = 16
# FILES flag of a record reduced over all ranks (in rank 0's member).
FILE_REDUCED = 8
# Header flags of a member image, and of a per-process log kept after a job log took the rank's counts.
FLAG_FINALIZED = 64
FLAG_AFTER_JOBLOG = 128

_HEADER = struct.Struct("<8sIIQQQQII64s")
# A member's name may not be longer than a per-process log's (256 bytes in a log header's parent_log).
MAX_NAME = 4096


@dataclass(frozen=True)
class JobLogHeader:
    version: int
    nranks: int
    reduced_files: int
    created_wall_ns: int
    job_id: str


@dataclass
class JobLog:
    path: Path
    header: JobLogHeader
    logs: list[ProcessLog]  # one per rank, in rank order


def is_job_log(path: str | Path) -> bool:
    p = Path(path)
    if p.suffix == JOB_SUFFIX:
        return True
    try:
        with open(p, "rb") as f:
            return f.read(8) == JOB_MAGIC
    except OSError:
        return False


def read_job_log(path: str | Path) -> JobLog:
    """Every rank's log of a job log; ProfileLogError (one line, naming the file) when it is damaged."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise ProfileLogError(f"{p}: no such file") from None
    except OSError as exc:
        raise ProfileLogError(f"{p}: cannot read: {exc.strerror}") from None
    if len(data) < HEADER_SIZE:
        raise ProfileLogError(
            f"{p}: {len(data)} bytes, shorter than a job log's {HEADER_SIZE}-byte header (truncated job log)"
        )
    magic, version, header_size, nranks, index_at, reduced, created, _flags, _, job_id = _HEADER.unpack_from(
        data
    )
    if magic != JOB_MAGIC:
        raise ProfileLogError(f"{p}: not an iolens job log (magic {magic!r})")
    if version != JOB_VERSION:
        raise ProfileLogError(
            f"{p}: job log format version {version}; this iolens reads version {JOB_VERSION}"
        )
    if header_size != HEADER_SIZE or nranks < 1 or index_at < HEADER_SIZE:
        raise ProfileLogError(
            f"{p}: header size {header_size}, {nranks} ranks, index at {index_at}: impossible "
            "(corrupt job log)"
        )
    index_end = index_at + nranks * ENTRY_SIZE
    if index_end > len(data):
        raise ProfileLogError(
            f"{p}: the index of {nranks} ranks ends at byte {index_end}, the file has {len(data)} "
            "(truncated job log)"
        )
    name = job_id.split(b"\0", 1)[0].decode("utf-8", "replace")
    header = JobLogHeader(version, nranks, reduced, created, name)
    logs: list[ProcessLog] = []
    names = b""  # rank 0's counter schema, which the other members leave out
    for rank in range(nranks):
        off, length = struct.unpack_from("<QQ", data, index_at + rank * ENTRY_SIZE)
        if off < index_end or off + length > len(data) or length < 24:
            raise ProfileLogError(
                f"{p}: rank {rank}'s log is at bytes {off}..{off + length}, the file has {len(data)} "
                "(truncated or corrupt job log)"
            )
        log, names = _member(p, rank, data[off : off + length], header.job_id, names)
        logs.append(log)
    return JobLog(p, header, logs)


def _member(p: Path, rank: int, blob: bytes, job_id: str, names: bytes) -> tuple[ProcessLog, bytes]:
    (name_len,) = struct.unpack_from("<I", blob)
    start = 8 + ((name_len + 7) & ~7)
    if name_len > MAX_NAME or start + 16 > len(blob):
        raise ProfileLogError(f"{p}: rank {rank}'s log: a name of {name_len} bytes (corrupt job log)")
    name = blob[8 : 8 + name_len].decode("utf-8", "replace")
    log, names = read_compressed(p, blob[start:], f"rank {rank}", names)
    if log.truncated:
        raise ProfileLogError(f"{p}: rank {rank}'s log: {log.messages[0]} (corrupt job log)")
    # The ranks' logs are one job: the job log's id (a rank started outside a batch job names its own).
    log.header = dataclasses.replace(log.header, job_id=job_id)
    log.member = name
    return log, names


@dataclass(frozen=True)
class RankSpread:
    """One layer's per-rank spread of a reduced file (Darshan's *_FASTEST_RANK ... *_F_VARIANCE_RANK_*)."""

    ranks: int  # ranks that had a record of this layer
    fastest_rank: int
    fastest_rank_bytes: int
    fastest_rank_time_s: float
    slowest_rank: int
    slowest_rank_bytes: int
    slowest_rank_time_s: float
    variance_rank_time_s2: float
    variance_rank_bytes: float

    def to_json(self) -> dict[str, int | float]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class ReducedFile:
    path: str
    ranks: int  # the ranks it was reduced over: all the job's
    posix: RankSpread | None
    mpiio: RankSpread | None
    # iolens's own: the ranks that wrote it, read it, did both; whether a rank's first read came after
    # another rank's first write (data handed between ranks through the file)
    writer_ranks: int = 0
    reader_ranks: int = 0
    read_write_ranks: int = 0
    read_after_other_write: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "ranks": self.ranks,
            "writer_ranks": self.writer_ranks,
            "reader_ranks": self.reader_ranks,
            "read_write_ranks": self.read_write_ranks,
            "read_after_other_write": self.read_after_other_write,
            "posix": self.posix.to_json() if self.posix else None,
            "mpiio": self.mpiio.to_json() if self.mpiio else None,
        }


def _f64(v: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", v))[0])


def _spread(c: dict[str, int], layer: str) -> RankSpread | None:
    n = c.get(f"{layer}_RANKS", 0)
    if not n:
        return None
    return RankSpread(
        ranks=n,
        fastest_rank=c[f"{layer}_FASTEST_RANK"],
        fastest_rank_bytes=c[f"{layer}_FASTEST_RANK_BYTES"],
        fastest_rank_time_s=c[f"{layer}_F_FASTEST_RANK_TIME"] / 1e9,
        slowest_rank=c[f"{layer}_SLOWEST_RANK"],
        slowest_rank_bytes=c[f"{layer}_SLOWEST_RANK_BYTES"],
        slowest_rank_time_s=c[f"{layer}_F_SLOWEST_RANK_TIME"] / 1e9,
        variance_rank_time_s2=_f64(c[f"{layer}_F_VARIANCE_RANK_TIME"]),
        variance_rank_bytes=_f64(c[f"{layer}_F_VARIANCE_RANK_BYTES"]),
    )


def reduced_files(logs: Sequence[ProcessLog]) -> list[ReducedFile]:
    """The files of a job reduced over all ranks, with their spread, by path."""
    out: dict[str, ReducedFile] = {}
    for log in logs:
        table = log.modules.get("SPREAD")
        if table is None:
            continue
        for row, path in enumerate(table.paths):
            c = table.counters(row)
            if c.get("REDUCED_RANKS", 0):
                out[path] = ReducedFile(
                    path, c["REDUCED_RANKS"], _spread(c, "POSIX"), _spread(c, "MPIIO"),
                    c.get("WRITER_RANKS", 0), c.get("READER_RANKS", 0), c.get("READ_WRITE_RANKS", 0),
                    bool(c.get("READ_AFTER_OTHER_WRITE", 0)),
                )  # fmt: skip
    return [out[p] for p in sorted(out)]


def job_reduced_files(job: Job) -> list[ReducedFile]:
    return reduced_files(job.logs)
