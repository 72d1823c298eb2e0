"""Typed model of the engine's result documents (docs/schema.md): the one place that knows the schema.

Everything else reads a Document, never the raw JSON. Every document has the same envelope (Document: status,
error, host, comm, build, config); its `workload` picks the subclass that reads the rest (DOCUMENT_TYPES):
IorDocument, MdtestDocument, MdworkbenchDocument, FindDocument, FioDocument, and Io500Document (written by
the io500 driver).
Reading is strict about what the schema requires (so a broken engine is noticed here, not as a KeyError in a
table) and tolerant of keys it does not know (a newer engine may add fields within the same schema_version).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

from iolens import __version__

SCHEMA_VERSIONS = (1,)


class ResultError(Exception):
    """The document is missing, unreadable, of an unknown schema version, or not what the schema says."""


_MISSING = object()
_T = TypeVar("_T")


class _Reader:
    """Typed access to one JSON object, naming the full key path in every error."""

    def __init__(self, obj: Any, path: str, strict: bool = True) -> None:
        if not isinstance(obj, dict):
            raise ResultError(f"{path or 'document'}: expected an object, got {_kind(obj)}")
        self.obj = obj
        self.path = path
        self.strict = strict

    def _key(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def _get(self, key: str, types: tuple[type, ...], default: Any, nullable: bool) -> Any:
        value = self.obj.get(key, _MISSING)
        if value is _MISSING:
            # A default makes a key optional in a failed run's partial document, or where null is allowed.
            if default is not _MISSING and (not self.strict or nullable):
                return default
            raise ResultError(f"{self._key(key)}: missing")
        if value is None:
            if nullable:
                return None
            raise ResultError(f"{self._key(key)}: must not be null")
        # bool is an int in Python; a count that reads `true` is a broken document.
        if isinstance(value, bool) and bool not in types:
            raise ResultError(f"{self._key(key)}: expected {_names(types)}, got boolean")
        if not isinstance(value, types):
            raise ResultError(f"{self._key(key)}: expected {_names(types)}, got {_kind(value)}")
        return value

    def string(self, key: str, default: Any = _MISSING, nullable: bool = False) -> Any:
        return self._get(key, (str,), default, nullable)

    def integer(self, key: str, default: Any = _MISSING, nullable: bool = False) -> Any:
        return self._get(key, (int,), default, nullable)

    def number(self, key: str, default: Any = _MISSING, nullable: bool = False) -> Any:
        value = self._get(key, (int, float), default, nullable)
        if value is None or value is default:
            return value
        value = float(value)
        if not math.isfinite(value):
            raise ResultError(f"{self._key(key)}: not a finite number")
        return value

    def boolean(self, key: str, default: Any = _MISSING, nullable: bool = False) -> Any:
        return self._get(key, (bool,), default, nullable)

    def object(self, key: str, default: Any = _MISSING, nullable: bool = False) -> _Reader | None:
        value = self._get(key, (dict,), default, nullable)
        return None if value is None else _Reader(value, self._key(key), self.strict)

    def array(self, key: str, default: Any = _MISSING) -> list[Any]:
        return self._get(key, (list,), default, False)

    # The shapes the schema builds its members from.

    def required(self, key: str) -> _Reader:
        """A sub-object the schema requires: missing or null is an error, even in a failed run's document."""
        sub = self.object(key)
        assert sub is not None  # object() raised already: the key has no default and must not be null
        return sub

    def optional(self, key: str, parse: Callable[[_Reader], _T]) -> _T | None:
        """A sub-object that may be null or absent (the schema's "object or null")."""
        sub = self.object(key, None, nullable=True)
        return None if sub is None else parse(sub)

    def section(self, key: str, parse: Callable[[_Reader], _T], absent: Any = None) -> Any:
        """A sub-object an ok run's document must have and a failed run's may lack (then `absent`)."""
        sub = self.object(key, None)
        return absent if sub is None else parse(sub)

    def each(self, key: str, parse: Callable[[_Reader], _T], default: Any = _MISSING) -> tuple[_T, ...]:
        """An array of objects, each parsed; an error names the element by its index."""
        return tuple(
            parse(_Reader(x, f"{self._key(key)}[{i}]")) for i, x in enumerate(self.array(key, default))
        )

    def strings(self, key: str, default: Any = _MISSING) -> tuple[str, ...]:
        values = self.array(key, default)
        for i, v in enumerate(values):
            if not isinstance(v, str):
                raise ResultError(f"{self._key(key)}[{i}]: expected string, got {_kind(v)}")
        return tuple(values)


def _kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )


def _names(types: tuple[type, ...]) -> str:
    if types == (int, float):
        return "number"
    return " or ".join(
        {int: "integer", float: "number", str: "string", bool: "boolean", dict: "object", list: "array"}[t]
        for t in types
    )


# How a field is read, by its declared type (annotations are text: `from __future__ import annotations`).
_READ_AS = {"str": _Reader.string, "int": _Reader.integer, "float": _Reader.number, "bool": _Reader.boolean}


def _read_fields(cls: Any, r: _Reader, **given: Any) -> Any:
    """cls built from r: each field not in `given` read under its own name by its declared type, required,
    except that a field typed `T | None` may be null or absent. `given` holds the nested ones, read by the
    caller."""
    values = {}
    for f in fields(cls):
        if f.name in given:
            continue
        kind, _, optional = f.type.partition(" | ")
        read = _READ_AS[kind]
        # A field with a default may be absent from a failed run's document (the reader is lenient there).
        default = _MISSING if f.default is dataclasses.MISSING else f.default
        if optional == "None":
            values[f.name] = read(r, f.name, None, nullable=True)
        else:
            values[f.name] = read(r, f.name, default)
    return cls(**values, **given)


_M = TypeVar("_M", bound="_Model")


class _Model:
    """A part of the document made only of scalar fields, each read by its declared type (_read_fields)."""

    @classmethod
    def parse(cls: type[_M], r: _Reader) -> _M:
        return _read_fields(cls, r)


# --- the envelope: what every document has, whatever its workload ------------------------------------------


@dataclass(frozen=True)
class ErrorInfo(_Model):
    message: str
    rank: int | None
    phase: str | None


@dataclass(frozen=True)
class Host(_Model):
    hostname: str = ""
    kernel: str = ""


@dataclass(frozen=True)
class Comm(_Model):
    kind: str = "local"
    ranks: int = 0
    nodes: int = 0
    tasks_per_node: int = 0
    max_clock_offset_ns: int = 0


@dataclass(frozen=True)
class Build(_Model):
    mpi: bool = False
    liburing: bool = False


@dataclass(frozen=True)
class Bucket:
    low: int
    high: int
    count: int


