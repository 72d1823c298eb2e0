"""Typed model of the engine's result document (docs/schema.md): the one place that knows the schema.

Everything else reads a Document, never the raw JSON. Reading is strict about what the schema requires
(so a broken engine is noticed here, not as a KeyError in a table) and tolerant of keys it does not know
(a newer engine may add fields within the same schema_version).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

SCHEMA_VERSIONS = (1,)


class ResultError(Exception):
    """The document is missing, unreadable, of an unknown schema version, or not what the schema says."""


_MISSING = object()


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
        if value is None or value is default:
            return None if value is None else _Reader(value, self._key(key), self.strict)
        return _Reader(value, self._key(key), self.strict)

    def array(self, key: str, default: Any = _MISSING) -> list[Any]:
        return self._get(key, (list,), default, False)


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
        values[f.name] = read(r, f.name, None, nullable=True) if optional == "None" else read(r, f.name)
    return cls(**values, **given)


_M = TypeVar("_M", bound="_Model")


class _Model:
    """A part of the document made only of scalar fields, each read by its declared type (_read_fields)."""

    @classmethod
    def parse(cls: type[_M], r: _Reader) -> _M:
        return _read_fields(cls, r)


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
class Target(_Model):
    path: str = ""
    file_system: str = ""
    files: int = 0


@dataclass(frozen=True)
class Bucket:
    low: int
    high: int
    count: int


@dataclass(frozen=True)
class Latency:
    """Per-transfer latency in integer nanoseconds."""

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
    def parse(cls, r: _Reader, with_buckets: bool) -> Latency:
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
        return _read_fields(cls, r, buckets=tuple(buckets))


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
        sw = r.object("stonewall", None, nullable=True)
        vf = r.object("verify", None, nullable=True)
        per_rank = tuple(
            RankStat.parse(_Reader(x, f"{r.path}.per_rank[{i}]")) for i, x in enumerate(r.array("per_rank"))
        )
        return _read_fields(
            cls,
            r,
            times=Times.parse(_req(r.object("times"))),
            latency_ns=Latency.parse(_req(r.object("latency_ns")), True),
            per_rank=per_rank,
            stonewall=Stonewall.parse(sw) if sw else None,
            cache=Cache.parse(_req(r.object("cache"))),
            fsync=Fsync.parse(_req(r.object("fsync"))),
            verify=Verify.parse(vf) if vf else None,
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
        return _read_fields(cls, r, latency_ns=Latency.parse(_req(r.object("latency_ns")), False))


@dataclass(frozen=True)
class Document:
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
    target: Target = field(default_factory=Target)
    phases: tuple[Phase, ...] = ()
    summary: tuple[SummaryEntry, ...] = ()
    # The parsed JSON as read, for storing the source document beside the model.
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _req(r: _Reader | None) -> _Reader:
    assert r is not None  # only called where the key is required, so _Reader raised already
    return r

# --- mdtest documents ("workload": "mdtest", docs/schema.md "mdtest documents") ----------------------------

# The phases an mdtest run may report, in the order they run within an iteration.
MDTEST_PHASES = (
    "tree-create", "dir-create", "dir-stat", "dir-remove",
    "file-create", "file-stat", "file-read", "file-remove", "tree-remove",
)  # fmt: skip


def _strings(r: _Reader, key: str) -> tuple[str, ...]:
    values = r.array(key)
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise ResultError(f"{r._key(key)}[{i}]: expected string, got {_kind(v)}")
    return tuple(values)


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

    @classmethod
    def parse(cls, r: _Reader) -> Geometry:
        return _read_fields(cls, r, paths=_strings(r, "paths"))


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

    @classmethod
    def parse(cls, r: _Reader) -> MdtestPhase:
        sw = r.object("stonewall", None, nullable=True)
        vf = r.object("verify", None, nullable=True)
        per_rank = tuple(
            MdtestRankStat.parse(_Reader(x, f"{r.path}.per_rank[{i}]"))
            for i, x in enumerate(r.array("per_rank"))
        )
        shift = r.integer("owner_shift")
        if shift < 0:
            raise ResultError(f"{r._key('owner_shift')}: must not be negative, got {shift}")
        return _read_fields(
            cls,
            r,
            latency_ns=Latency.parse(_req(r.object("latency_ns")), True),
            per_rank=per_rank,
            stonewall=MdtestStonewall.parse(sw) if sw else None,
            verify=MdtestVerify.parse(vf) if vf else None,
            owner_shift=shift,
        )


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
        return _read_fields(cls, r, latency_ns=Latency.parse(_req(r.object("latency_ns")), False))


@dataclass(frozen=True)
class MdtestDocument:
    """An mdtest run: the same envelope as Document, then the tree geometry and item phases."""

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
    geometry: Geometry | None = None
    phases: tuple[MdtestPhase, ...] = ()
    summary: tuple[MdtestSummary, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


# Whatever results.load() may return; `workload` says which.
AnyDocument = Document | MdtestDocument


def _parse_mdtest(obj: dict[str, Any], envelope: Document) -> MdtestDocument:
    """The mdtest parts of a document whose envelope parse() has read and checked already."""
    r = _Reader(obj, "", strict=envelope.ok)
    geo = r.object("geometry", None)
    return MdtestDocument(
        schema_version=envelope.schema_version,
        tool=envelope.tool,
        version=envelope.version,
        workload=envelope.workload,
        status=envelope.status,
        error=envelope.error,
        command=envelope.command,
        started_at=envelope.started_at,
        ended_at=envelope.ended_at,
        host=envelope.host,
        comm=envelope.comm,
        build=envelope.build,
        config=envelope.config,
        geometry=Geometry.parse(geo) if geo is not None else None,
        phases=tuple(
            MdtestPhase.parse(_Reader(p, f"phases[{i}]")) for i, p in enumerate(r.array("phases", []))
        ),
        summary=tuple(
            MdtestSummary.parse(_Reader(s, f"summary[{i}]")) for i, s in enumerate(r.array("summary", []))
        ),
        raw=obj,
    )


def parse(obj: Any) -> AnyDocument:
    """Build a Document (an MdtestDocument for `"workload": "mdtest"`) from parsed JSON; raise ResultError
    naming the first key that is wrong."""
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
    err = top.object("error", None, nullable=True)
    error = ErrorInfo.parse(err) if err else None
    if status == "failed" and error is None:
        raise ResultError("status is 'failed' but the document has no error object")
    # A failed run writes what it knew when it stopped; only an ok run must have every section.
    r = _Reader(obj, "", strict=status == "ok")

    def section(key: str, cls: Any) -> Any:
        sub = r.object(key, None)
        return cls.parse(sub) if sub is not None else cls()

    command = r.array("command", [])
    if not all(isinstance(c, str) for c in command):
        raise ResultError("command: expected an array of strings")
    envelope = Document(
        schema_version=version,
        tool=r.string("tool"),
        version=r.string("version", ""),
        workload=r.string("workload", ""),
        status=status,
        error=error,
        command=tuple(command),
        started_at=r.string("started_at", ""),
        ended_at=r.string("ended_at", ""),
        host=section("host", Host),
        comm=section("comm", Comm),
        build=section("build", Build),
        config=dict(_req(r.object("config", {})).obj),
        raw=obj,
    )
    if envelope.workload == "mdtest":
        return _parse_mdtest(obj, envelope)
    if envelope.workload not in ("ior", ""):
        # Read as ior, another workload's document would fail on some phase key, far from the real reason.
        raise ResultError(f"workload: {envelope.workload!r} is not an ior or mdtest document")
    return replace(
        envelope,
        target=section("target", Target),
        phases=tuple(Phase.parse(_Reader(p, f"phases[{i}]")) for i, p in enumerate(r.array("phases", []))),
        summary=tuple(
            SummaryEntry.parse(_Reader(s, f"summary[{i}]")) for i, s in enumerate(r.array("summary", []))
        ),
    )


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


def loads(text: str, source: str = "result document") -> AnyDocument:
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


def load(path: str | Path) -> AnyDocument:
    """Read and check a result document file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultError(f"{p}: cannot read: {exc}") from None
    return loads(text, str(p))
