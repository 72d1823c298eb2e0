"""A test-only writer of profile logs, written from docs/profile-log.md (format version 1) and nothing else:
the header at its documented offsets, 64-byte chunk headers, one kind of record per chunk, records aligned
to 8 bytes, the NAMES schema as text, `.iolpz` as magic + raw length + one zlib stream.

LogSpec describes a process's log in the terms of the document; build_image() lays it out, write_log()
writes it raw or compressed, and the break_* helpers make the damaged logs a reader must cope with.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HEADER_SIZE = 4096
CHUNK_HEADER = 64
PROCESS = 0xFFFFFFFF
NAMES, FILES, MOUNTS, FILE_REC, PROC_REC, TRACE, PATHS, FILE_DATA = 1, 2, 3, 4, 5, 6, 7, 8
PATH_ID = 0x80000000

CLEAN, SIGNAL, EXEC, TRACE_ON, TRACE_TRUNCATED = 1, 2, 4, 8, 16
EXCLUDED, NOT_REGULAR = 1, 2

_BUCKETS = (
    "0_100",
    "100_1K",
    "1K_10K",
    "10K_100K",
    "100K_1M",
    "1M_4M",
    "4M_10M",
    "10M_100M",
    "100M_1G",
    "1G_PLUS",
)

# The per-file counters of minor versions 0 and 1, in the order of the document's tables: all of them in
# FILE_REC records (LogSpec's default layout).
FILE_COUNTERS: list[tuple[str, str]] = [
    *[(f"POSIX_{n}", "sum") for n in ("OPENS", "FILENOS", "DUPS", "READS", "WRITES")],
    *[(f"POSIX_{n}", "sum") for n in ("SEEKS", "STATS", "FSYNCS", "FDSYNCS", "MMAPS")],
    *[(f"POSIX_{n}", "sum") for n in ("RENAME_SOURCES", "RENAME_TARGETS", "UNLINKS", "TRUNCATES")],
    ("POSIX_BYTES_READ", "sum"),
    ("POSIX_BYTES_WRITTEN", "sum"),
    ("POSIX_MAX_BYTE_READ", "max"),
    ("POSIX_MAX_BYTE_WRITTEN", "max"),
    *[(f"POSIX_{n}", "sum") for n in ("CONSEC_READS", "CONSEC_WRITES", "SEQ_READS", "SEQ_WRITES")],
    ("POSIX_RW_SWITCHES", "sum"),
    ("POSIX_MEM_NOT_ALIGNED", "sum"),
    ("POSIX_FILE_NOT_ALIGNED", "sum"),
    *[(f"POSIX_SIZE_READ_{b}", "sum") for b in _BUCKETS],
    *[(f"POSIX_SIZE_WRITE_{b}", "sum") for b in _BUCKETS],
    *[(f"POSIX_ACCESS{i}_ACCESS", "topv") for i in range(1, 5)],
    *[(f"POSIX_ACCESS{i}_COUNT", "topc") for i in range(1, 5)],
    *[(f"POSIX_STRIDE{i}_STRIDE", "topv") for i in range(1, 5)],
    *[(f"POSIX_STRIDE{i}_COUNT", "topc") for i in range(1, 5)],
    *[(f"POSIX_F_{k}_START_TIMESTAMP", "min") for k in ("OPEN", "READ", "WRITE", "CLOSE")],
    *[(f"POSIX_F_{k}_END_TIMESTAMP", "max") for k in ("OPEN", "READ", "WRITE", "CLOSE")],
    ("POSIX_F_READ_TIME", "sum"),
    ("POSIX_F_WRITE_TIME", "sum"),
    ("POSIX_F_META_TIME", "sum"),
    ("POSIX_F_MAX_READ_TIME", "max"),
    ("POSIX_F_MAX_WRITE_TIME", "max"),
    *[(f"POSIX_{n}_OPENS", "sum") for n in ("O_DIRECT", "O_SYNC", "O_APPEND")],
    *[(f"STDIO_{n}", "sum") for n in ("OPENS", "READS", "WRITES", "SEEKS", "FLUSHES")],
    ("ERRORS", "sum"),
]

# Minor version 2: the FILE_DATA counters (reads and writes) in records of their own; the rest stay in
# FILE_REC. SPLIT is the LogSpec arguments of that layout (what the runtime writes now).
_REC_NAMES = (
    "POSIX_OPENS POSIX_FILENOS POSIX_DUPS POSIX_SEEKS POSIX_STATS POSIX_FSYNCS POSIX_FDSYNCS POSIX_MMAPS "
    "POSIX_RENAME_SOURCES POSIX_RENAME_TARGETS POSIX_UNLINKS POSIX_TRUNCATES POSIX_F_OPEN_START_TIMESTAMP "
    "POSIX_F_CLOSE_START_TIMESTAMP POSIX_F_OPEN_END_TIMESTAMP POSIX_F_CLOSE_END_TIMESTAMP POSIX_F_META_TIME "
    "POSIX_O_DIRECT_OPENS POSIX_O_SYNC_OPENS POSIX_O_APPEND_OPENS STDIO_OPENS STDIO_SEEKS STDIO_FLUSHES "
    "ERRORS"
).split()
DATA_COUNTERS: list[tuple[str, str]] = [(n, m) for n, m in FILE_COUNTERS if n not in _REC_NAMES]
REC_COUNTERS: list[tuple[str, str]] = [c for c in FILE_COUNTERS if c not in DATA_COUNTERS]
SPLIT: dict[str, Any] = {
    "file_counters": REC_COUNTERS,
    "file_data_counters": DATA_COUNTERS,
    "minor_version": 2,
}

PROC_COUNTERS: list[tuple[str, str]] = [
    (n, "sum")
    for n in (
        "OPENS READS WRITES BYTES_READ BYTES_WRITTEN STATS SEEKS FSYNCS "
        "MKDIRS RMDIRS UNLINKS RENAMES READDIRS OPENDIRS ACCESSES TRUNCATES FALLOCATES CHMODS LINKS "
        "MMAPS MUNMAPS MSYNCS COPY_FILE_RANGES SENDFILES FORKS EXECS SPAWNS "
        "READ_TIME WRITE_TIME META_TIME ERRORS UNTRACKED_OPS"
    ).split()
]

OPS = {
    name: i + 1
    for i, name in enumerate(
        "open close read write pread pwrite readv writev preadv pwritev lseek fsync fdatasync stat fstat "
        "lstat statx fstatat access unlink mkdir rmdir rename opendir readdir closedir truncate ftruncate "
        "fallocate mmap munmap msync dup fopen fclose fread fwrite fseek fflush fgets fputs fprintf fscanf "
        "copy_file_range sendfile sync_file_range getdents fork exec ftell".split()
    )
}
OPS["MPI_File_write_at"] = 105  # MPI-IO ops from 100 up (docs/profile-log.md): open, close, read, write, ...


@dataclass
class FileSpec:
    file_id: int
    path: str
    mount_id: int = 0
    flags: int = 0


@dataclass
class MountSpec:
    mount_id: int
    dir: str
    fs_type: str


@dataclass
class TraceSpec:
    start_ns: int
    dur_ns: int
    op: str
    file_id: int = 0
    offset: int = 0
    size: int = 0
    thread: int = 0
    result: int = 0


@dataclass
class LogSpec:
    pid: int = 4242
    ppid: int = 1
    rank: int = -1
    job_id: str = "job-1"
    hostname: str = "node01"
    exe: str = "/usr/bin/app"
    cmdline: list[str] = field(default_factory=lambda: ["app", "--in", "data"])
    parent_log: str = ""
    flags: int = CLEAN
    start_wall_ns: int = 1_700_000_000_000_000_000
    start_mono_ns: int = 5_000_000_000
    end_ns: int = 10_000_000_000
    exit_status: int = 0
    exit_signal: int = 0
    trace_dropped: int = 0
    # minor version 3: records the log could not take (with flag 32)
    records_dropped: int = 0
    files: list[FileSpec] = field(default_factory=list)
    mounts: list[MountSpec] = field(default_factory=list)
    # (thread, file_id, {counter: value}); one per (thread, file), as the runtime writes them. With
    # file_data_counters, the values of those counters go to a FILE_DATA record (made when one is given).
    file_recs: list[tuple[int, int, dict[str, int]]] = field(default_factory=list)
    # Many records at once for thread 0: (file ids, values[n, len(file_counters) + len(file_data_counters)]);
    # a FILE_DATA record for each row with a non-zero data counter.
    bulk_file_recs: tuple[np.ndarray, np.ndarray] | None = None
    # (thread, {counter: value}); one per thread.
    proc_recs: list[tuple[int, dict[str, int]]] = field(default_factory=list)
    trace: list[TraceSpec] = field(default_factory=list)
    # PATHS records (minor version 1): (path id with PATH_ID set, path) of traced paths that are no files.
    paths: list[tuple[int, str]] = field(default_factory=list)
    minor_version: int = 1
    file_counters: list[tuple[str, str]] = field(default_factory=lambda: list(FILE_COUNTERS))
    file_data_counters: list[tuple[str, str]] = field(default_factory=list)
    proc_counters: list[tuple[str, str]] = field(default_factory=lambda: list(PROC_COUNTERS))
    chunk_size: int = 1 << 20
    # Chunk order: "names", "mounts", "files", "file_rec", "file_data", "proc_rec", "trace", "paths" (the
    # document fixes none).
    order: tuple[str, ...] = (
        "names",
        "mounts",
        "files",
        "file_rec",
        "file_data",
        "proc_rec",
        "trace",
        "paths",
    )
    # Extra raw chunks (kind, thread, record_size, body) appended after the others.
    extra_chunks: list[tuple[int, int, int, bytes]] = field(default_factory=list)


def _pad8(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 8)


def _cstr(s: str, size: int) -> bytes:
    b = s.encode()
    assert len(b) < size, f"{s!r} does not fit {size} bytes"
    return b.ljust(size, b"\0")


def header_bytes(spec: LogSpec, chunk_count: int) -> bytes:
    h = bytearray(HEADER_SIZE)
    h[0:8] = b"IOLENSP1"
    struct.pack_into("<IIII", h, 8, 1, HEADER_SIZE, spec.flags, spec.chunk_size)
    struct.pack_into("<Q", h, 24, chunk_count)
    struct.pack_into("<qq", h, 32, spec.pid, spec.ppid)
    struct.pack_into("<QQQ", h, 48, spec.start_wall_ns, spec.start_mono_ns, spec.end_ns)
    struct.pack_into("<ii", h, 72, spec.exit_status, spec.exit_signal)
    struct.pack_into("<q", h, 80, spec.rank)
    struct.pack_into("<II", h, 88, len(spec.file_counters), len(spec.proc_counters))
    struct.pack_into("<QII", h, 96, spec.trace_dropped, spec.minor_version, len(spec.file_data_counters))
    struct.pack_into("<Q", h, 112, spec.records_dropped)
    h[128:192] = _cstr(spec.job_id, 64)
    h[192:256] = _cstr(spec.hostname, 64)
    h[256:768] = _cstr(spec.exe, 512)
    h[768:1024] = _cstr(spec.parent_log, 256)
    cmd = b"".join(a.encode() + b"\0" for a in spec.cmdline)[:2047]
    h[1024 : 1024 + len(cmd)] = cmd
    return bytes(h)


def chunk(kind: int, thread: int, record_size: int, body: bytes, chunk_size: int) -> bytes:
    assert len(body) <= chunk_size - CHUNK_HEADER, "records do not fit the chunk"
    head = struct.pack("<4sIIIQ", b"CHNK", kind, thread, record_size, len(body)).ljust(CHUNK_HEADER, b"\0")
    return (head + body).ljust(chunk_size, b"\0")


def _pack(kind: int, thread: int, record_size: int, records: Iterable[bytes], chunk_size: int) -> list[bytes]:
    """Records into as many chunks of one kind as they need (a record never spans two chunks)."""
    out: list[bytes] = []
    room = chunk_size - CHUNK_HEADER
    body: list[bytes] = []
    used = 0
    for rec in records:
        if used + len(rec) > room:
            out.append(chunk(kind, thread, record_size, b"".join(body), chunk_size))
            body, used = [], 0
        body.append(rec)
        used += len(rec)
    if body:
        out.append(chunk(kind, thread, record_size, b"".join(body), chunk_size))
    return out


def _values(counters: Sequence[tuple[str, str]], given: dict[str, int]) -> bytes:
    index = {n: i for i, (n, _) in enumerate(counters)}
    vals = [0] * len(counters)
    for name, v in given.items():
        vals[index[name]] = v
    return struct.pack(f"<{len(vals)}Q", *vals)


def _bulk_chunks(spec: LogSpec, kind: int) -> list[bytes]:
    assert spec.bulk_file_recs is not None
    ids, values = spec.bulk_file_recs
    n = len(spec.file_counters)
    if kind == FILE_DATA:
        values = values[:, n:]
        keep = values.any(axis=1)
        ids, values = ids[keep], values[keep]
    else:
        values = values[:, :n]
    rsize = 8 + 8 * values.shape[1]
    recs = np.zeros((len(ids), values.shape[1] + 1), dtype="<u8")
    recs[:, 0] = ids
    recs[:, 1:] = values
    per = (spec.chunk_size - CHUNK_HEADER) // rsize
    return [
        chunk(kind, PROCESS, rsize, recs[i : i + per].tobytes(), spec.chunk_size)
        for i in range(0, len(ids), per)
    ]


def _counter_chunks(spec: LogSpec, kind: int) -> list[bytes]:
    """FILE_REC or FILE_DATA chunks: the records of each thread, in chunks of their own (the runtime puts
    the threads' records in process chunks: the reader must take either)."""
    counters = spec.file_counters if kind == FILE_REC else spec.file_data_counters
    names = {n for n, _ in counters}
    known = {n for n, _ in spec.file_counters} | {n for n, _ in spec.file_data_counters}
    for _, _, vals in spec.file_recs:  # a misspelt counter must fail the test, not become a zero
        unknown = set(vals) - known
        assert not unknown, f"counters in neither record: {sorted(unknown)}"
    rsize = 8 + 8 * len(counters)
    out: list[bytes] = []
    for thread in sorted({t for t, _, _ in spec.file_recs}):
        recs = (
            struct.pack("<II", fid, thread) + _values(counters, {k: v for k, v in vals.items() if k in names})
            for t, fid, vals in spec.file_recs
            if t == thread and (kind == FILE_REC or names & set(vals))
        )
        out += _pack(kind, thread, rsize, recs, spec.chunk_size)
    if spec.bulk_file_recs is not None and (kind == FILE_REC or counters):
        out += _bulk_chunks(spec, kind)
    return out


def build_chunks(spec: LogSpec) -> list[bytes]:
    cs = spec.chunk_size
    parts: dict[str, list[bytes]] = {}
    names = "".join(f"file {n} {m}\n" for n, m in spec.file_counters)
    names += "".join(f"file_data {n} {m}\n" for n, m in spec.file_data_counters)
    names += "".join(f"proc {n} {m}\n" for n, m in spec.proc_counters)
    parts["names"] = [chunk(NAMES, PROCESS, 0, _pad8(names.encode()), cs)]
    parts["mounts"] = _pack(
        MOUNTS,
        PROCESS,
        0,
        (
            struct.pack("<IIII", m.mount_id, len(m.dir.encode()), len(m.fs_type.encode()), 0)
            + _pad8(m.dir.encode())
            + _pad8(m.fs_type.encode())
            for m in spec.mounts
        ),
        cs,
    )
    parts["files"] = _pack(
        FILES,
        PROCESS,
        0,
        (
            struct.pack("<IIII", f.file_id, f.mount_id, len(f.path.encode()), f.flags)
            + _pad8(f.path.encode())
            for f in spec.files
        ),
        cs,
    )
    parts["file_rec"] = _counter_chunks(spec, FILE_REC)
    parts["file_data"] = _counter_chunks(spec, FILE_DATA)
    prsize = 8 + 8 * len(spec.proc_counters)
    parts["proc_rec"] = _pack(
        PROC_REC,
        PROCESS,
        prsize,
        (struct.pack("<II", t, 0) + _values(spec.proc_counters, v) for t, v in spec.proc_recs),
        cs,
    )
    trace_chunks: list[bytes] = []
    for thread in sorted({e.thread for e in spec.trace}):
        recs = (
            struct.pack(
                "<QQQQIHHq", e.start_ns, e.dur_ns, e.offset, e.size, e.file_id, OPS[e.op], e.thread, e.result
            )
            for e in spec.trace
            if e.thread == thread
        )
        trace_chunks += _pack(TRACE, thread, 48, recs, cs)
    parts["trace"] = trace_chunks
    parts["paths"] = _pack(
        PATHS,
        PROCESS,
        0,
        (struct.pack("<IIII", pid, 0, len(p.encode()), 0) + _pad8(p.encode()) for pid, p in spec.paths),
        cs,
    )
    out = [c for name in spec.order for c in parts[name]]
    out += [chunk(k, t, r, b, cs) for k, t, r, b in spec.extra_chunks]
    return out


def build_image(spec: LogSpec, chunk_count: int | None = None) -> bytes:
    """The raw image: header, then the chunks; chunk_count overrides the header's count (a log that
    claims chunks it does not have)."""
    chunks = build_chunks(spec)
    n = len(chunks) if chunk_count is None else chunk_count
    return header_bytes(spec, n) + b"".join(chunks)


def compress(image: bytes, declared_length: int | None = None) -> bytes:
    length = len(image) if declared_length is None else declared_length
    return b"IOLPZ001" + struct.pack("<Q", length) + zlib.compress(image, 6)


def log_name(spec: LogSpec, n: int = 0, compressed: bool = True) -> str:
    return f"{spec.job_id}.{spec.hostname}.{spec.pid}.{n}.{'iolpz' if compressed else 'iolp'}"


def write_log(directory: Path, spec: LogSpec, compressed: bool = True, n: int = 0) -> Path:
    """The log of spec, named as the runtime names it, in directory."""
    path = directory / log_name(spec, n, compressed)
    image = build_image(spec)
    path.write_bytes(compress(image) if compressed else image)
    return path


# --- damaged logs ---------------------------------------------------------------------------------------


def cut(path: Path, length: int) -> Path:
    """Keep only the first `length` bytes (a copy cut short, a log that could not grow)."""
    data = path.read_bytes()
    path.write_bytes(data[:length])
    return path


def chunk_offset(spec: LogSpec, k: int) -> int:
    return HEADER_SIZE + k * spec.chunk_size


def poke(path: Path, offset: int, data: bytes) -> Path:
    raw = bytearray(path.read_bytes())
    raw[offset : offset + len(data)] = data
    path.write_bytes(bytes(raw))
    return path


def counts(spec: LogSpec) -> dict[str, int]:
    """How many chunks of each part build_chunks lays out (to aim a break at a chunk)."""
    spec_copy = LogSpec(**{**spec.__dict__})
    out: dict[str, int] = {}
    for name in spec.order:
        spec_copy.order = (name,)
        spec_copy.extra_chunks = []
        out[name] = len(build_chunks(spec_copy))
    return out


def many_files_spec(n: int, seed: int = 1) -> LogSpec:
    """A process that wrote then read n files of a few KiB to a few MiB each (the 100k-file case), in the
    layout the runtime writes (SPLIT)."""
    rng = np.random.default_rng(seed)
    names = [name for name, _ in [*REC_COUNTERS, *DATA_COUNTERS]]
    col = {name: i for i, name in enumerate(names)}
    values = np.zeros((n, len(names)), dtype=np.uint64)
    size = rng.integers(1, 4 << 20, n, dtype=np.uint64)
    ops = rng.integers(1, 64, n, dtype=np.uint64)

    def put(name: str, v: np.ndarray | int) -> None:
        values[:, col[name]] = v

    put("POSIX_OPENS", 2)
    put("POSIX_WRITES", ops)
    put("POSIX_READS", ops)
    put("POSIX_BYTES_WRITTEN", size)
    put("POSIX_BYTES_READ", size)
    put("POSIX_MAX_BYTE_WRITTEN", size)
    put("POSIX_MAX_BYTE_READ", size)
    put("POSIX_SEQ_WRITES", ops)
    put("POSIX_SEQ_READS", ops)
    put("POSIX_CONSEC_READS", ops - 1)
    put("POSIX_SIZE_WRITE_10K_100K", ops)
    put("POSIX_SIZE_READ_10K_100K", ops)
    put("POSIX_ACCESS1_ACCESS", size // ops)
    put("POSIX_ACCESS1_COUNT", ops * 2)
    put("POSIX_STRIDE1_STRIDE", 0)
    put("POSIX_STRIDE1_COUNT", ops - 1)
    t0 = rng.integers(1, 10**9, n, dtype=np.uint64)
    put("POSIX_F_OPEN_START_TIMESTAMP", t0)
    put("POSIX_F_WRITE_START_TIMESTAMP", t0 + 10)
    put("POSIX_F_WRITE_END_TIMESTAMP", t0 + 1000)
    put("POSIX_F_READ_START_TIMESTAMP", t0 + 2000)
    put("POSIX_F_READ_END_TIMESTAMP", t0 + 3000)
    put("POSIX_F_CLOSE_END_TIMESTAMP", t0 + 3100)
    put("POSIX_F_WRITE_TIME", ops * 20_000)
    put("POSIX_F_READ_TIME", ops * 10_000)
    put("POSIX_F_META_TIME", 50_000)
    ids = np.arange(1, n + 1, dtype=np.uint64)
    return LogSpec(
        **SPLIT,
        files=[FileSpec(i, f"/scratch/run/out/part-{i:06d}.dat", 1) for i in range(1, n + 1)],
        mounts=[MountSpec(1, "/scratch", "lustre")],
        bulk_file_recs=(ids, values),
        proc_recs=[
            (0, {"OPENS": 2 * n, "READS": int(ops.sum()), "WRITES": int(ops.sum()), "META_TIME": 50_000 * n})
        ],
    )
