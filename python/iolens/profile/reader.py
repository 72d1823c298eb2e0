"""Reader of the profiler's per-process log, exactly as docs/profile-log.md specifies it (format version 1,
minor versions up to 4):
the raw image (`.iolp`) and the compressed one (`.iolpz`).

Everything is read from the log itself: the counter names and how they merge come from its NAMES chunk,
never from a list in this file. Records are not turned into Python objects: a chunk's bytes become numpy
views, the (thread, file) records merge into one uint64 row per file (merge.py), and only what a caller
asks for (one file's counters, the trace) becomes dicts and dataclasses.

A log that stops early (a killed process, a copy cut short) is read up to where it stops and says so;
a file that is not a log, or whose sizes cannot be, is refused with ProfileLogError naming the file.
"""

from __future__ import annotations

import os
import struct
import zlib
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np

from iolens.profile.merge import Accumulator, MergePlan, merge_rows, sort_top

if TYPE_CHECKING:
    from iolens.profile.job import Job

MAGIC = b"IOLENSP1"
ZMAGIC = b"IOLPZ001"
VERSION = 1
# Additions this reader knows (header offset 104; 0 in logs older than the field): 1 = PATHS chunks,
# 2 = FILE_DATA chunks (a file's read/write counters in records of their own), 3 = flag 32 and
# records_dropped (records the log could not take), 4 = modules (MODULE_REC and MODULE_TEXT chunks: the
# counters of the layers above POSIX, MPI-IO first).
MINOR_VERSION = 4
HEADER_SIZE = 4096
CHUNK_HEADER_SIZE = 64
CHUNK_MAGIC = b"CHNK"
PROCESS_THREAD = 0xFFFFFFFF
LOG_SUFFIXES = (".iolp", ".iolpz")

# Header flags.
FLAG_CLEAN = 1
FLAG_SIGNAL = 2
FLAG_EXEC = 4
FLAG_TRACE = 8
FLAG_TRACE_TRUNCATED = 16
FLAG_RECORDS_CUT = 32

# What a log replaced by exec says (a job says it once, with a count: a shell script execs many times).
EXEC_MESSAGE = "the process called exec: this log ends there and its successor's log goes on"

# FILES record flags.
FILE_EXCLUDED = 1
FILE_NOT_REGULAR = 2
# Minor version 4: the name of an object inside a file ("FILE:DATASET", an HDF5 dataset), which only module
# records name: kept out of the file table.
FILE_OBJECT = 4
# Ours, never in a log: a file id with counters but no FILES record (its name was not recorded).
FILE_UNNAMED = 1 << 16

# Chunk kinds.
KIND_NAMES, KIND_FILES, KIND_MOUNTS, KIND_FILE_REC, KIND_PROC_REC, KIND_TRACE = 1, 2, 3, 4, 5, 6
KIND_PATHS, KIND_FILE_DATA = 7, 8
KIND_MODULE_REC, KIND_MODULE_TEXT = 9, 10
KIND_LABELS = {
    1: "NAMES", 2: "FILES", 3: "MOUNTS", 4: "FILE_REC", 5: "PROC_REC", 6: "TRACE", 7: "PATHS", 8: "FILE_DATA",
    9: "MODULE_REC", 10: "MODULE_TEXT",
}  # fmt: skip
# What a MODULE_TEXT record holds (its head's fourth word).
MODULE_TEXTS = {1: "hints", 2: "dataset", 3: "variable"}
# A trace record's file_id with this bit names a PATHS record (a path that is no file of the log).
PATH_ID_BIT = 0x80000000

# Limits that no real log reaches: beyond them the header is corrupt, and believing it would allocate
# absurd amounts of memory.
MAX_CHUNK_SIZE = 1 << 30
MAX_COUNTERS = 1 << 16
# Deflate never compresses better than about 1032:1.
MAX_ZLIB_RATIO = 1100

TRACE_OPS = (
    "open close read write pread pwrite readv writev preadv pwritev lseek fsync fdatasync stat fstat lstat "
    "statx fstatat access unlink mkdir rmdir rename opendir readdir closedir truncate ftruncate fallocate "
    "mmap munmap msync dup fopen fclose fread fwrite fseek fflush fgets fputs fprintf fscanf "
    "copy_file_range sendfile sync_file_range getdents fork exec ftell spawn chmod link mkstemp tmpfile "
    "rewind fsetpos fgetpos aio_read aio_write lio_listio aio_fsync aio_error aio_suspend aio_cancel "
    "aio_return"
).split()
OP_NAMES: dict[int, str] = {i + 1: name for i, name in enumerate(TRACE_OPS)}
# MPI-IO calls: ops from 100 up (docs/profile-log.md), named after the MPI function without its MPI_File_.
MPIIO_TRACE_OPS = (
    "open close read write read_at write_at read_all write_all read_at_all write_at_all read_shared "
    "write_shared read_ordered write_ordered read_all_begin write_all_begin read_at_all_begin "
    "write_at_all_begin read_ordered_begin write_ordered_begin read_all_end write_all_end read_at_all_end "
    "write_at_all_end read_ordered_end write_ordered_end iread iwrite iread_at iwrite_at iread_all "
    "iwrite_all iread_at_all iwrite_at_all iread_shared iwrite_shared set_view sync set_size preallocate "
    "delete set_info get_info"
).split()
OP_NAMES.update({100 + i: f"MPI_File_{name}" for i, name in enumerate(MPIIO_TRACE_OPS)})
# HDF5 calls: ops from 160 up.
H5_TRACE_OPS = (
    "H5Fcreate H5Fopen H5Fflush H5Fclose H5Dcreate H5Dopen H5Dread H5Dwrite H5Dflush H5Dclose"
).split()
OP_NAMES.update({160 + i: name for i, name in enumerate(H5_TRACE_OPS)})
# PnetCDF calls: ops from 180 up (a put or get of any form is one op: ncmpi_put, ncmpi_iget ...).
NC_TRACE_OPS = (
    "create open close enddef redef sync flush begin_indep_data end_indep_data wait wait_all def_var "
    "inq_varid put get iput iget bput"
).split()
OP_NAMES.update({180 + i: f"ncmpi_{name}" for i, name in enumerate(NC_TRACE_OPS)})

TRACE_DTYPE = np.dtype(
    [
        ("start_ns", "<u8"),
        ("dur_ns", "<u8"),
        ("offset", "<u8"),
        ("size", "<u8"),
        ("file_id", "<u4"),
        ("op", "<u2"),
        ("thread", "<u2"),
        ("result", "<i8"),
    ]
)
assert TRACE_DTYPE.itemsize == 48

_HEADER = struct.Struct("<8sIIIIQqqQQQiiqIIQ")
_CHUNK = struct.Struct("<4sIIIQ")
_VAR = struct.Struct("<IIII")
_U32 = struct.Struct("<I")


class ProfileLogError(Exception):
    """The file is not a profile log this reader can read; the message names the file and says why."""