@dataclass(frozen=True)
class Latency:
    """Per-operation latency in integer nanoseconds (a transfer, a metadata item, a stat call)."""

    count: int
    min: int
    mean: float
    p50: int
    p90: int
    p99: int
    p99_9: int
    max: int
    buckets: tuple[Bucket, ...] = ()

    @classmethod
    def parse(cls, r: _Reader, with_buckets: bool, **given: Any) -> Latency:
        buckets: list[Bucket] = []
        if with_buckets:
            for i, b in enumerate(r.array("buckets", [])):
                if (
                    not isinstance(b, list)
                    or len(b) != 3
                    or not all(isinstance(x, int) and not isinstance(x, bool) for x in b)
                ):
                    raise ResultError(f"{r.path}.buckets[{i}]: expected [low, high, count] integers")
                buckets.append(Bucket(*b))
        return _read_fields(cls, r, buckets=tuple(buckets), **given)

    def percentile(self, p: float | str) -> int:
        """The p-th percentile from the buckets, as the engine computes p50 … p99_9: the value of nearest rank
        ceil(p/100 × count) is taken as the upper bound of its bucket, clamped to [min, max]; 0 when empty.
        p is exact as written ("99.9" is 999/10, not the float just above it)."""
        if self.count == 0:
            return 0
        q = Fraction(str(p))
        if q <= 0:
            return self.min
        if q >= 100:
            return self.max
        rank = min(max(math.ceil(q * self.count / 100), 1), self.count)
        seen = 0
        for b in sorted(self.buckets, key=lambda b: b.low):
            seen += b.count
            if seen >= rank:
                return min(max(b.high, self.min), self.max)
        # Buckets that hold fewer values than count (a bad merge): max is the safe answer, as in the engine.
        return self.max


@dataclass(frozen=True)
class Document:
    """The envelope every result document has; parse() returns the subclass its `workload` names
    (DOCUMENT_TYPES), which adds that workload's members."""

    schema_version: int
    tool: str
    version: str
    workload: str
    status: str
    error: ErrorInfo | None
    command: tuple[str, ...] = ()
    started_at: str = ""
    ended_at: str = ""
    host: Host = field(default_factory=Host)
    comm: Comm = field(default_factory=Comm)
    build: Build = field(default_factory=Build)
    config: dict[str, Any] = field(default_factory=dict)
    # The parsed JSON as read, for storing the source document beside the model.
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # Added by `--monitor` (docs/schema.md "monitor"): this node's samples during the run.
    monitor: RunMonitor | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def verify_errors(self) -> int:
        """Bytes that read back wrong, over every phase that verified them (0 where nothing was checked)."""
        return 0

    @classmethod
    def read_members(cls, r: _Reader) -> dict[str, Any]:
        """The workload's own members, after the envelope; r is strict only in an ok run's document."""
        return {}


# --- ior documents ("workload": "ior") ----------------------------------------------------------------------


@dataclass(frozen=True)
class Target(_Model):
    path: str = ""
    file_system: str = ""
    files: int = 0


@dataclass(frozen=True)
class Times(_Model):
    open_s: float
    xfer_s: float
    close_s: float
    total_s: float


@dataclass(frozen=True)
class RankStat(_Model):
    rank: int
    bytes: int
    ops: int
    xfer_s: float


@dataclass(frozen=True)
class Stonewall(_Model):
    deadline_s: float
    wear_out: bool
    pairs_min: int
    pairs_max: int
    bytes_at_deadline: int
    time_s: float


@dataclass(frozen=True)
class Cache(_Model):
    o_direct: bool
    policy: str | None = None  # reads only: "evict" or "keep"
    evicted: bool | None = None
    note: str | None = None
    via: str | None = None  # reads that evicted: "backend", or "posix" (on the path: MPI-IO has no fd)

    @property
    def may_be_cache_figure(self) -> bool:
        """True when a read could have been served by this node's page cache rather than the storage."""
        if self.o_direct:
            return False
        return self.policy == "keep" or self.evicted is False


@dataclass(frozen=True)
class Fsync(_Model):
    on_close: bool
    per_write: bool


@dataclass(frozen=True)
class Verify(_Model):
    bytes_checked: int
    errors: int
    first_bad_offset: int | None
    first_bad_rank: int | None


@dataclass(frozen=True)
class Phase:
    name: str
    iteration: int
    bytes: int
    ops: int
    times: Times
    bw_bytes_per_s: float
    ops_per_s: float
    latency_ns: Latency
    per_rank: tuple[RankStat, ...]
    stonewall: Stonewall | None
    cache: Cache
    fsync: Fsync
    verify: Verify | None

    @classmethod
    def parse(cls, r: _Reader) -> Phase:
        return _read_fields(
            cls,
            r,
            per_rank=r.each("per_rank", RankStat.parse),
            times=Times.parse(r.required("times")),
            latency_ns=Latency.parse(r.required("latency_ns"), True),
            stonewall=r.optional("stonewall", Stonewall.parse),
            cache=Cache.parse(r.required("cache")),
            fsync=Fsync.parse(r.required("fsync")),
            verify=r.optional("verify", Verify.parse),
        )


@dataclass(frozen=True)
class SummaryEntry:
    name: str
    iterations: int
    bw_max_bytes_per_s: float
    bw_min_bytes_per_s: float
    bw_mean_bytes_per_s: float
    bw_stddev_bytes_per_s: float
    ops_max_per_s: float
    ops_min_per_s: float
    ops_mean_per_s: float
    ops_stddev_per_s: float
    time_mean_s: float
    bytes: int
    latency_ns: Latency

    @classmethod
    def parse(cls, r: _Reader) -> SummaryEntry:
        return _read_fields(cls, r, latency_ns=Latency.parse(r.required("latency_ns"), False))


def _string_map(r: _Reader, key: str) -> dict[str, str] | None:
    """An object of strings (MPI hints), or None when null or absent."""
    sub = r.object(key, None, nullable=True)
    if sub is None:
        return None
    for k, v in sub.obj.items():
        if not isinstance(v, str):
            raise ResultError(f"{sub.path}.{k}: expected string, got {_kind(v)}")
    return dict(sub.obj)


@dataclass(frozen=True)
class Api:
    """The backend as the run used it; for one over an MPI library (MPI-IO) also its settings and the hints
    passed to it and reported back by it at the last open (`hints`: the hints in effect)."""

    name: str = ""
    collective: bool = False
    library: str | None = None
    communicator: str | None = None
    file_view: bool = False
    preallocate: bool = False
    hints_file: str | None = None
    hints_passed: dict[str, str] | None = None
    hints: dict[str, str] | None = None

    @property
    def is_mpi(self) -> bool:
        return self.hints_passed is not None

    @classmethod
    def parse(cls, r: _Reader) -> Api:
        # Only `name` and `collective` are in every backend's object; the rest are MPI-IO's.
        return cls(
            name=r.string("name"),
            collective=r.boolean("collective"),
            library=r.string("library", None, nullable=True),
            communicator=r.string("communicator", None, nullable=True),
            file_view=bool(r.boolean("file_view", False, nullable=True)),
            preallocate=bool(r.boolean("preallocate", False, nullable=True)),
            hints_file=r.string("hints_file", None, nullable=True),
            hints_passed=_string_map(r, "hints_passed"),
            hints=_string_map(r, "hints"),
        )


