"""Reading a Darshan log's bytes (log formats 3.10 to 3.41: Darshan 3.1 to 3.4) without the darshan library.

The layout (learnt from darshan-util's documentation and sources, see format.py): an uncompressed header
(version string, magic number, compression, the partial flag, and the (offset, length) of the name region and
of each module's region), then compressed regions: the job (its record, the command line, the mount table),
the names (`u64 id`, then the name up to a NUL), and one region per module, each a run of fixed-size
records. A region is one or more zlib (or bzip2) streams one after the other (an MPI job's ranks compress
their records separately).

The records become numpy arrays (one matrix of counters and one of fcounters per module, a record per
row), never a Python object per record: a 100k-record log reads in a fraction of a second. Anything that
does not add up (a region beyond the end of the file, a stream that stops early or does not inflate, a
region that is not a whole number of records, a module version from the future) raises DarshanLogError
with the reason; nothing here can crash the process.
"""

from __future__ import annotations

import bz2
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from iolens.profile.darshan_log import format as fmt
from iolens.profile.reader import ProfileLogError

MAGIC = 6567223
SUPPORTED = ("3.10", "3.20", "3.21", "3.41")
ZLIB, BZIP2, NONE = 0, 1, 2
# Darshan 3.4's header holds 64 module regions; earlier formats 16.
HEADER_341 = "8sqB7xQ"  # then name map, 64 maps, 64 versions
HEADER_OLD = "8sqB3xI"  # then name map, 16 maps, 16 versions
JOB_341 = "7q"  # uid, start s, start ns, end s, end ns, nprocs, jobid; then metadata[1024]
JOB_OLD = "5q"  # uid, start s, end s, nprocs, jobid; then metadata[1024]
METADATA_LEN = 1024
# Deflate and bzip2 never inflate more than about 1:1100; beyond that the stream is not a Darshan region.
MAX_RATIO = 1100
# Regions are inflated this much at a time; a module's records are handed on in pieces of about this size.
# Each piece lives a few times over while it is converted (inflated, records, iolens's units): 2 MiB keeps
# that under 10 MiB (8 MiB pieces added 30 MiB to a 100k-record log's peak) at no cost in time.
CHUNK = 2 << 20


class DarshanLogError(ProfileLogError):
    """A file that is not a Darshan log this reader can read; the message names the file and says why."""


@dataclass
class Records:
    """One module's records: a row per record, counters in the module's current layout (fmt.Module)."""

    module: fmt.Module
    version: int
    ids: np.ndarray  # u64
    ranks: np.ndarray  # i64; -1: a shared record, reduced over every rank
    counters: np.ndarray  # i64 (n, len(layout.counters))
    fcounters: np.ndarray  # f64 (n, len(layout.fcounters))
    file_rec_ids: np.ndarray | None = None  # H5D, PNETCDF_VAR: the record id of the file

    def __len__(self) -> int:
        return int(self.ids.size)

    def column(self, name: str) -> np.ndarray:
        layout = self.module.layout
        if name in layout.counters:
            return self.counters[:, layout.counters.index(name)]
        return self.fcounters[:, layout.fcounters.index(name)]


Sink = Callable[[Records], None]


@dataclass
class DxtFile:
    """The DXT trace of one file by one rank: its write and read segments (offset, length, start and end
    in seconds since the job started)."""

    id: int
    rank: int
    hostname: str
    writes: np.ndarray
    reads: np.ndarray


@dataclass
class DarshanLog:
    path: Path
    version: str
    compression: int
    partial: list[str]  # modules whose records did not all fit Darshan's memory
    uid: int
    start_s: float
    end_s: float
    nprocs: int
    jobid: int
    metadata: dict[str, str]
    exe: str
    mounts: list[tuple[str, str]]  # (mount point, file system type), longest mount point first
    names: dict[int, str]
    modules: dict[str, int]  # every module in the log, with its version
    records: dict[int, Records] = field(default_factory=dict)  # the modules iolens reads, by number
    dxt: list[DxtFile] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    # Modules whose records went to a sink (read_darshan_log's `sinks`) instead of `records`: their version.
    streamed: dict[int, int] = field(default_factory=dict)

    @property
    def run_time_s(self) -> float:
        """As Darshan gives it: end - start, and before format 3.41 (whole seconds) end - start + 1."""
        if self.version >= "3.41":
            return max(self.end_s - self.start_s, 0.0)
        return self.end_s - self.start_s + 1