# --- the model ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Header:
    """The log's header, as written (end_ns is the raw field: 0 when the process did not end cleanly;
    ProcessLog.end_ns is the end the reader settled on)."""

    version: int
    header_size: int
    flags: int
    chunk_size: int
    chunk_count: int
    pid: int
    ppid: int
    start_wall_ns: int
    start_mono_ns: int
    end_ns: int
    exit_status: int
    exit_signal: int
    rank: int
    n_file_counters: int
    n_proc_counters: int
    trace_dropped: int
    minor_version: int
    n_file_data_counters: int
    job_id: str
    hostname: str
    exe: str
    parent_log: str
    cmdline: list[str]
    records_dropped: int = 0


@dataclass(frozen=True)
class Section:
    """One section of the counter schema: names in the order of the records' values, and their merges."""

    names: tuple[str, ...] = ()
    merges: tuple[str, ...] = ()

    @cached_property
    def index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.names)}

    @cached_property
    def _built(self) -> tuple[MergePlan, list[str]]:
        return MergePlan.build(self.names, self.merges)

    @property
    def plan(self) -> MergePlan:
        return self._built[0]

    @property
    def plan_messages(self) -> list[str]:
        """What building the merge plan had to guess (unknown merges, unpaired slots)."""
        return self._built[1]


@dataclass(frozen=True)
class Schema:
    """The NAMES chunk. `file` is every per-file counter (what tables hold): the FILE_REC values
    (`file_rec`, the schema's `file` section) then the FILE_DATA values (`file_data`, minor version 2)."""

    file_rec: Section = field(default_factory=Section)
    file_data: Section = field(default_factory=Section)
    proc: Section = field(default_factory=Section)
    # Minor version 4: module id -> (module name, its section).
    modules: dict[int, tuple[str, Section]] = field(default_factory=dict)

    @cached_property
    def file(self) -> Section:
        if not self.file_data.names:
            return self.file_rec
        return Section(
            self.file_rec.names + self.file_data.names, self.file_rec.merges + self.file_data.merges
        )

    @property
    def file_names(self) -> list[str]:
        return list(self.file.names)

    @property
    def proc_names(self) -> list[str]:
        return list(self.proc.names)

    @property
    def file_merges(self) -> list[str]:
        return list(self.file.merges)

    @property
    def proc_merges(self) -> list[str]:
        return list(self.proc.merges)


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One traced call. start_ns is ns since the process started; result is the call's return value
    (-errno on failure)."""

    start_ns: int
    dur_ns: int
    offset: int
    size: int
    path: str | None
    op: str
    thread: int
    result: int
    file_id: int = 0


@dataclass
class FileTable:
    """One row of merged counters per path (columnar): what reports compute on.

    `mount` indexes `mount_list` ((mount directory, file system type)), -1 when unknown. `contributions`
    counts the records merged into each row (a process's threads; in a job, the processes). `first_reads`
    and `first_writes` count the (thread, file) records that read (wrote) the path: each one's first read
    (write) follows no other, so it can be neither sequential nor consecutive.

    The values of `names`, in order, are the columns of `blocks` side by side: a log's FILE_REC and FILE_DATA
    values stay two matrices (putting them together would hold both and their union at once: a third more
    memory for a 100k-file log); `values` is the one matrix, made when asked.
    """

    names: list[str]
    paths: list[str]
    flags: np.ndarray
    mount: np.ndarray
    mount_list: list[tuple[str, str]]
    blocks: list[np.ndarray]
    contributions: np.ndarray
    first_reads: np.ndarray
    first_writes: np.ndarray

    def __len__(self) -> int:
        return len(self.paths)

    @cached_property
    def row_of(self) -> dict[str, int]:
        return {p: i for i, p in enumerate(self.paths)}

    @cached_property
    def _col(self) -> dict[str, tuple[int, int]]:
        """name -> (block, column in it)."""
        at = [(b, i) for b, block in enumerate(self.blocks) for i in range(block.shape[1])]
        return dict(zip(self.names, at, strict=True))

    @cached_property
    def values(self) -> np.ndarray:
        """Every counter of every row in one matrix (the blocks put together: a copy when there are two)."""
        if len(self.blocks) == 1:
            return self.blocks[0]
        if not self.blocks:
            return np.zeros((len(self.paths), 0), dtype=np.uint64)
        return np.hstack(self.blocks)

    def has(self, name: str) -> bool:
        return name in self._col

    def column(self, name: str) -> np.ndarray:
        """The values of one counter for every row (zeros when the schema has no such counter)."""
        at = self._col.get(name)
        if at is None:
            return np.zeros(len(self.paths), dtype=np.uint64)
        return self.blocks[at[0]][:, at[1]]

    def columns(self, names: Sequence[str], rows: np.ndarray) -> np.ndarray:
        """The values of some counters (columns, in order) for some rows."""
        if not names:
            return np.zeros((rows.size, 0), dtype=np.uint64)
        return np.column_stack([self.column(n)[rows] for n in names])

    def counters(self, row: int) -> dict[str, int]:
        values = [v for block in self.blocks for v in block[row].tolist()]
        return dict(zip(self.names, values, strict=True))

    def mount_of(self, row: int) -> tuple[str, str] | None:
        m = int(self.mount[row])
        return self.mount_list[m] if m >= 0 else None


@dataclass
class ModuleTable:
    """One layer above POSIX (a module of the log: MPIIO, ...): its counters, one row per path, merged over
    the records of that path (threads; in a job, processes). `texts[row]` holds what the module recorded that
    is not a number (MPIIO: "hints", the `key=value` lines of the hints in effect at the last open)."""

    name: str
    module_id: int
    section: Section
    paths: list[str]
    values: np.ndarray
    contributions: np.ndarray
    texts: list[dict[str, str]]

    @property
    def names(self) -> tuple[str, ...]:
        return self.section.names

    @cached_property
    def row_of(self) -> dict[str, int]:
        return {p: i for i, p in enumerate(self.paths)}

    def __len__(self) -> int:
        return len(self.paths)

    def column(self, name: str) -> np.ndarray:
        """One counter for every row (zeros when the module has no such counter)."""
        col = self.section.index.get(name)
        if col is None:
            return np.zeros(len(self.paths), dtype=np.uint64)
        return self.values[:, col]

    def counters(self, row: int) -> dict[str, int]:
        return dict(zip(self.section.names, self.values[row].tolist(), strict=True))


class FileCounters(Mapping[str, dict[str, int]]):
    """path -> merged counters, built one file at a time when asked (a log may hold 100k files)."""

    def __init__(self, table: FileTable, rows: np.ndarray) -> None:
        self._table = table
        self._rows = rows

    @cached_property
    def _index(self) -> dict[str, int]:
        paths = self._table.paths
        return {paths[r]: int(r) for r in self._rows.tolist()}

    def __getitem__(self, path: str) -> dict[str, int]:
        return self._table.counters(self._index[path])

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, path: object) -> bool:
        return path in self._index


@dataclass
class ProcessLog:
    """One process's log, read."""

    path: Path
    header: Header
    schema: Schema
    table: FileTable
    proc_values: np.ndarray
    threads: int
    truncated: bool
    messages: list[str]
    end_ns: int
    trace_array: np.ndarray
    # PATHS records: path id -> the path a traced call named (not a file of the log).
    trace_paths: dict[int, str] = field(default_factory=dict)
    # Minor version 4: the layers above POSIX, by module name ("MPIIO"); empty in older logs.
    modules: dict[str, ModuleTable] = field(default_factory=dict)
    # A job log's member (joblog.py): the name of the per-process log the rank's image was taken from ("" for
    # a log read from its own file). It names the log in reports and links it to its children's parent_log.
    member: str = ""
    # file id -> row of `table`, for the trace (sorted ids, their rows).
    _ids: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=np.uint64))
    _id_rows: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=np.intp))

    @property
    def name(self) -> str:
        return self.member or self.path.name

    @property
    def stem(self) -> str:
        """The log's name without .iolp/.iolpz: how parent_log links are matched."""
        return log_stem(self.name)

    @property
    def clean(self) -> bool:
        return bool(self.header.flags & FLAG_CLEAN)

    @property
    def killed_by_signal(self) -> bool:
        return bool(self.header.flags & FLAG_SIGNAL)

    @property
    def exec_replaced(self) -> bool:
        return bool(self.header.flags & FLAG_EXEC)

    @property
    def trace_on(self) -> bool:
        return bool(self.header.flags & FLAG_TRACE)

    @property
    def records_cut(self) -> bool:
        """The log could not take every record (its file system was full): its counts are short."""
        return bool(self.header.flags & FLAG_RECORDS_CUT)

    @property
    def run_time_s(self) -> float:
        return self.end_ns / 1e9

    @property
    def end_wall_ns(self) -> int:
        return self.header.start_wall_ns + self.end_ns

    @cached_property
    def files(self) -> FileCounters:
        """path -> merged counters, for every file with a FILES record."""
        named = np.flatnonzero((self.table.flags & FILE_UNNAMED) == 0)
        return FileCounters(self.table, named)

    def file_flags(self, path: str) -> int:
        """The FILES flags of a path (1 excluded, 2 not a regular file); KeyError for an unknown path."""
        return int(self.table.flags[self.files._index[path]]) & ~FILE_UNNAMED

    def file_mount(self, path: str) -> tuple[str, str] | None:
        """(mount directory, file system type) of a path, None when the log names no mount for it."""
        return self.table.mount_of(self.files._index[path])

    @cached_property
    def proc(self) -> dict[str, int]:
        """The process's counters, merged over its threads."""
        return dict(zip(self.schema.proc.names, self.proc_values.tolist(), strict=True))

    def path_of_file_id(self, file_id: int) -> str | None:
        if file_id & PATH_ID_BIT:
            return self.trace_paths.get(file_id)
        i = int(np.searchsorted(self._ids, file_id))
        if i < self._ids.size and int(self._ids[i]) == file_id:
            row = int(self._id_rows[i])
            if not int(self.table.flags[row]) & FILE_UNNAMED:
                return self.table.paths[row]
        return None

    @cached_property
    def trace(self) -> list[TraceEvent]:
        """The traced calls in order of start (empty without IOLENS_TRACE=1)."""
        t = self.trace_array
        if t.size == 0:
            return []
        fids = t["file_id"].tolist()
        paths = {fid: self.path_of_file_id(fid) for fid in set(fids) if fid}  # files and PATHS ids
        return [
            TraceEvent(s, d, o, z, paths.get(f), OP_NAMES.get(op, f"op{op}"), th, r, f)
            for s, d, o, z, f, op, th, r in zip(
                t["start_ns"].tolist(), t["dur_ns"].tolist(), t["offset"].tolist(), t["size"].tolist(),
                fids, t["op"].tolist(), t["thread"].tolist(), t["result"].tolist(), strict=True,
            )
        ]  # fmt: skip