@dataclass(frozen=True)
class IorDocument(Document):
    """An ior run: the files it used, a phase per access and iteration, a summary entry per access."""

    api: Api = field(default_factory=Api)  # absent from documents of iolens before the MPI-IO backend
    target: Target = field(default_factory=Target)
    phases: tuple[Phase, ...] = ()
    summary: tuple[SummaryEntry, ...] = ()

    @property
    def verify_errors(self) -> int:
        return sum(p.verify.errors for p in self.phases if p.verify is not None)

    @property
    def cache_mode(self) -> str | None:
        """The page cache before the read phases: "evict" (the engine's default) or "keep" (`--keep-cache`),
        as the config echo says (else as the read phases' policy says, O_DIRECT ones aside: they report
        "keep", having nothing to drop); None for a run without a read phase (the choice touches no other).
        """
        reads = [p for p in self.phases if p.name == "read"]
        if not reads:
            return None
        keep = self.config.get("keep-cache")
        if isinstance(keep, bool):
            return "keep" if keep else "evict"
        buffered = [p for p in reads if not p.cache.o_direct]
        return "keep" if any(p.cache.policy == "keep" for p in buffered) else "evict"

    @classmethod
    def read_members(cls, r: _Reader) -> dict[str, Any]:
        return {
            "api": r.optional("api", Api.parse) or Api(),
            "target": r.section("target", Target.parse, Target()),
            "phases": r.each("phases", Phase.parse, []),
            "summary": r.each("summary", SummaryEntry.parse, []),
        }


# --- mdtest documents ("workload": "mdtest", docs/schema.md "mdtest documents") ----------------------------

# The phases an mdtest run may report, in the order they run within an iteration.
MDTEST_PHASES = (
    "tree-create", "dir-create", "dir-stat", "dir-rename", "dir-remove",
    "file-create", "file-stat", "file-read", "file-remove", "tree-remove",
)  # fmt: skip


@dataclass(frozen=True)
class Geometry:
    """The tree each rank works in, after mdtest's rules (rounding, -I loops, -L) were applied."""

    items_per_rank: int
    items_per_dir: int
    dirs_in_tree: int
    loops: int
    depth: int
    branch: int
    leaf_only: bool
    unique_dir: bool
    paths: tuple[str, ...] = ()
    # -N as the engine used it: mdtest 4 multiplies it by the ranks per node on several nodes (blocks).
    stride: int | None = None

    @classmethod
    def parse(cls, r: _Reader) -> Geometry:
        return _read_fields(cls, r, paths=r.strings("paths"))


@dataclass(frozen=True)
class MdtestRankStat(_Model):
    rank: int
    items: int
    time_s: float


@dataclass(frozen=True)
class MdtestStonewall(_Model):
    """File creation stopped by -W: per-rank counts when the deadline hit; every rank then went on to the
    largest of them (mdtest's "Continue stonewall hit")."""

    deadline_s: float
    hit: bool
    items_min: int
    items_max: int
    items_sum_at_deadline: int
    time_s: float


@dataclass(frozen=True)
class MdtestVerify(_Model):
    files_checked: int
    bytes_checked: int
    errors: int
    first_bad_path: str | None


@dataclass(frozen=True)
class MdtestPhase:
    name: str
    iteration: int
    items: int
    time_s: float
    rate_per_s: float
    io500_time_s: float
    io500_rate_per_s: float
    latency_ns: Latency
    per_rank: tuple[MdtestRankStat, ...]
    stonewall: MdtestStonewall | None
    verify: MdtestVerify | None
    # With -N: rank r worked on the items of rank (r + owner_shift) mod ranks.
    owner_shift: int = 0
    # The number of tasks of the test it belongs to (mdtest's task ranges, -f/-l/-s); 0 in older documents.
    tasks: int | None = None

    @classmethod
    def parse(cls, r: _Reader) -> MdtestPhase:
        phase = _read_fields(
            cls,
            r,
            per_rank=r.each("per_rank", MdtestRankStat.parse),
            latency_ns=Latency.parse(r.required("latency_ns"), True),
            stonewall=r.optional("stonewall", MdtestStonewall.parse),
            verify=r.optional("verify", MdtestVerify.parse),
        )
        if phase.owner_shift < 0:
            raise ResultError(f"{r._key('owner_shift')}: must not be negative, got {phase.owner_shift}")
        return phase


@dataclass(frozen=True)
class MdtestSummary:
    """One phase over all iterations: mdtest's "SUMMARY rate" row, plus the IO500 form and latencies."""

    name: str
    iterations: int
    rate_max_per_s: float
    rate_min_per_s: float
    rate_mean_per_s: float
    rate_stddev_per_s: float
    io500_rate_mean_per_s: float
    time_mean_s: float
    items: int
    latency_ns: Latency

    @classmethod
    def parse(cls, r: _Reader) -> MdtestSummary:
        return _read_fields(cls, r, latency_ns=Latency.parse(r.required("latency_ns"), False))


@dataclass(frozen=True)
class MdtestDocument(Document):
    """An mdtest run: the tree geometry, a phase per operation and iteration, a summary per operation."""

    geometry: Geometry | None = None  # None only in a failed run's document
    phases: tuple[MdtestPhase, ...] = ()
    summary: tuple[MdtestSummary, ...] = ()

    @property
    def verify_errors(self) -> int:
        return sum(p.verify.errors for p in self.phases if p.verify is not None)

    @classmethod
    def read_members(cls, r: _Reader) -> dict[str, Any]:
        return {
            "geometry": r.section("geometry", Geometry.parse),
            "phases": r.each("phases", MdtestPhase.parse, []),
            "summary": r.each("summary", MdtestSummary.parse, []),
        }


# --- find documents ("workload": "find", docs/schema.md "find documents") ----------------------------------


@dataclass(frozen=True)
class Predicates(_Model):
    newer: str | None = None
    newer_mtime_ns: int | None = None
    size: str | None = None
    name: str | None = None

    def expression(self) -> str:
        """The predicates as find's command line would have them."""
        parts = []
        if self.newer is not None:
            parts.append(f"-newer {self.newer}")
        if self.size is not None:
            parts.append(f"-size {self.size}")
        if self.name is not None:
            parts.append(f"-name '{self.name}'")
        return " ".join(parts) or "(none: every entry matches)"


@dataclass(frozen=True)
class FindRankStat(_Model):
    rank: int
    scanned: int
    matched: int
    errors: int
    stat_calls: int
    directories: int
    time_s: float
    busy_s: float