def is_darshan_log(path: str | Path) -> bool:
    """Whether the file starts like a Darshan log (a version string "3.NN", then the magic number)."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return False
    if len(head) < 16 or not head[:2] == b"3.":
        return False
    magic = int.from_bytes(head[8:16], "little")
    return magic == MAGIC or int.from_bytes(head[8:16], "big") == MAGIC


def read_darshan_log(path: str | Path, sinks: dict[int, Sink] | None = None) -> DarshanLog:
    """The log at `path`. With `sinks` (module number -> callable), those modules' records are handed to
    their sink a piece at a time instead of being kept whole in `records` (a 100k-record POSIX region is
    70 MB: the caller keeps what it needs of each piece)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except IsADirectoryError:
        raise DarshanLogError(f"{p}: is a directory, not a Darshan log") from None
    except FileNotFoundError:
        raise DarshanLogError(f"{p}: no such file") from None
    except OSError as exc:
        raise DarshanLogError(f"{p}: cannot read: {exc.strerror}") from None
    return parse_darshan_bytes(p, data, sinks)


def parse_darshan_bytes(path: Path, data: bytes, sinks: dict[int, Sink] | None = None) -> DarshanLog:
    """The log whose bytes are `data` (read from `path`, which messages name); `sinks` as in
    read_darshan_log."""
    try:
        return _Parser(path, data, sinks).parse()
    except (ValueError, struct.error, MemoryError) as exc:
        # What the checks above did not foresee is still a refusal with a reason, never a traceback.
        raise DarshanLogError(f"{path}: not a readable Darshan log: {exc}") from None