def log_stem(name: str) -> str:
    for suffix in LOG_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


# --- reading the bytes ------------------------------------------------------------------------------------


class _RawImage:
    """The raw image, read from the file: of each chunk only its header and used bytes (a chunk is mostly
    unused room)."""

    what = "file"

    def __init__(self, f: IO[bytes]) -> None:
        self._f = f
        f.seek(0)
        self.length = os.fstat(f.fileno()).st_size

    def read(self, n: int) -> bytes:
        return self._f.read(n)

    def chunk(self, k: int, size: int) -> bytes | None:
        """Chunk k's header and used bytes; None when the chunk is not whole inside the file."""
        start = HEADER_SIZE + k * size
        if start + size > self.length:
            return None
        self._f.seek(start)
        head = self._f.read(CHUNK_HEADER_SIZE)
        if len(head) < CHUNK_HEADER_SIZE:
            return None
        if head[:4] != CHUNK_MAGIC:
            return head
        used = min(_CHUNK.unpack_from(head)[4], size - CHUNK_HEADER_SIZE)
        return head + self._f.read(used)


# Compressed input is fed to zlib in pieces of this size, so no copy of the whole input is ever made.
_ZSTEP = 1 << 16


class _Inflater:
    """The raw image of a `.iolpz`, inflated a piece at a time (never the whole image in memory)."""

    what = "compressed image"

    def __init__(self, path: Path, f: IO[bytes], size: int | None = None) -> None:
        self.path = path
        self._f = f
        head = f.read(8)
        if len(head) < 8:
            raise ProfileLogError(
                f"{path}: compressed log too short ({8 + len(head)} bytes): no image length"
            )
        (self.length,) = struct.unpack("<Q", head)
        comp_size = max((os.fstat(f.fileno()).st_size if size is None else size) - 16, 0)
        if self.length < HEADER_SIZE:
            raise ProfileLogError(
                f"{path}: compressed log declares a {self.length}-byte image, less than its "
                f"{HEADER_SIZE}-byte header (corrupt log)"
            )
        if self.length > comp_size * MAX_ZLIB_RATIO + (1 << 16):
            raise ProfileLogError(
                f"{path}: compressed log declares a {self.length}-byte image, impossible from "
                f"{comp_size} bytes of zlib data (corrupt log)"
            )
        self._z = zlib.decompressobj()
        self._tail = b""
        self._input_done = False
        self.remaining = self.length
        self.stream_ended_early = False

    def _inflate(self, limit: int) -> bytes:
        """Up to `limit` bytes of output; b"" once the stream, or its input, has ended."""
        while not self._z.eof:
            data = self._tail
            if not data and not self._input_done:
                data = self._f.read(_ZSTEP)
                self._input_done = not data
            try:
                out = self._z.decompress(data, limit)
            except zlib.error as exc:
                raise ProfileLogError(f"{self.path}: corrupt compressed data ({exc})") from None
            self._tail = self._z.unconsumed_tail
            if out:
                return out
            if self._input_done and not self._tail:
                break
        return b""

    def read(self, n: int) -> bytes:
        want = min(n, self.remaining)
        parts: list[bytes] = []
        got = 0
        while got < want:
            out = self._inflate(want - got)
            if not out:
                self.stream_ended_early = True
                break
            parts.append(out)
            got += len(out)
        self.remaining -= got
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def chunk(self, k: int, size: int) -> bytes | None:
        """The next chunk (chunks are read in order); None when the image ends before its end."""
        data = self.read(size)
        return data if len(data) == size else None

    def finish(self) -> None:
        """Inflate what was not read: zlib checks the stream (its checksum is at the end) only when it gets
        there, and a stream that inflates to more than the declared image is corrupt, not truncated."""
        extra = 0
        while not self._z.eof:
            out = self._inflate(1 << 20)
            if not out:
                self.stream_ended_early = True
                break
            extra += len(out)
            if extra > self.remaining:
                raise ProfileLogError(
                    f"{self.path}: corrupt compressed data (it inflates to more than the {self.length} bytes "
                    "its header declares)"
                )