@dataclass(frozen=True)
class FirstError(_Model):
    message: str
    rank: int


@dataclass(frozen=True)
class WorkSharing(_Model):
    levels: int
    split_entries: int
    shared_directories: int
    shared_chunks: int | None  # absent from documents of engines before the directories were streamed


@dataclass(frozen=True)
class FindStonewall(_Model):
    deadline_s: float
    hit: bool


@dataclass(frozen=True)
class FindSection:
    root: str
    file_system: str
    predicates: Predicates
    scanned: int
    matched: int
    directories: int
    stat_calls: int
    time_s: float
    rate_per_s: float
    errors: int
    first_error: FirstError | None
    work_sharing: WorkSharing
    stonewall: FindStonewall | None
    matches_file: str | None
    per_rank: tuple[FindRankStat, ...]
    latency_ns: Latency

    @property
    def kiops(self) -> float:
        """IO500's figure for the find phase: entries scanned per second / 1000."""
        return self.rate_per_s / 1000.0

    @classmethod
    def parse(cls, r: _Reader) -> FindSection:
        return _read_fields(
            cls,
            r,
            predicates=Predicates.parse(r.required("predicates")),
            first_error=r.optional("first_error", FirstError.parse),
            work_sharing=WorkSharing.parse(r.required("work_sharing")),
            stonewall=r.optional("stonewall", FindStonewall.parse),
            per_rank=r.each("per_rank", FindRankStat.parse),
            latency_ns=Latency.parse(r.required("latency_ns"), True),
        )


@dataclass(frozen=True)
class FindDocument(Document):
    """A find run: the walk's figures."""

    find: FindSection | None = None  # None only in a failed run's document (it may stop before any figure)

    @classmethod
    def read_members(cls, r: _Reader) -> dict[str, Any]:
        return {"find": r.section("find", FindSection.parse)}


# --- fio documents ("workload": "fio", docs/schema.md "fio documents") ------------------------------------

FIO_CACHE_MODES = ("cold", "hot", "asis")
FIO_DIRECTIONS = ("read", "write")


@dataclass(frozen=True)
class FioLatency(Latency):
    """The schema's LAT: a Latency with its standard deviation. The buckets are checked against count, so
    that every percentile computed from them is one the engine could have printed."""

    stddev: float = 0.0
    # fio's percentile list as the engine computed it, (p, ns): an instance's latency has these instead of
    # buckets.
    points: tuple[tuple[float, int], ...] = ()

    @classmethod
    def parse(cls, r: _Reader, with_buckets: bool, **given: Any) -> FioLatency:
        points = []
        given_points = r.array("percentiles") if "percentiles" in r.obj else []
        for i, pv in enumerate(given_points):
            if (
                not isinstance(pv, list)
                or len(pv) != 2
                or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in pv)
                or not isinstance(pv[1], int)
            ):
                raise ResultError(f"{r.path}.percentiles[{i}]: expected [percent, integer ns]")
            points.append((float(pv[0]), pv[1]))
        lat = super().parse(r, with_buckets, points=tuple(points), **given)
        assert isinstance(lat, FioLatency)
        if lat.count < 0:
            raise ResultError(f"{r._key('count')}: must not be negative, got {lat.count}")
        if lat.count and lat.min > lat.max:
            raise ResultError(f"{r.path}: min {lat.min} is larger than max {lat.max}")
        if with_buckets:
            for i, b in enumerate(lat.buckets):
                if b.low > b.high or b.count < 0:
                    raise ResultError(f"{r.path}.buckets[{i}]: not a bucket: [{b.low}, {b.high}, {b.count}]")
            held = sum(b.count for b in lat.buckets)
            if held != lat.count:
                raise ResultError(f"{r.path}.buckets: hold {held} values, but count is {lat.count}")
        return lat

    def percentile(self, p: float | str) -> int:
        """From the buckets; without buckets, the engine's own value of that point of fio's list, and for a
        point not in that list what Latency.percentile gives without buckets (max)."""
        if not self.buckets and self.count:
            q = Fraction(str(p))
            for point, value in self.points:
                if Fraction(str(point)) == q:
                    return value
        return super().percentile(p)

    @property
    def stats(self) -> tuple[int, int, float, float]:
        """(min, max, mean, stddev), all zero when nothing was measured."""
        if self.count == 0:
            return 0, 0, 0.0, 0.0
        return self.min, self.max, self.mean, self.stddev


@dataclass(frozen=True)
class FioDirection:
    """One direction (read or write) of a job, summed over every instance (the schema's DIR)."""

    ios: int
    bytes: int
    runtime_s: float
    iops: float
    bw_bytes_per_s: float
    lat_ns: FioLatency
    clat_ns: FioLatency
    slat_ns: FioLatency

    @classmethod
    def parse(cls, r: _Reader) -> FioDirection:
        return _read_fields(
            cls,
            r,
            lat_ns=FioLatency.parse(r.required("lat_ns"), True),
            clat_ns=FioLatency.parse(r.required("clat_ns"), True),
            slat_ns=FioLatency.parse(r.required("slat_ns"), True),
        )

    @property
    def used(self) -> bool:
        """The job moved data this way (fio shows a direction only then)."""
        return self.ios > 0 or self.bytes > 0


@dataclass(frozen=True)
class FioSync:
    """fsync/fdatasync calls of a job (fsync=N, fdatasync=N, end_fsync)."""

    ios: int
    lat_ns: FioLatency

    @classmethod
    def parse(cls, r: _Reader) -> FioSync:
        return _read_fields(cls, r, lat_ns=FioLatency.parse(r.required("lat_ns"), True))

    @classmethod
    def parse_instance(cls, r: _Reader) -> FioSync:
        """An instance's: its latency has fio's percentiles instead of buckets."""
        return _read_fields(cls, r, lat_ns=FioLatency.parse(r.required("lat_ns"), False))


@dataclass(frozen=True)
class FioCache(_Model):
    mode: str  # "cold" (pages dropped before the job), "hot" (pre-read) or "asis"
    direct: bool
    evicted: bool
    cache_figure: bool  # a buffered figure that measures memory (reads from the cache, unsynced writes)
    note: str | None
    reads_from_memory: bool = False  # the read figure comes from the page cache
    unsynced_writes: bool = False  # buffered writes never synced: the figure is the page cache taking them
    storage_read_bytes: int | None = None  # what the job's reads fetched from the storage (kernel's count)

    @classmethod
    def parse(cls, r: _Reader) -> FioCache:
        # Documents of older engines flagged read figures only, without these two keys.
        reads = r.boolean("reads_from_memory", None, nullable=True)
        writes = r.boolean("unsynced_writes", None, nullable=True)
        cache = _read_fields(cls, r, reads_from_memory=False, unsynced_writes=bool(writes))
        cache = replace(cache, reads_from_memory=cache.cache_figure if reads is None else reads)
        if cache.mode not in FIO_CACHE_MODES:
            raise ResultError(f"{r._key('mode')}: unknown cache mode {cache.mode!r}")
        return cache