class _Parser:
    def __init__(self, path: Path, data: bytes, sinks: dict[int, Sink] | None = None) -> None:
        self.path = path
        self.data = data
        self.end = "<"
        self.sinks = sinks or {}

    def fail(self, why: str) -> DarshanLogError:
        return DarshanLogError(f"{self.path}: not a readable Darshan log: {why}")

    # --- the header ---------------------------------------------------------------------------------------

    def header(self) -> tuple[str, int, int, tuple[int, int], list[tuple[int, int]], list[int], int]:
        data = self.data
        if len(data) < 16:
            raise self.fail(f"{len(data)} bytes, shorter than a Darshan header")
        if int.from_bytes(data[8:16], "little") == MAGIC:
            self.end = "<"
        elif int.from_bytes(data[8:16], "big") == MAGIC:
            self.end = ">"
        elif data[:2] == b"3.":
            raise self.fail("bad magic number")
        else:
            raise self.fail("no Darshan version string and magic number at its start")
        version = data[:8].split(b"\0", 1)[0].decode("ascii", "replace")
        if version not in SUPPORTED:
            raise self.fail(f"log format {version!r}; iolens reads formats {', '.join(SUPPORTED)}")
        new = version >= "3.41"
        head = struct.Struct(self.end + (HEADER_341 if new else HEADER_OLD))
        n_mods = 64 if new else 16
        size = head.size + 16 * (1 + n_mods) + 4 * n_mods
        if len(data) < size:
            raise self.fail(f"the header is cut short ({len(data)} of {size} bytes)")
        _, _, comp, partial = head.unpack_from(data, 0)
        maps = np.frombuffer(data, self.end + "u8", 2 * (1 + n_mods), head.size).reshape(-1, 2)
        vers = np.frombuffer(data, self.end + "u4", n_mods, head.size + 16 * (1 + n_mods)).tolist()
        regions = [(int(o), int(n)) for o, n in maps.tolist()]
        name_map, mod_maps = regions[0], regions[1:]
        # Renumber older logs' modules as 3.41 numbers them (H5D came in 3.20, PNETCDF_VAR in 3.41).
        for at, since in ((fmt.H5D, "3.20"), (fmt.PNETCDF_VAR, "3.41")):
            if version < since:
                mod_maps.insert(at, (0, 0))
                vers.insert(at, 0)
                low = partial & ((1 << at) - 1)
                partial = low | ((partial >> at) << (at + 1))
        if comp not in (ZLIB, BZIP2, NONE):
            raise self.fail(f"unknown compression {comp}")
        return version, comp, partial, name_map, mod_maps, vers, size

    # --- regions ------------------------------------------------------------------------------------------

    def inflate(self, what: str, off: int, length: int, comp: int) -> Iterator[bytes]:
        """The region's bytes, inflated a piece (at most CHUNK bytes) at a time: a large region is never
        held twice (zlib's one-shot output is built in pieces and joined)."""
        if length == 0:
            return
        if off + length > len(self.data) or off <= 0:
            raise self.fail(f"the {what} region (bytes {off}-{off + length}) is not inside the file")
        raw = memoryview(self.data)[off : off + length]
        if comp == NONE:
            yield bytes(raw)
            return
        limit = MAX_RATIO * length + (1 << 20)
        early = f"the {what} region's compressed data ends early: the log is truncated"
        total = 0
        rest = bytes(raw)
        while rest:
            d = zlib.decompressobj() if comp == ZLIB else bz2.BZ2Decompressor()
            feed = rest
            while True:
                if total >= limit:
                    raise self.fail(f"the {what} region inflates beyond {MAX_RATIO} times its size")
                try:
                    out = d.decompress(feed, min(CHUNK, limit - total))
                except (zlib.error, OSError, ValueError, EOFError) as exc:
                    raise self.fail(f"the {what} region does not inflate ({exc})") from None
                total += len(out)
                if out:
                    yield out
                if d.eof:
                    break
                if isinstance(d, bz2.BZ2Decompressor):
                    feed = b""
                    if d.needs_input:
                        raise self.fail(early)
                else:
                    feed = d.unconsumed_tail
                    if not feed and not out:
                        raise self.fail(early)
            rest = d.unused_data

    def region(self, what: str, off: int, length: int, comp: int) -> bytes:
        return b"".join(self.inflate(what, off, length, comp))

    # --- the parts ---------------------------------------------------------------------------------------

    def job(self, version: str, blob: bytes) -> tuple[list[int], dict[str, str], str, list[tuple[str, str]]]:
        job = struct.Struct(self.end + (JOB_341 if version >= "3.41" else JOB_OLD))
        if len(blob) < job.size + METADATA_LEN:
            raise self.fail(f"the job record is cut short ({len(blob)} bytes)")
        fields = list(job.unpack_from(blob, 0))
        if len(fields) == 5:
            fields = [fields[0], fields[1], 0, fields[2], 0, fields[3], fields[4]]
        meta_raw = blob[job.size : job.size + METADATA_LEN].split(b"\0", 1)[0].decode("utf-8", "replace")
        metadata: dict[str, str] = {}
        for line in meta_raw.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                metadata[key] = value
        text = blob[job.size + METADATA_LEN :].split(b"\0", 1)[0].decode("utf-8", "replace")
        exe, *lines = text.split("\n")
        mounts = []
        for line in lines:
            fs, sep, mnt = line.partition("\t")
            if not sep:
                raise self.fail(f"a line of the mount table is not 'type<TAB>path': {line[:80]!r}")
            mounts.append((mnt, fs))
        mounts.sort(key=lambda m: -len(m[0]))
        return fields, metadata, exe, mounts

    def names(self, blob: bytes) -> dict[int, str]:
        out: dict[int, str] = {}
        pos, n = 0, len(blob)
        ids = struct.Struct(self.end + "Q")
        find = blob.find
        while pos < n:
            stop = find(b"\0", pos + 8)
            if pos + 8 > n or stop < 0:
                raise self.fail("the name region ends inside a name record")
            rid = ids.unpack_from(blob, pos)[0]
            if rid not in out or not out[rid]:
                out[rid] = blob[pos + 8 : stop].decode("utf-8", "surrogateescape")
            pos = stop + 1
        return out

    def stream_records(
        self, module: fmt.Module, version: int, off: int, length: int, comp: int, sink: Sink
    ) -> None:
        """The module's records handed to sink a piece at a time (whole records, about CHUNK bytes)."""
        size = module.layouts[version].size
        carry = b""
        seen = 0
        for piece in self.inflate(module.name, off, length, comp):
            if carry:
                piece = carry + piece
            whole = len(piece) - len(piece) % size
            carry = piece[whole:]
            if whole:
                seen += whole
                sink(self.records(module, version, memoryview(piece)[:whole]))
        if carry:
            raise self.fail(
                f"the {module.name} region holds {seen + len(carry)} bytes, not a whole number of "
                f"{size}-byte records: the log is corrupt"
            )

    def records(self, module: fmt.Module, version: int, blob: bytes | memoryview) -> Records:
        layout = module.layouts[version]
        if len(blob) % layout.size:
            raise self.fail(
                f"the {module.name} region holds {len(blob)} bytes, not a whole number of "
                f"{layout.size}-byte records: the log is corrupt"
            )
        e = self.end
        fields = [("id", e + "u8"), ("rank", e + "i8")]
        if layout.file_rec_id:
            fields.append(("file", e + "u8"))
        fields += [("c", e + "i8", (len(layout.counters),)), ("f", e + "f8", (len(layout.fcounters),))]
        recs = np.frombuffer(blob, dtype=np.dtype(fields))
        # Native-order arrays (a view when the log is little-endian and current, else one copy).
        ids, ranks = recs["id"].astype(np.uint64), recs["rank"].astype(np.int64)
        c, f = recs["c"].astype(np.int64, copy=False), recs["f"].astype(np.float64, copy=False)
        current = module.layout
        if version != module.current:
            c = _relayout(c, layout.counters, current.counters, module.zero_defaults)
            f = _relayout(f, layout.fcounters, current.fcounters, module.zero_defaults)
        files = None
        if current.file_rec_id:
            files = recs["file"].astype(np.uint64) if layout.file_rec_id else np.zeros(len(recs), np.uint64)
        return Records(module, version, ids, ranks, c, f, files)

    def dxt(self, version: int, blob: bytes) -> list[DxtFile]:
        seg = fmt.DXT_SEGMENT_SIZE.get(version)
        if seg is None:
            raise self.fail(f"DXT_POSIX module version {version}; iolens reads versions 1 and 2")
        e = self.end
        head = struct.Struct(e + "Qqq64sqq")
        seg_dtype = np.dtype(
            [("offset", e + "i8"), ("length", e + "i8"), ("start", e + "f8"), ("end", e + "f8")]
            + ([("thread", e + "u8")] if seg == 40 else [])
        )
        out: list[DxtFile] = []
        pos, n = 0, len(blob)
        while pos < n:
            if pos + head.size > n:
                raise self.fail("the DXT_POSIX region ends inside a record")
            rid, rank, _, host, nw, nr = head.unpack_from(blob, pos)
            pos += head.size
            if nw < 0 or nr < 0 or pos + (nw + nr) * seg > n:
                raise self.fail("the DXT_POSIX region ends inside a record's segments")
            segs = np.frombuffer(blob, seg_dtype, nw + nr, pos)
            pos += (nw + nr) * seg
            hostname = host.split(b"\0", 1)[0].decode("utf-8", "replace")
            out.append(DxtFile(rid, rank, hostname, segs[:nw], segs[nw:]))
        return out

    def parse(self) -> DarshanLog:
        version, comp, partial, name_map, mod_maps, vers, header_size = self.header()
        for number, (off, length) in enumerate([name_map, *mod_maps]):
            if length and (off < header_size or off + length > len(self.data)):
                what = (
                    "name"
                    if number == 0
                    else fmt.MODULE_NAMES[number]
                    if number < len(fmt.MODULE_NAMES)
                    else ""
                )
                raise self.fail(
                    f"the {what or f'module {number}'} region (bytes {off}-{off + length}) lies beyond the "
                    f"end of the file ({len(self.data)} bytes): the log is truncated"
                )
        # The job region runs from the header to the first region after it.
        starts = [off for off, n in [name_map, *mod_maps] if n and off]
        job_end = min(starts) if starts else len(self.data)
        fields, metadata, exe, mounts = self.job(
            version, self.region("job", header_size, job_end - header_size, comp)
        )
        uid, s, sn, e, en, nprocs, jobid = fields
        names = self.names(self.region("name", *name_map, comp))
        log = DarshanLog(
            path=self.path,
            version=version,
            compression=comp,
            partial=[],
            uid=uid,
            start_s=s + sn / 1e9,
            end_s=e + en / 1e9,
            nprocs=nprocs,
            jobid=jobid,
            metadata=metadata,
            exe=exe,
            mounts=mounts,
            names=names,
            modules={},
        )
        for number, ((off, length), ver) in enumerate(zip(mod_maps, vers, strict=False)):
            if not length:
                continue
            name = fmt.MODULE_NAMES[number] if number < len(fmt.MODULE_NAMES) else f"module {number}"
            log.modules[name] = ver
            if partial & (1 << number):
                log.partial.append(name)
            module = fmt.MODULES.get(number)
            if module is None and number != fmt.DXT_POSIX:
                continue  # a module iolens does not read (LUSTRE, DXT_MPIIO, HEATMAP, ...)
            if module is not None and ver > module.current:
                raise self.fail(f"{name} module version {ver} is newer than iolens knows ({module.current})")
            if module is not None and ver not in module.layouts:
                log.messages.append(f"{name} records of module version {ver} are not read (too old)")
            elif module is not None and number in self.sinks:
                self.stream_records(module, ver, off, length, comp, self.sinks[number])
                log.streamed[number] = ver
            elif module is not None:
                log.records[number] = self.records(module, ver, self.region(name, off, length, comp))
            else:
                log.dxt = self.dxt(ver, self.region(name, off, length, comp))
        if log.partial:
            log.messages.append(
                "Darshan could not keep every record of "
                + ", ".join(log.partial)
                + " (its memory for records was full): those counts are short"
            )
        return log


def _relayout(
    values: np.ndarray, old: tuple[str, ...], new: tuple[str, ...], zero: frozenset[str]
) -> np.ndarray:
    """Columns of an older layout put into the current one by name; a counter the old one lacks is -1 (or
    0)."""
    out = np.empty((values.shape[0], len(new)), dtype=values.dtype)
    at = {n: i for i, n in enumerate(old)}
    for j, name in enumerate(new):
        i = at.get(name)
        out[:, j] = values[:, i] if i is not None else (0 if name in zero else -1)
    return out