def _cstr(b: bytes) -> str:
    return b.split(b"\0", 1)[0].decode("utf-8", "replace")


def _cmdline(b: bytes) -> list[str]:
    # Each argument ends with a NUL; the field is zero-filled after the last one.
    end = len(b.rstrip(b"\0"))
    if end == 0:
        return []
    return [a.decode("utf-8", "replace") for a in b[:end].split(b"\0")]


def _header(path: Path, head: bytes) -> Header:
    (
        magic, version, header_size, flags, chunk_size, chunk_count, pid, ppid, start_wall_ns,
        start_mono_ns, end_ns, exit_status, exit_signal, rank, n_file, n_proc, trace_dropped,
    ) = _HEADER.unpack_from(head)  # fmt: skip
    if magic != MAGIC:
        raise ProfileLogError(f"{path}: not an iolens profile log (the image has magic {magic!r})")
    if version != VERSION:
        raise ProfileLogError(
            f"{path}: profile log format version {version}; this iolens reads version {VERSION}"
        )
    if header_size != HEADER_SIZE:
        raise ProfileLogError(
            f"{path}: header size {header_size}, version {VERSION} logs have {HEADER_SIZE} (corrupt log)"
        )
    if chunk_size < HEADER_SIZE or chunk_size % 4096 or chunk_size > MAX_CHUNK_SIZE:
        raise ProfileLogError(
            f"{path}: chunk size {chunk_size} is impossible (a multiple of 4096 up to 1 GiB) (corrupt log)"
        )
    minor, n_data, records_dropped = struct.unpack_from("<IIQ", head, 104)
    if n_file > MAX_COUNTERS or n_proc > MAX_COUNTERS or n_data > MAX_COUNTERS:
        raise ProfileLogError(
            f"{path}: {n_file} file, {n_data} file data and {n_proc} process counters: impossible sizes "
            "(corrupt log)"
        )
    return Header(
        version=version, header_size=header_size, flags=flags, chunk_size=chunk_size,
        chunk_count=chunk_count, pid=pid, ppid=ppid, start_wall_ns=start_wall_ns,
        start_mono_ns=start_mono_ns, end_ns=end_ns, exit_status=exit_status, exit_signal=exit_signal,
        rank=rank, n_file_counters=n_file, n_proc_counters=n_proc, trace_dropped=trace_dropped,
        minor_version=minor, n_file_data_counters=n_data, job_id=_cstr(head[128:192]),
        hostname=_cstr(head[192:256]), exe=_cstr(head[256:768]),
        parent_log=_cstr(head[768:1024]), cmdline=_cmdline(head[1024:3072]),
        records_dropped=records_dropped,
    )  # fmt: skip


# Runtimes before the STDIO layer (a schema without STDIO_BYTES_READ) counted a stdio call in the POSIX
# counters as well, and their STDIO_OPENS, STDIO_READS, ... counted the stdio calls among those: the same
# names with another meaning. Their values are read under this prefix, so that no figure counts them twice.
NESTED_STDIO = "NESTED_"


def _unnest_stdio(sections: dict[str, tuple[list[str], list[str]]]) -> None:
    if any("STDIO_BYTES_READ" in sections[s][0] for s in ("file", "file_data")):
        return
    for sec in ("file", "file_data"):
        names, merges = sections[sec]
        sections[sec] = ([NESTED_STDIO + n if n.startswith("STDIO_") else n for n in names], merges)


# The logs of one job share their schema: parsed (and its merge plans built) once.
_SCHEMAS: dict[str, Schema] = {}


def _schema(path: Path, text: str) -> Schema:
    cached = _SCHEMAS.get(text)
    if cached is not None:
        return cached
    schema = _parse_schema(path, text)
    if len(_SCHEMAS) < 64:
        _SCHEMAS[text] = schema
    return schema


def _parse_schema(path: Path, text: str) -> Schema:
    sections: dict[str, tuple[list[str], list[str]]] = {
        "file": ([], []),
        "file_data": ([], []),
        "proc": ([], []),
    }
    seen: set[tuple[str, str]] = set()
    declared: dict[str, int] = {}  # module name -> id ("module NAME ID" lines, minor version 4)
    others: dict[str, tuple[list[str], list[str]]] = {}  # sections this reader may not know
    for no, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words:
            continue
        if len(words) != 3:
            raise ProfileLogError(
                f"{path}: counter schema line {no} {line.strip()!r}: "
                "expected 'SECTION NAME MERGE' (corrupt log)"
            )
        sec, name, merge = words
        if sec == "module":
            if not merge.isdigit() or name in declared or name in sections:
                raise ProfileLogError(
                    f"{path}: counter schema line {no} {line.strip()!r}: bad module (corrupt log)"
                )
            declared[name] = int(merge)
            continue
        if (sec, name) in seen:
            raise ProfileLogError(f"{path}: counter schema names {sec} counter {name} twice (corrupt log)")
        seen.add((sec, name))
        # A section a later runtime added (not a module of this log): its records are of a kind this reader
        # skips.
        names, merges = sections[sec] if sec in sections else others.setdefault(sec, ([], []))
        names.append(name)
        merges.append(merge)

    _unnest_stdio(sections)

    def section(name: str) -> Section:
        return Section(tuple(sections[name][0]), tuple(sections[name][1]))

    both = set(sections["file"][0]) & set(sections["file_data"][0])
    if both:
        raise ProfileLogError(
            f"{path}: counter schema names {min(both)} in both the file and file_data sections (corrupt log)"
        )
    modules = {
        mid: (name, Section(tuple(others.get(name, ([], []))[0]), tuple(others.get(name, ([], []))[1])))
        for name, mid in declared.items()
    }
    if len(modules) != len(declared):
        raise ProfileLogError(f"{path}: counter schema declares two modules with one id (corrupt log)")
    return Schema(
        file_rec=section("file"), file_data=section("file_data"), proc=section("proc"), modules=modules
    )


def _padded(n: int) -> int:
    return (n + 7) & ~7


# The most memory reserved ahead for one kind of record (virtual memory: pages never written cost nothing).
RESERVE_BYTES = 1 << 30