@dataclass(frozen=True)
class FioVerify(_Model):
    mode: str
    blocks_checked: int
    errors: int
    first_bad_offset: int | None
    first_bad_file: str | None


@dataclass(frozen=True)
class FioCpu(_Model):
    """CPU time of a job's threads; the percentages are relative to elapsed × instances (fio's usr_cpu and
    sys_cpu); per_io_ns is (usr + sys) / I/Os."""

    usr_s: float
    sys_s: float
    usr_pct: float
    sys_pct: float
    ctx: int
    per_io_ns: float


@dataclass(frozen=True)
class FioGroupCpu(FioCpu):
    """A reporting group's CPU: its jobs' threads, plus the process's kernel workers (io_uring's io-wq and
    SQPOLL threads) and the waiting main thread."""

    kernel_workers_s: float
    total_s: float
    # (usr + sys + kernel workers) / I/Os: what an I/O cost with io-wq and SQPOLL time (older documents: None)
    total_per_io_ns: float | None = None


@dataclass(frozen=True)
class FioMachine(_Model):
    """Rank 0's host while a group ran, from /proc/stat: what the rest of the machine was doing."""

    cpus: int
    busy_s: float
    others_busy_s: float
    others_busy_pct: float
    steal_s: float
    note: str | None  # set when the rest of the machine was busy (>= 10%)


@dataclass(frozen=True)
class FioGroup:
    """A reporting group: jobs that ran together (a job with `stonewall` starts the next one)."""

    id: int
    jobs: tuple[int, ...]  # indexes into FioSection.jobs
    elapsed_s: float
    cpu: FioGroupCpu
    machine: FioMachine
    # seconds from the first group's start (its first job's end of ramp) to this one's start and end
    start_s: float | None = None
    end_s: float | None = None

    @classmethod
    def parse(cls, r: _Reader) -> FioGroup:
        indexes = r.array("jobs")
        for i, x in enumerate(indexes):
            if isinstance(x, bool) or not isinstance(x, int) or x < 0:
                raise ResultError(f"{r._key('jobs')}[{i}]: expected a job index, got {x!r}")
        return _read_fields(
            cls,
            r,
            jobs=tuple(indexes),
            cpu=FioGroupCpu.parse(r.required("cpu")),
            machine=FioMachine.parse(r.required("machine")),
        )


@dataclass(frozen=True)
class FioSecondDirection(_Model):
    """Completions of one direction in one second, over every instance (the schema's SEC; percentiles within
    6.25%, 0 when the second had none)."""

    ios: int
    bytes: int
    p50_ns: int
    p90_ns: int
    p99_ns: int
    p99_9_ns: int
    max_ns: int


@dataclass(frozen=True)
class FioSecond:
    t_s: int  # the end of the second, counted from the end of the ramp
    read: FioSecondDirection
    write: FioSecondDirection

    @classmethod
    def parse(cls, r: _Reader) -> FioSecond:
        return _read_fields(
            cls,
            r,
            read=FioSecondDirection.parse(r.required("read")),
            write=FioSecondDirection.parse(r.required("write")),
        )

    def direction(self, name: str) -> FioSecondDirection:
        return self.read if name == "read" else self.write


@dataclass(frozen=True)
class FioSamples(_Model):
    """One-second samples of a rate: min, max, mean, sample standard deviation, and how many there were."""

    min: float
    max: float
    mean: float
    stddev: float
    samples: int


NO_SAMPLES = FioSamples(0.0, 0.0, 0.0, 0.0, 0)
_NO_LATENCY = FioLatency(count=0, min=0, mean=0.0, p50=0, p90=0, p99=0, p99_9=0, max=0)


def _instance_latency(r: _Reader, key: str) -> FioLatency:
    """An instance's latency (no buckets; fio's percentiles); absent in documents of older engines."""
    lat = r.optional(key, lambda x: FioLatency.parse(x, False))
    return lat if lat is not None else _NO_LATENCY


@dataclass(frozen=True)
class FioInstanceDirection:
    """One direction of one instance (the schema's INST): its latencies without buckets (with fio's
    percentile list), and its one-second samples of bandwidth (KiB/s) and IOPS."""

    ios: int
    bytes: int
    runtime_s: float
    lat_ns: FioLatency
    clat_ns: FioLatency = _NO_LATENCY
    slat_ns: FioLatency = _NO_LATENCY
    bw_kib_s: FioSamples = NO_SAMPLES
    iops: FioSamples = NO_SAMPLES

    @classmethod
    def parse(cls, r: _Reader) -> FioInstanceDirection:
        return _read_fields(
            cls,
            r,
            lat_ns=FioLatency.parse(r.required("lat_ns"), False),
            clat_ns=_instance_latency(r, "clat_ns"),
            slat_ns=_instance_latency(r, "slat_ns"),
            bw_kib_s=r.optional("bw_kib_s", FioSamples.parse) or NO_SAMPLES,
            iops=r.optional("iops", FioSamples.parse) or NO_SAMPLES,
        )


def _counts(r: _Reader, key: str) -> dict[str, dict[str, int]]:
    """{unit: {label: count}} (an instance's clat_dist)."""
    out: dict[str, dict[str, int]] = {}
    sub = r.object(key, None, nullable=True)
    if sub is None:
        return out
    for unit in sub.obj:
        inner = sub.required(unit)
        out[unit] = {label: inner.integer(label) for label in inner.obj}
    return out


@dataclass(frozen=True)
class FioInstance:
    """One instance of a job: one thread of one rank, with its own backend context."""

    rank: int
    instance: int
    read: FioInstanceDirection
    write: FioInstanceDirection
    usr_s: float
    sys_s: float
    elapsed_s: float
    ctx: int = 0
    sync: FioSync | None = None
    # fio's latency distribution of the instance's completions: {"ns"|"us"|"ms": {edge label: count}}
    clat_dist: dict[str, dict[str, int]] = field(default_factory=dict, compare=False)

    @classmethod
    def parse(cls, r: _Reader) -> FioInstance:
        return _read_fields(
            cls,
            r,
            read=FioInstanceDirection.parse(r.required("read")),
            write=FioInstanceDirection.parse(r.required("write")),
            ctx=r.integer("ctx", 0, nullable=True) or 0,
            sync=r.optional("sync", FioSync.parse_instance),
            clat_dist=_counts(r, "clat_dist"),
        )

    def direction(self, name: str) -> FioInstanceDirection:
        return self.read if name == "read" else self.write


@dataclass(frozen=True)
class FioBackend(_Model):
    requests: int
    fixed_bufs: int
    fixed_files: int
    resubmits: int
    submit_calls: int
    waits: int


def _truthy(value: Any) -> bool:
    """A fio flag as the engine echoes it (true, 1, "1", "yes", "on")."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return value is True or (isinstance(value, int | float) and value != 0)


@dataclass(frozen=True)
class FioJob:
    """A job section (or --name), its figures summed over every instance (numjobs per rank × ranks)."""

    name: str
    group: int
    instances: int
    ioengine: str
    file_system: str
    elapsed_s: float
    ramp_s: float
    cache: FioCache
    read: FioDirection
    write: FioDirection
    sync: FioSync
    verify: FioVerify | None
    cpu: FioCpu
    backend: FioBackend
    files: tuple[str, ...] = ()
    per_second: tuple[FioSecond, ...] = ()
    per_instance: tuple[FioInstance, ...] = ()
    start_s: float | None = None  # from the first group's start: the end of this job's ramp
    end_s: float | None = None  # its last completion (or end_fsync)
    # The job's effective options (config.jobs[i].options): fio's names, values after [global] inheritance.
    options: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def parse(cls, r: _Reader) -> FioJob:
        job = _read_fields(
            cls,
            r,
            cache=FioCache.parse(r.required("cache")),
            read=FioDirection.parse(r.required("read")),
            write=FioDirection.parse(r.required("write")),
            sync=FioSync.parse(r.required("sync")),
            verify=r.optional("verify", FioVerify.parse),
            cpu=FioCpu.parse(r.required("cpu")),
            backend=FioBackend.parse(r.required("backend")),
            files=r.strings("files"),
            per_second=r.each("per_second", FioSecond.parse),
            per_instance=r.each("per_instance", FioInstance.parse),
            options={},
        )
        if job.instances < 1:
            raise ResultError(f"{r._key('instances')}: must be at least 1, got {job.instances}")
        return job

    def direction(self, name: str) -> FioDirection:
        return self.read if name == "read" else self.write

    @property
    def directions(self) -> tuple[str, ...]:
        """The directions the job moved data in, in fio's order."""
        return tuple(d for d in FIO_DIRECTIONS if self.direction(d).used)

    @property
    def group_reporting(self) -> bool:
        """fio's group_reporting: the job is reported as one entry, else one entry per instance."""
        return _truthy(self.options.get("group_reporting"))

    @property
    def fixed_bufs_missed(self) -> int:
        """Requests that went without a registered buffer although fixedbufs (io_uring, on by default) asked
        for them: registering the buffers failed (over the locked-memory limit, `ulimit -l`)."""
        if self.ioengine != "io_uring" or not _truthy(self.options.get("fixedbufs", True)):
            return 0
        return max(self.backend.requests - self.backend.fixed_bufs, 0)

    @property
    def synchronous(self) -> bool:
        """The backend completes each I/O in the submitting call: no submission latency was measured, and
        clat equals lat."""
        return self.read.slat_ns.max == 0 and self.write.slat_ns.max == 0

    @property
    def ios(self) -> int:
        return self.read.ios + self.write.ios


@dataclass(frozen=True)
class FioJobConfig:
    """A job as iolens understood it (config.jobs[i]): its name, group and effective options."""

    name: str
    group: int
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, r: _Reader) -> FioJobConfig:
        options = r.required("options")
        return _read_fields(cls, r, options=dict(options.obj))


@dataclass(frozen=True)
class FioSection:
    groups: tuple[FioGroup, ...]
    jobs: tuple[FioJob, ...]

    @classmethod
    def parse(cls, r: _Reader) -> FioSection:
        section = cls(groups=r.each("groups", FioGroup.parse), jobs=r.each("jobs", FioJob.parse))
        for gi, g in enumerate(section.groups):
            for ji, index in enumerate(g.jobs):
                where = f"{r._key('groups')}[{gi}].jobs[{ji}]"
                if index >= len(section.jobs):
                    raise ResultError(f"{where}: job {index} does not exist ({len(section.jobs)} jobs)")
                if section.jobs[index].group != g.id:
                    raise ResultError(
                        f"{where}: job {index} ({section.jobs[index].name!r}) is in group "
                        f"{section.jobs[index].group}, not {g.id}"
                    )
        return section

    def group(self, group_id: int) -> FioGroup | None:
        return next((g for g in self.groups if g.id == group_id), None)

    def jobs_of(self, group: FioGroup) -> tuple[FioJob, ...]:
        return tuple(self.jobs[i] for i in group.jobs)


@dataclass(frozen=True)
class FioDocument(Document):
    """A fio-class run: its job list (config.jobs) and, for a run that got that far, every job's figures and
    every reporting group's (fio)."""

    jobs_config: tuple[FioJobConfig, ...] = ()
    fio: FioSection | None = None  # None only in a failed run's document

    @property
    def verify_errors(self) -> int:
        if self.fio is None:
            return 0
        return sum(j.verify.errors for j in self.fio.jobs if j.verify is not None)

    @property
    def cache_mode(self) -> str | None:
        """The page cache before the run's buffered reads, in the store's terms: "evict" when every job that
        read through the cache had its files' pages dropped first (cache=cold, fio's invalidate=1), "keep"
        when any kept or filled them (asis, hot, pre_read); None when no job read through the cache (O_DIRECT
        or writes only): the choice touched nothing."""
        modes = {j.cache.mode for j in self.jobs if j.read.ios and not j.cache.direct}
        if not modes:
            return None
        return "evict" if modes == {"cold"} else "keep"

    @property
    def jobs(self) -> tuple[FioJob, ...]:
        return self.fio.jobs if self.fio is not None else ()

    @classmethod
    def read_members(cls, r: _Reader) -> dict[str, Any]:
        config = r.section("config", lambda c: c, None)
        jobs_config: tuple[FioJobConfig, ...] = ()
        if config is not None:
            jobs_config = config.each("jobs", FioJobConfig.parse, [])
        fio = r.section("fio", FioSection.parse)
        # A failed run may stop before its job list is in the config; an ok run's must match its jobs.
        if fio is not None and (jobs_config or r.strict):
            fio = replace(fio, jobs=_with_options(fio.jobs, jobs_config))
        return {"jobs_config": jobs_config, "fio": fio}


def _with_options(jobs: tuple[FioJob, ...], configs: tuple[FioJobConfig, ...]) -> tuple[FioJob, ...]:
    """Each job with its options from config.jobs: the same list, in the same order (docs/schema.md)."""
    if len(configs) != len(jobs):
        raise ResultError(f"config.jobs: {len(configs)} jobs, but fio.jobs has {len(jobs)}")
    for i, (job, cfg) in enumerate(zip(jobs, configs, strict=True)):
        if (job.name, job.group) != (cfg.name, cfg.group):
            raise ResultError(
                f"fio.jobs[{i}]: {job.name!r} in group {job.group}, but config.jobs[{i}] is "
                f"{cfg.name!r} in group {cfg.group}"
            )
    return tuple(replace(job, options=cfg.options) for job, cfg in zip(jobs, configs, strict=True))