class _Records:
    """Fixed-size records copied out of their chunks into one array, so that a chunk's bytes are freed as
    soon as it is read and no concatenation at the end doubles the memory.

    The array is reserved for as many records as the log's chunks could hold (up to RESERVE_BYTES): only
    the pages written become resident. It grows by doubling past that.
    """

    def __init__(self, dtype: np.dtype, width: int | None, reserve: int) -> None:
        self._dtype = dtype
        self._shape = () if width is None else (width,)
        self._reserve = max(reserve, 0)
        self._buf: np.ndarray | None = None
        self.n = 0

    def _alloc(self, n: int) -> np.ndarray:
        return np.empty((n, *self._shape), dtype=self._dtype)

    def extend(self, recs: np.ndarray) -> None:
        k = recs.shape[0]
        if self._buf is None:
            try:
                self._buf = self._alloc(max(self._reserve, k))
            except MemoryError:
                self._buf = self._alloc(k)
        if self.n + k > self._buf.shape[0]:
            grown = self._alloc(max(2 * self._buf.shape[0], self.n + k))
            grown[: self.n] = self._buf[: self.n]
            self._buf = grown
        self._buf[self.n : self.n + k] = recs
        self.n += k

    def array(self, extra: int = 0) -> np.ndarray:
        """The records, then `extra` zero records (in the reserved room when there is some). A reservation
        much larger than the records is given back (a job may hold thousands of logs)."""
        need = self.n + extra
        cap = 0 if self._buf is None else self._buf.shape[0]
        if self._buf is None or need > cap or cap > 2 * need + 1024:
            out = self._alloc(need)
            if self._buf is not None:
                out[: self.n] = self._buf[: self.n]
            self._buf = out
        self._buf[self.n : need] = 0
        return self._buf[:need]