# --- io500 documents ("workload": "io500", docs/schema.md "io500 documents") --------------------------------
# Written by the Python driver (iolens io500), not the engine: one document for the whole run, beside the
# engine's document of every phase.


@dataclass(frozen=True)
class Io500Score(_Model):
    bw_gib_per_s: float
    md_kiops: float
    score: float
    valid: bool
    hash: str


@dataclass(frozen=True)
class Io500Phase:
    name: str
    status: str  # "ok", "failed", "skipped", "not-implemented"
    scored: bool
    unit: str | None
    score: float | None
    valid: bool
    runtime_s: float | None
    workload: str | None
    engine_document: str | None
    skip_reason: str | None
    error: str | None
    invalid_reasons: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    figures: dict[str, Any] = field(default_factory=dict)
    started_at: str | None = None  # ISO-8601 UTC; null for a phase that did not run
    ended_at: str | None = None
    cache: Cache | None = None  # ior reads: the engine's record of the page cache (absent in older documents)

    @classmethod
    def parse(cls, r: _Reader) -> Io500Phase:
        figures = r.object("figures", {})
        return _read_fields(
            cls,
            r,
            invalid_reasons=r.strings("invalid_reasons"),
            command=r.strings("command", []),
            figures=dict(figures.obj) if isinstance(figures, _Reader) else {},
            cache=r.optional("cache", Cache.parse),
        )


@dataclass(frozen=True)
class Io500Section:
    version: str
    mode: str
    quick: bool
    np: int
    launcher: str
    timestamp: str
    datadir: str
    resultdir: str
    stonewall_s: int
    valid: bool
    score: Io500Score
    extended_score: Io500Score | None
    phases: tuple[Io500Phase, ...] = ()
    invalid_reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    left_behind: tuple[str, ...] = ()
    # The page cache before the ior read phases: "evict" or "keep" (--keep-cache); absent (None) in documents
    # written before iolens recorded it, when it was always "evict".
    cache_mode: str | None = None

    @classmethod
    def parse(cls, r: _Reader) -> Io500Section:
        return _read_fields(
            cls,
            r,
            score=Io500Score.parse(r.required("score")),
            extended_score=r.optional("extended_score", Io500Score.parse),
            phases=r.each("phases", Io500Phase.parse),
            invalid_reasons=r.strings("invalid_reasons"),
            notes=r.strings("notes", []),
            left_behind=r.strings("left_behind", []),
        )

    def phase(self, name: str) -> Io500Phase | None:
        return next((p for p in self.phases if p.name == name), None)


@dataclass(frozen=True)
class Io500Document(Document):
    """An IO500 run: every phase's figure, validity and engine document, and the scores."""

    io500: Io500Section | None = None  # None only in a failed run's document

    @classmethod
    def read_members(cls, r: _Reader) -> dict[str, Any]:
        return {"io500": r.section("io500", Io500Section.parse)}


# --- the "monitor" object (docs/schema.md "monitor"), on any workload's document ---------------------------
# Written by the Python side after the run (iolens.monitor.attach); the samples are kept as read.


@dataclass(frozen=True)
class MonitorWindow:
    """A phase's time window on the samples' clock (Unix seconds), the samples covering it, its figures."""

    name: str
    iteration: int | None
    start: float
    end: float
    placed: str  # "progress", "estimate", "document"
    samples: tuple[int, int] | None
    figures: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, r: _Reader) -> MonitorWindow:
        span = r.obj.get("samples")
        samples = None
        if isinstance(span, list) and len(span) == 2 and all(isinstance(x, int) for x in span):
            samples = (span[0], span[1])
        elif span is not None:
            raise ResultError(f"{r._key('samples')}: expected [first, last] or null")
        figures = r.object("figures", None, nullable=True)
        return cls(
            name=r.string("name"),
            iteration=r.integer("iteration", None, nullable=True),
            start=r.number("start"),
            end=r.number("end"),
            placed=r.string("placed", ""),
            samples=samples,
            figures=dict(figures.obj) if figures is not None else {},
        )


def _sample_records(r: _Reader) -> tuple[dict[str, Any], ...]:
    samples = r.array("samples")
    for i, x in enumerate(samples):
        if not isinstance(x, dict) or not isinstance(x.get("time"), int | float):
            raise ResultError(f"{r._key('samples')}[{i}]: expected a sample record with a time")
    return tuple(samples)


def _sources(r: _Reader) -> dict[str, Any]:
    sources = r.object("sources", None, nullable=True)
    return dict(sources.obj) if sources is not None else {}


@dataclass(frozen=True)
class MonitorNode:
    """One node of an MPI run, sampled by its local rank 0 (`monitor.nodes[HOST]`)."""

    host: str
    interval: str
    complete: bool
    sources: dict[str, Any]
    windows: tuple[MonitorWindow, ...]
    samples: tuple[dict[str, Any], ...]
    events: tuple[dict[str, Any], ...] = ()

    @classmethod
    def parse(cls, r: _Reader) -> MonitorNode:
        return cls(
            host=r.string("host"),
            interval=r.string("interval", ""),
            complete=r.boolean("complete", True),
            sources=_sources(r),
            windows=r.each("windows", MonitorWindow.parse),
            samples=_sample_records(r),
            events=tuple(e for e in r.array("events", []) if isinstance(e, dict)),
        )


@dataclass(frozen=True)
class RunMonitor:
    host: str
    interval: str
    started: float
    ended: float
    note: str | None
    sources: dict[str, Any]
    windows: tuple[MonitorWindow, ...]
    samples: tuple[dict[str, Any], ...]
    events: tuple[dict[str, Any], ...] = ()
    # Under MPI: each node's own samples, by host.
    nodes: dict[str, MonitorNode] = field(default_factory=dict)

    @classmethod
    def parse(cls, r: _Reader) -> RunMonitor:
        nodes = r.object("nodes", None, nullable=True)
        return cls(
            host=r.string("host"),
            interval=r.string("interval", ""),
            started=r.number("started"),
            ended=r.number("ended"),
            note=r.string("note", None, nullable=True),
            sources=_sources(r),
            windows=r.each("windows", MonitorWindow.parse),
            samples=_sample_records(r),
            events=tuple(e for e in r.array("events", []) if isinstance(e, dict)),
            nodes={k: MonitorNode.parse(nodes.required(k)) for k in nodes.obj} if nodes is not None else {},
        )


# --- md-workbench documents ("workload": "md-workbench", docs/schema.md "md-workbench documents") -----------

MDWB_OPS = ("dset_create", "dset_delete", "obj_create", "obj_read", "obj_stat", "obj_delete")


@dataclass(frozen=True)
class MdwbRankStat(_Model):
    rank: int
    time_s: float


@dataclass(frozen=True)
class MdwbPhase:
    """One md-workbench phase as the job saw it: precreate, one benchmark iteration, or cleanup."""

    name: str  # "precreate", "benchmark", "cleanup"
    iteration: int
    waiting_factor: float
    cut_short: bool
    time_s: float  # the slowest rank's time
    time_min_s: float
    time_mean_s: float
    time_stddev_s: float
    rate_per_s: float | None  # md-workbench's rate (iops/s); null when the time was 0
    objects: int
    max_op_time_s: float
    stonewall_iterations: int
    errors: int
    ops: dict[str, int]
    op_errors: dict[str, int]
    latency_ns: dict[str, Latency]  # "create", "read", "stat", "delete": the ones the phase did
    per_rank: tuple[MdwbRankStat, ...]

    @classmethod
    def parse(cls, r: _Reader) -> MdwbPhase:
        def counts(key: str) -> dict[str, int]:
            sub = r.required(key)
            return {op: sub.integer(op) for op in MDWB_OPS}

        lat = r.required("latency_ns")
        latency = {
            name: Latency.parse(lat.required(name), False) for name in ("create", "read", "stat", "delete")
            if name in lat.obj
        }  # fmt: skip
        return _read_fields(
            cls,
            r,
            ops=counts("ops"),
            op_errors=counts("op_errors"),
            latency_ns=latency,
            per_rank=r.each("per_rank", MdwbRankStat.parse, []),
        )


@dataclass(frozen=True)
class MdwbSummary(_Model):
    seed: int
    start_index: int
    end_index: int
    precreate: bool
    benchmark: bool
    cleanup: bool
    verify_bytes: int
    verify_errors: int
    first_bad_path: str | None = None


@dataclass(frozen=True)
class MdworkbenchDocument(Document):
    """An md-workbench run: its phases in order (precreate, benchmark iterations, cleanup)."""

    md_workbench: MdwbSummary | None = None  # None only in a failed run's document
    phases: tuple[MdwbPhase, ...] = ()
    errors: int = 0

    @property
    def verify_errors(self) -> int:
        return self.md_workbench.verify_errors if self.md_workbench is not None else 0

    def benchmarks(self) -> tuple[MdwbPhase, ...]:
        return tuple(p for p in self.phases if p.name == "benchmark")

    @classmethod
    def read_members(cls, r: _Reader) -> dict[str, Any]:
        return {
            "md_workbench": r.section("md_workbench", MdwbSummary.parse),
            "phases": r.each("phases", MdwbPhase.parse, []),
            "errors": r.integer("errors", 0),
        }


# --- reading a document -------------------------------------------------------------------------------------

# The model of each workload's document, by the document's `workload`.
DOCUMENT_TYPES: dict[str, type[Document]] = {
    "ior": IorDocument,
    "mdtest": MdtestDocument,
    "find": FindDocument,
    "io500": Io500Document,
    "fio": FioDocument,
    "md-workbench": MdworkbenchDocument,
}


def _workload_names() -> str:
    *first, last = DOCUMENT_TYPES
    return f"{', '.join(first)} or {last}" if first else last


def parse(obj: Any) -> Document:
    """The model of a parsed JSON document, of the DOCUMENT_TYPES class its `workload` names; raise
    ResultError naming the first key that is wrong."""
    if not isinstance(obj, dict):
        raise ResultError(f"not a result document: expected a JSON object, got {_kind(obj)}")
    version = obj.get("schema_version")
    if version is None:
        raise ResultError("not a result document: no schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or version not in SCHEMA_VERSIONS:
        known = ", ".join(str(v) for v in SCHEMA_VERSIONS)
        raise ResultError(
            f"unsupported schema_version {version!r} (this iolens reads {known}); "
            "the engine and the Python package are from different versions"
        )
    top = _Reader(obj, "")
    status = top.string("status")
    if status not in ("ok", "failed"):
        raise ResultError(f"status: unknown value {status!r}")
    error = top.optional("error", ErrorInfo.parse)
    if status == "failed" and error is None:
        raise ResultError("status is 'failed' but the document has no error object")
    # A failed run writes what it knew when it stopped; only an ok run must have every section.
    r = _Reader(obj, "", strict=status == "ok")
    workload = r.string("workload", "")
    # Only a failed run's document may lack `workload`; its envelope is all there is to read.
    kind = DOCUMENT_TYPES.get(workload or "ior")
    if kind is None:
        # Read as another workload's, the document would fail on some member, far from the real reason.
        raise ResultError(f"workload: {workload!r} is not an {_workload_names()} document")
    return kind(
        schema_version=version,
        tool=r.string("tool"),
        version=r.string("version", ""),
        workload=workload,
        status=status,
        error=error,
        command=r.strings("command", []),
        started_at=r.string("started_at", ""),
        ended_at=r.string("ended_at", ""),
        host=r.section("host", Host.parse, Host()),
        comm=r.section("comm", Comm.parse, Comm()),
        build=r.section("build", Build.parse, Build()),
        config=r.section("config", lambda c: dict(c.obj), {}),
        raw=obj,
        monitor=r.optional("monitor", RunMonitor.parse),
        **kind.read_members(r),
    )


def failure_document(
    workload: str,
    message: str,
    command: Sequence[str],
    comm_kind: str,
    ranks: int,
    started_at: str,
    ended_at: str,
) -> dict[str, Any]:
    """The document of a run whose engine wrote none (a rank died under mpirun/srun before rank 0 could):
    the envelope with status "failed" and the error, no figures (docs/schema.md, "Failed runs")."""
    uname = os.uname()
    return {
        "schema_version": max(SCHEMA_VERSIONS),
        "tool": "iolens",
        "version": __version__,
        "workload": workload,
        "status": "failed",
        "error": {"message": message, "rank": None, "phase": None},
        "command": list(command),
        "started_at": started_at,
        "ended_at": ended_at,
        "host": {"hostname": uname.nodename, "kernel": uname.release},
        "comm": {"kind": comm_kind, "ranks": ranks},
        "phases": [],
    }


def _looks_truncated(text: str) -> bool:
    """True when the text ends inside a string or with brackets still open: a document cut short."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
    return in_string or depth > 0


def loads(text: str, source: str = "result document") -> Document:
    if not text.strip():
        raise ResultError(f"{source}: empty (the engine wrote nothing)")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = " (truncated?)" if _looks_truncated(text) else ""
        raise ResultError(
            f"{source}: not valid JSON{hint}: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    try:
        return parse(obj)
    except ResultError as exc:
        raise ResultError(f"{source}: {exc}") from None


def load(path: str | Path) -> Document:
    """Read and check a result document file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultError(f"{p}: cannot read: {exc}") from None
    return loads(text, str(p))