class _Collected:
    """What the chunks held, before merging."""

    def __init__(self, header: Header, max_chunks: int) -> None:
        per_chunk = header.chunk_size - CHUNK_HEADER_SIZE
        file_width = header.n_file_counters + 1
        data_width = header.n_file_data_counters + 1
        self.names: list[bytes] = []
        # FILES records: ids, mount ids, flags, paths.
        self.file_ids = array("Q")
        self.file_mounts = array("Q")
        self.file_flags = array("Q")
        self.file_paths: list[str] = []
        self.mounts: dict[int, tuple[str, str]] = {}
        self.trace_paths: dict[int, str] = {}
        # FILE_REC records whole (the first word holds the file id), one row each.
        self.file_recs = _Records(
            np.dtype("<u8"),
            file_width,
            min(max_chunks * (per_chunk // (8 * file_width)), RESERVE_BYTES // (8 * file_width)),
        )
        # FILE_DATA records (minor version 2): the same, for the read/write counters.
        self.data_recs = _Records(
            np.dtype("<u8"),
            data_width,
            min(max_chunks * (per_chunk // (8 * data_width)), RESERVE_BYTES // (8 * data_width)),
        )
        self.proc_recs: list[np.ndarray] = []
        self.trace = _Records(TRACE_DTYPE, None, min(max_chunks * (per_chunk // 48), RESERVE_BYTES // 48))
        self.threads: set[int] = set()
        self.unknown_kinds: dict[int, int] = {}
        # Minor version 4: MODULE_REC records by module id (record size, the records' words), MODULE_TEXT
        # records in log order (file id, module id, what, text).
        self.module_recs: dict[int, list[tuple[int, np.ndarray]]] = {}
        self.module_texts: list[tuple[int, int, int, str]] = []
        # FILES records flagged FILE_OBJECT: id -> "FILE:DATASET" (module records only).
        self.object_paths: dict[int, str] = {}


def _variable_records(path: Path, k: int, kind: str, body: memoryview) -> Iterator[tuple[int, ...]]:
    """(a, b, c, d, offset of the bytes after the 16-byte head) of each variable-size record."""
    off, end = 0, len(body)
    while off < end:
        if end - off < 16:
            raise ProfileLogError(
                f"{path}: chunk {k} ({kind}): a record cut after {end - off} bytes (corrupt log)"
            )
        a, b, c, d = _VAR.unpack_from(body, off)
        yield a, b, c, d, off + 16
        length = _padded(b) + _padded(c) if kind == "MOUNTS" else _padded(c)  # FILES, PATHS: c
        if off + 16 + length > end:
            raise ProfileLogError(
                f"{path}: chunk {k} ({kind}): a record of {16 + length} bytes overruns the chunk's "
                f"{end} used bytes (corrupt log)"
            )
        off += 16 + length


def _files_chunk(path: Path, k: int, data: bytes, end: int, got: _Collected) -> None:
    """The FILES records of a chunk (a loop of its own: a log may name 100k files)."""
    unpack = _VAR.unpack_from
    ids, mounts, flags, paths = got.file_ids, got.file_mounts, got.file_flags, got.file_paths
    off = CHUNK_HEADER_SIZE
    while off < end:
        if end - off < 16:
            raise ProfileLogError(
                f"{path}: chunk {k} (FILES): a record cut after {end - off} bytes (corrupt log)"
            )
        fid, mid, plen, fl = unpack(data, off)
        at = off + 16
        off = at + ((plen + 7) & ~7)
        if off > end:
            raise ProfileLogError(
                f"{path}: chunk {k} (FILES): a record of {off - at + 16} bytes overruns the chunk's "
                f"{end - CHUNK_HEADER_SIZE} used bytes (corrupt log)"
            )
        raw = data[at : at + plen]
        if raw.endswith(b"\0"):
            raw = raw.split(b"\0", 1)[0]
        if fl & FILE_OBJECT:
            got.object_paths.setdefault(fid, raw.decode("utf-8", "replace"))
            continue
        ids.append(fid)
        mounts.append(mid)
        flags.append(fl)
        paths.append(raw.decode("utf-8", "replace"))


def _text(b: memoryview) -> str:
    return bytes(b).rstrip(b"\0").decode("utf-8", "replace")


def _collect_chunk(path: Path, header: Header, k: int, data: bytes, got: _Collected) -> None:
    _, kind, thread, rsize, used = _CHUNK.unpack_from(data)
    cs = header.chunk_size
    if used > cs - CHUNK_HEADER_SIZE:
        raise ProfileLogError(
            f"{path}: chunk {k} says {used} bytes used, more than a {cs}-byte chunk holds (corrupt log)"
        )
    label = KIND_LABELS.get(kind)
    if label is None:
        got.unknown_kinds[kind] = got.unknown_kinds.get(kind, 0) + 1
        return
    body = memoryview(data)[CHUNK_HEADER_SIZE : CHUNK_HEADER_SIZE + used]
    if thread != PROCESS_THREAD and kind in (KIND_FILE_REC, KIND_FILE_DATA, KIND_TRACE):
        got.threads.add(thread)
    if kind == KIND_NAMES:
        got.names.append(bytes(body))
    elif kind == KIND_FILES:
        _files_chunk(path, k, data, CHUNK_HEADER_SIZE + used, got)
    elif kind == KIND_MOUNTS:
        for mid, dlen, tlen, _, at in _variable_records(path, k, label, body):
            t0 = at + _padded(dlen)
            got.mounts.setdefault(mid, (_text(body[at : at + dlen]), _text(body[t0 : t0 + tlen])))
    elif kind == KIND_PATHS:
        for pid, _, plen, _, at in _variable_records(path, k, label, body):
            got.trace_paths.setdefault(pid, _text(body[at : at + plen]))
    elif kind == KIND_MODULE_TEXT:
        for fid, mid, tlen, what, at in _variable_records(path, k, label, body):
            got.module_texts.append((fid, mid, what, _text(body[at : at + tlen])))
    elif kind == KIND_MODULE_REC:
        # Checked against the module's section once the schema is known (_module_tables).
        (module,) = _U32.unpack_from(data, 24)
        if rsize < 8 or rsize % 8 or used % rsize:
            raise ProfileLogError(
                f"{path}: chunk {k} (MODULE_REC): record size {rsize} and {used} bytes used do not make "
                "whole records (corrupt log)"
            )
        if used:
            words = np.frombuffer(data, dtype="<u8", count=used // 8, offset=CHUNK_HEADER_SIZE)
            got.module_recs.setdefault(module, []).append((rsize, words.reshape(-1, rsize // 8).copy()))
        if thread != PROCESS_THREAD:
            got.threads.add(thread)
    else:
        n_values = {
            KIND_FILE_REC: header.n_file_counters,
            KIND_FILE_DATA: header.n_file_data_counters,
            KIND_PROC_REC: header.n_proc_counters,
        }.get(kind)
        expected = 48 if kind == KIND_TRACE else 8 + 8 * (n_values or 0)
        if rsize != expected:
            what = {KIND_FILE_REC: "file", KIND_FILE_DATA: "file data", KIND_PROC_REC: "process"}.get(
                kind, ""
            )
            why = f"for {n_values} {what} counters" if n_values is not None else "for trace records"
            raise ProfileLogError(
                f"{path}: chunk {k} ({label}): record size {rsize}, expected {expected} {why} (corrupt log)"
            )
        if used % rsize:
            raise ProfileLogError(
                f"{path}: chunk {k} ({label}): {used} bytes used is not a whole number of "
                f"{rsize}-byte records (corrupt log)"
            )
        count = used // rsize
        if count == 0:
            return
        if kind == KIND_TRACE:
            got.trace.extend(np.frombuffer(data, dtype=TRACE_DTYPE, count=count, offset=CHUNK_HEADER_SIZE))
            return
        words = np.frombuffer(data, dtype="<u8", count=count * (rsize // 8), offset=CHUNK_HEADER_SIZE)
        words = words.reshape(count, rsize // 8)
        if kind == KIND_FILE_REC:
            got.file_recs.extend(words)
        elif kind == KIND_FILE_DATA:
            got.data_recs.extend(words)
        else:
            got.proc_recs.append(words.copy())
            got.threads.update(int(w) & 0xFFFFFFFF for w in words[:, 0].tolist())
            got.threads.discard(PROCESS_THREAD)


def _read_image(path: Path, image: _RawImage | _Inflater) -> tuple[Header, _Collected, list[str]]:
    head = image.read(HEADER_SIZE)
    if len(head) < HEADER_SIZE:
        raise ProfileLogError(
            f"{path}: short header ({len(head)} of {HEADER_SIZE} bytes): not a complete iolens profile log"
        )
    header = _header(path, head)
    max_chunks = min(header.chunk_count, max(image.length - HEADER_SIZE, 0) // header.chunk_size)
    got = _Collected(header, max_chunks)
    notes: list[str] = []
    for k in range(header.chunk_count):
        data = image.chunk(k, header.chunk_size)
        if data is None:
            if isinstance(image, _Inflater) and image.stream_ended_early:
                where = "the compressed data ends early"
            else:
                where = f"it lies beyond the end of the {image.what}"
            notes.append(
                f"log truncated at chunk {k} of {header.chunk_count} ({where}): "
                "the records before it are kept"
            )
            break
        if data[:4] != CHUNK_MAGIC:
            notes.append(
                f"log truncated at chunk {k} of {header.chunk_count} (no chunk header: magic "
                f"{bytes(data[:4])!r}): the records before it are kept"
            )
            break
        _collect_chunk(path, header, k, data, got)
    if isinstance(image, _Inflater):
        image.finish()
        if image.stream_ended_early and not notes:
            notes.append("log truncated: the compressed data ends before its checksum")
    return header, got, notes


# --- merging what was collected ---------------------------------------------------------------------------


def _file_rows(got: _Collected) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows of the FILES records, one per path: (paths, flags, mount ids, sorted file ids, their rows)."""
    fids = np.frombuffer(got.file_ids, dtype=np.uint64) if len(got.file_ids) else np.zeros(0, np.uint64)
    fmounts = np.frombuffer(got.file_mounts, dtype=np.uint64) if len(got.file_mounts) else fids
    fflags = np.frombuffer(got.file_flags, dtype=np.uint64) if len(got.file_flags) else fids
    # The first record of an id counts; id 0 is "no file".
    _, first = np.unique(fids, return_index=True)
    keep = np.sort(first[fids[first] != 0])
    paths_all = got.file_paths
    if keep.size == fids.size:
        paths = paths_all
    else:
        paths = [paths_all[i] for i in keep.tolist()]
    fids, fmounts, fflags = fids[keep], fmounts[keep], fflags[keep]
    if len(set(paths)) == len(paths):
        rows = np.arange(len(paths), dtype=np.intp)
        flags = fflags.astype(np.uint32)
        mounts = fmounts.copy()
    else:
        # The same path under several ids (reopened after a rename, ...): one row, flags OR'ed.
        row_of: dict[str, int] = {}
        rows_l = [row_of.setdefault(p, len(row_of)) for p in paths]
        rows = np.array(rows_l, dtype=np.intp)
        flags = np.zeros(len(row_of), dtype=np.uint32)
        np.bitwise_or.at(flags, rows, fflags.astype(np.uint32))
        mounts = np.zeros(len(row_of), dtype=np.uint64)
        first_row = np.unique(rows, return_index=True)[1]
        mounts[rows[first_row]] = fmounts[first_row]
        paths = list(row_of)
    order = np.argsort(fids, kind="stable")
    return list(paths), flags, mounts, fids[order], rows[order]


def _lookup(ids: np.ndarray, id_rows: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Rows of `wanted` ids (all present in the sorted `ids`)."""
    return id_rows[np.searchsorted(ids, wanted)]


def _count_firsts(firsts: np.ndarray, section: Section, recs: np.ndarray, rows: np.ndarray) -> None:
    """Add to firsts[:, 0] (reads) and firsts[:, 1] (writes) the records of each row that read (wrote)."""
    for k, name in enumerate(("POSIX_READS", "POSIX_WRITES")):
        col = section.index.get(name)
        if col is not None and rows.size:
            did = recs[:, 1 + col] > 0
            firsts[:, k] += np.bincount(rows[did], minlength=firsts.shape[0]).astype(np.uint32)


def _data_block(schema: Schema, n_rows: int, rows: np.ndarray, data: np.ndarray) -> np.ndarray:
    """The FILE_DATA values of each row: the data records `data` merged into their `rows` (a path without one
    has zeros: it was never read or written)."""
    plan = schema.file_data.plan
    if rows.size == n_rows and np.array_equal(rows, np.arange(n_rows)):
        # A record per row, in the rows' order (files written or read in the order they were opened): the
        # records are the block, no copy.
        sort_top(data, plan)
        return data
    if np.unique(rows).size == rows.size:
        out = np.zeros((n_rows, data.shape[1]), dtype=np.uint64)
        out[rows] = data
        sort_top(out, plan)
        return out
    return merge_rows(plan, rows, data, n_rows)


def _build_table(schema: Schema, got: _Collected) -> tuple[FileTable, np.ndarray, np.ndarray]:
    """One row per path, and the sorted file ids with their rows.

    File ids with counters but no FILES record get a row of their own, named after the id. When no path
    has two FILE_REC records (one thread per file, the usual case), the records are the table as they are,
    no copy; FILE_DATA values (minor version 2) fill the columns after them.
    """
    paths, flags, mount_ids, ids, id_rows = _file_rows(got)
    n_records = got.file_recs.n
    recs = got.file_recs.array()
    rec_ids = recs[:, 0] & np.uint64(0xFFFFFFFF)
    data = got.data_recs.array() if schema.file_data.names else np.zeros((0, 1), dtype=np.uint64)
    data_ids = data[:, 0] & np.uint64(0xFFFFFFFF)
    all_ids = np.concatenate([rec_ids, data_ids]) if data_ids.size else rec_ids
    if all_ids.size:
        pos = np.minimum(np.searchsorted(ids, all_ids), max(ids.size - 1, 0))
        known = (ids[pos] == all_ids) if ids.size else np.zeros(all_ids.size, dtype=bool)
        if not known.all():
            unknown = np.unique(all_ids[~known])
            start = len(paths)
            paths += [f"(file id {f}: name not recorded)" if f else "(no file)" for f in unknown.tolist()]
            flags = np.concatenate([flags, np.full(unknown.size, FILE_UNNAMED, dtype=np.uint32)])
            mount_ids = np.concatenate([mount_ids, np.zeros(unknown.size, dtype=np.uint64)])
            ids = np.concatenate([ids, unknown])
            id_rows = np.concatenate([id_rows, np.arange(start, len(paths), dtype=np.intp)])
            order = np.argsort(ids, kind="stable")
            ids, id_rows = ids[order], id_rows[order]
    rec_rows = _lookup(ids, id_rows, rec_ids) if n_records else np.zeros(0, dtype=np.intp)

    plan = schema.file_rec.plan
    n_rows = len(paths)
    firsts = np.zeros((n_rows, 2), dtype=np.uint32)
    _count_firsts(firsts, schema.file_rec, recs, rec_rows)
    if np.unique(rec_rows).size == n_records:
        # Table order: the rows that have a record, in record order, then the others (zero counters).
        has = np.zeros(n_rows, dtype=bool)
        has[rec_rows] = True
        others = np.flatnonzero(~has)
        order = np.concatenate([rec_rows, others])
        values = got.file_recs.array(extra=others.size)[:, 1:]
        sort_top(values, plan)
        contributions = np.concatenate(
            [np.ones(n_records, dtype=np.uint32), np.zeros(others.size, dtype=np.uint32)]
        )
        new_row = np.empty(n_rows, dtype=np.intp)
        new_row[order] = np.arange(n_rows, dtype=np.intp)
        if not np.array_equal(order, np.arange(n_rows)):
            paths = [paths[i] for i in order.tolist()]
            flags, mount_ids, firsts = flags[order], mount_ids[order], firsts[order]
            id_rows = new_row[id_rows]
    else:
        acc = Accumulator(plan, n_rows)
        acc.add(rec_rows, recs[:, 1:])
        values, contributions = acc.finish(), acc.contributions
    del recs
    got.file_recs = _Records(np.dtype("<u8"), 1, 0)
    blocks = [values]
    del values
    if schema.file_data.names:
        data_rows = _lookup(ids, id_rows, data_ids)
        _count_firsts(firsts, schema.file_data, data, data_rows)
        blocks.append(_data_block(schema, n_rows, data_rows, data[:, 1:]))
    del data
    got.data_recs = _Records(np.dtype("<u8"), 1, 0)

    mount_list = list(got.mounts.values())
    mount_index = {mid: i for i, mid in enumerate(got.mounts)}
    if mount_index:
        known_ids = np.array(list(mount_index), dtype=np.uint64)
        srt = np.argsort(known_ids)
        known_ids = known_ids[srt]
        known_pos = np.array(list(mount_index.values()), dtype=np.intp)[srt]
        at = np.minimum(np.searchsorted(known_ids, mount_ids), known_ids.size - 1)
        mounts = np.where(known_ids[at] == mount_ids, known_pos[at], -1).astype(np.intp)
    else:
        mounts = np.full(n_rows, -1, dtype=np.intp)
    table = FileTable(
        names=list(schema.file.names),
        paths=paths,
        flags=flags,
        mount=mounts,
        mount_list=mount_list,
        blocks=blocks,
        contributions=contributions,
        first_reads=firsts[:, 0],
        first_writes=firsts[:, 1],
    )
    return table, ids, id_rows


def _largest_time(table: FileTable, trace: np.ndarray) -> int:
    """The latest time the log records (ns since the process start): the end of a log that did not end."""
    best = 0
    for name in table.names:
        if "TIMESTAMP" in name and len(table):
            # Timestamps are stored + 1 so that 0 means "never".
            best = max(best, int(table.column(name).max()) - 1)
    if trace.size:
        best = max(best, int((trace["start_ns"] + trace["dur_ns"]).max()))
    return max(best, 0)


def _module_tables(
    p: Path, schema: Schema, got: _Collected, table: FileTable, ids: np.ndarray, id_rows: np.ndarray
) -> tuple[dict[str, ModuleTable], list[str]]:
    """The module records merged into one row per path (a path is the FILES record of the record's id)."""
    out: dict[str, ModuleTable] = {}
    messages: list[str] = []

    def path_of(fid: int) -> str:
        if fid in got.object_paths:
            return got.object_paths[fid]
        i = int(np.searchsorted(ids, fid))
        if i < ids.size and int(ids[i]) == fid and not int(table.flags[int(id_rows[i])]) & FILE_UNNAMED:
            return table.paths[int(id_rows[i])]
        return f"(file id {fid}: name not recorded)"

    texts: dict[tuple[int, int], dict[str, str]] = {}
    for fid, mid, what, text in got.module_texts:  # in log order: the last one of a kind stays
        texts.setdefault((mid, fid), {})[MODULE_TEXTS.get(what, f"text{what}")] = text
    for mid, chunks in sorted(got.module_recs.items()):
        known = schema.modules.get(mid)
        if known is None:
            messages.append(f"records of unknown module {mid} skipped (written by a later runtime?)")
            continue
        name, section = known
        if not section.names:
            messages.append(f"records of module {name} skipped: the counter schema lists no counters for it")
            continue
        width = 8 + 8 * len(section.names)
        for rsize, _ in chunks:
            if rsize != width:
                raise ProfileLogError(
                    f"{p}: MODULE_REC of {name}: record size {rsize}, expected {width} for "
                    f"{len(section.names)} counters (corrupt log)"
                )
        recs = np.concatenate([w for _, w in chunks])
        fids = (recs[:, 0] & np.uint64(0xFFFFFFFF)).tolist()
        row_of: dict[str, int] = {}
        rows = np.array([row_of.setdefault(path_of(f), len(row_of)) for f in fids], dtype=np.intp)
        acc = Accumulator(section.plan, len(row_of))
        acc.add(rows, recs[:, 1:])
        paths = list(row_of)
        row_texts: list[dict[str, str]] = [{} for _ in paths]
        for f in set(fids):
            if (mid, f) in texts:
                row_texts[row_of[path_of(f)]].update(texts[(mid, f)])
        out[name] = ModuleTable(name, mid, section, paths, acc.finish(), acc.contributions, row_texts)
        messages.extend(section.plan_messages)
    return out, messages


def read_log(path: str | Path) -> ProcessLog:
    """Read one `.iolp` or `.iolpz` log (the format is told by its first bytes, not its name)."""
    p = Path(path)
    try:
        f = open(p, "rb")  # noqa: SIM115  (closed below, after the image is read)
    except FileNotFoundError:
        raise ProfileLogError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise ProfileLogError(f"{p}: is a directory, not a log (use read_job for a directory)") from None
    except OSError as exc:
        raise ProfileLogError(f"{p}: cannot read: {exc.strerror}") from None
    with f:
        try:
            magic = f.read(8)
            image: _RawImage | _Inflater
            if magic == ZMAGIC:
                image = _Inflater(p, f)
            elif magic == MAGIC:
                image = _RawImage(f)
            elif len(magic) < 8:
                what = "an empty file" if not magic else f"{len(magic)} bytes"
                raise ProfileLogError(f"{p}: {what}, not an iolens profile log")
            else:
                raise ProfileLogError(f"{p}: not an iolens profile log (magic {magic!r})")
            header, got, notes = _read_image(p, image)
        except OSError as exc:
            raise ProfileLogError(f"{p}: cannot read: {exc.strerror}") from None
    return _assemble(p, header, got, notes)


def read_compressed(p: Path, data: bytes, what: str, names: bytes = b"") -> tuple[ProcessLog, bytes]:
    """A compressed image held in memory (a job log's member: joblog.py); `what` names it in messages. An
    image without a NAMES chunk takes `names` (a job log's members share rank 0's). Returns the log and the
    NAMES it was read with."""
    import io

    where = Path(f"{p} ({what})")
    if data[:8] != ZMAGIC:
        raise ProfileLogError(f"{where}: not a compressed iolens profile log (magic {bytes(data[:8])!r})")
    f = io.BytesIO(data)
    f.seek(8)
    header, got, notes = _read_image(where, _Inflater(where, f, len(data)))
    if not b"".join(got.names).strip(b"\0") and names:
        got.names = [names]
    used = b"".join(got.names)
    return _assemble(p, header, got, notes), used


def _assemble(p: Path, header: Header, got: _Collected, notes: list[str]) -> ProcessLog:
    truncated = bool(notes)
    messages = list(notes)
    if got.names:
        schema = _schema(p, b"".join(got.names).rstrip(b"\0").decode("utf-8", "replace"))
        for sec, what, n in (
            (schema.file_rec, "file", header.n_file_counters),
            (schema.file_data, "file_data", header.n_file_data_counters),
            (schema.proc, "proc", header.n_proc_counters),
        ):
            if len(sec.names) != n:
                raise ProfileLogError(
                    f"{p}: the counter schema lists {len(sec.names)} {what} counters, "
                    f"the header says {n} (corrupt log)"
                )
    elif got.file_recs.n or got.data_recs.n or got.proc_recs:
        raise ProfileLogError(f"{p}: counter records but no counter schema (NAMES chunk) (corrupt log)")
    else:
        # A log cut before its first chunk: no counters at all (whatever widths the header gives them).
        schema = Schema()
        got.file_recs = _Records(np.dtype("<u8"), 1, 0)
        got.data_recs = _Records(np.dtype("<u8"), 1, 0)
    for sec in (schema.file_rec, schema.file_data, schema.proc):
        messages.extend(sec.plan_messages)

    table, ids, id_rows = _build_table(schema, got)
    modules, module_messages = _module_tables(p, schema, got, table, ids, id_rows)
    messages.extend(module_messages)
    acc = Accumulator(schema.proc.plan, 1)
    for words in got.proc_recs:
        acc.add(np.zeros(words.shape[0], dtype=np.intp), words[:, 1:])
    proc_values = acc.finish()[0]
    trace = got.trace.array()
    if trace.size:
        trace = trace[np.argsort(trace["start_ns"], kind="stable")]

    flags = header.flags
    end_ns = header.end_ns
    if end_ns == 0:
        end_ns = _largest_time(table, trace)
        for mod in modules.values():  # a layer's last timestamp may be the last thing the log saw
            stamps = [int(mod.column(n).max()) - 1 for n in mod.names if "TIMESTAMP" in n and len(mod)]
            end_ns = max([end_ns, *stamps])
    if not flags & FLAG_CLEAN:
        if flags & FLAG_SIGNAL:
            messages.append(f"the process was ended by signal {header.exit_signal}")
        elif flags & FLAG_EXEC:
            messages.append(EXEC_MESSAGE)
        else:
            messages.append(
                "the log did not end cleanly (the process was killed, crashed or is still running): "
                "its end is the last time recorded"
            )
    if flags & FLAG_TRACE_TRUNCATED:
        messages.append(
            f"the trace is incomplete: {header.trace_dropped} events were not recorded "
            "(the trace reached IOLENS_TRACE_MAX, or the log could not grow)"
        )
    if flags & FLAG_RECORDS_CUT:
        messages.append(
            f"the log is incomplete: {header.records_dropped} record(s) could not be written (the profile "
            "directory's file system was full, or the log file was removed): the counts of the files and "
            "threads they were for are missing or short"
        )
    col = schema.proc.index.get("MMAPS_UNTRACKED")
    untracked_maps = int(proc_values[col]) if col is not None and col < proc_values.size else 0
    if untracked_maps:
        messages.append(
            f"{untracked_maps} file mapping(s) were not remembered (the runtime's table of mappings was "
            "full): their munmap and msync calls are not counted"
        )
    unnamed = int(np.count_nonzero(table.flags & FILE_UNNAMED))
    if unnamed:
        messages.append(f"{unnamed} file id(s) have counters but no recorded name")
    for kind, n in sorted(got.unknown_kinds.items()):
        messages.append(f"{n} chunk(s) of unknown kind {kind} skipped (written by a later runtime?)")
    return ProcessLog(
        path=p,
        header=header,
        schema=schema,
        table=table,
        proc_values=proc_values,
        threads=len(got.threads),
        truncated=truncated,
        messages=messages,
        end_ns=end_ns,
        trace_array=trace,
        trace_paths=got.trace_paths,
        modules=modules,
        _ids=ids,
        _id_rows=id_rows,
    )


def read_job(path: str | Path) -> Job:
    """Every log of a directory (or one log file) of one job: see iolens.profile.job.load_job."""
    from iolens.profile.job import load_job

    return load_job(path)
