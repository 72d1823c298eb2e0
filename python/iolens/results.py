"""Typed model of the engine's result document (docs/schema.md): the one place that knows the schema.

Everything else reads a Document, never the raw JSON. Reading is strict about what the schema requires
(so a broken engine is noticed here, not as a KeyError in a table) and tolerant of keys it does not know
(a newer engine may add fields within the same schema_version).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class ErrorInfo:
    message: str
    rank: int | None
    phase: str | None

    @classmethod
    def parse(cls, r: _Reader) -> ErrorInfo:
        return cls(
            message=r.string("message"),
            rank=r.integer("rank", None, nullable=True),
            phase=r.string("phase", None, nullable=True),
        )


@dataclass(frozen=True)
class Host:
    hostname: str = ""
    kernel: str = ""

    @classmethod
    def parse(cls, r: _Reader) -> Host:
        return cls(hostname=r.string("hostname"), kernel=r.string("kernel"))


@dataclass(frozen=True)
class Comm:
    kind: str = "local"
    ranks: int = 0
    nodes: int = 0
    tasks_per_node: int = 0
    max_clock_offset_ns: int = 0

    @classmethod
    def parse(cls, r: _Reader) -> Comm:
        return cls(
            kind=r.string("kind"),
            ranks=r.integer("ranks"),
            nodes=r.integer("nodes"),
            tasks_per_node=r.integer("tasks_per_node"),
            max_clock_offset_ns=r.integer("max_clock_offset_ns"),
        )


@dataclass(frozen=True)
class Build:
    mpi: bool = False
    liburing: bool = False

    @classmethod
    def parse(cls, r: _Reader) -> Build:
        return cls(mpi=r.boolean("mpi"), liburing=r.boolean("liburing"))


@dataclass(frozen=True)
class Target:
    path: str = ""
    file_system: str = ""
    files: int = 0

    @classmethod
    def parse(cls, r: _Reader) -> Target:
        return cls(path=r.string("path"), file_system=r.string("file_system"), files=r.integer("files"))


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
        return cls(
            count=r.integer("count"),
            min=r.integer("min"),
            mean=r.number("mean"),
            p50=r.integer("p50"),
            p90=r.integer("p90"),
            p99=r.integer("p99"),
            p99_9=r.integer("p99_9"),
            max=r.integer("max"),
            buckets=tuple(buckets),
        )


@dataclass(frozen=True)
class Times:
    open_s: float
    xfer_s: float
    close_s: float
    total_s: float

    @classmethod
    def parse(cls, r: _Reader) -> Times:
        return cls(
            open_s=r.number("open_s"),
            xfer_s=r.number("xfer_s"),
            close_s=r.number("close_s"),
            total_s=r.number("total_s"),
        )


@dataclass(frozen=True)
class RankStat:
    rank: int
    bytes: int
    ops: int
    xfer_s: float

    @classmethod
    def parse(cls, r: _Reader) -> RankStat:
        return cls(
            rank=r.integer("rank"), bytes=r.integer("bytes"), ops=r.integer("ops"), xfer_s=r.number("xfer_s")
        )


@dataclass(frozen=True)
class Stonewall:
    deadline_s: float
    wear_out: bool
    pairs_min: int
    pairs_max: int
    bytes_at_deadline: int
    time_s: float

    @classmethod
    def parse(cls, r: _Reader) -> Stonewall:
        return cls(
            deadline_s=r.number("deadline_s"),
            wear_out=r.boolean("wear_out"),
            pairs_min=r.integer("pairs_min"),
            pairs_max=r.integer("pairs_max"),
            bytes_at_deadline=r.integer("bytes_at_deadline"),
            time_s=r.number("time_s"),
        )


@dataclass(frozen=True)
class Cache:
    o_direct: bool
    policy: str | None = None  # reads only: "evict" or "keep"
    evicted: bool | None = None
    note: str | None = None

    @classmethod
    def parse(cls, r: _Reader) -> Cache:
        return cls(
            o_direct=r.boolean("o_direct"),
            policy=r.string("policy", None, nullable=True),
            evicted=r.boolean("evicted", None, nullable=True),
            note=r.string("note", None, nullable=True),
        )

    @property
    def may_be_cache_figure(self) -> bool:
        """True when a read could have been served by this node's page cache rather than the storage."""
        if self.o_direct:
            return False
        return self.policy == "keep" or self.evicted is False


@dataclass(frozen=True)
class Fsync:
    on_close: bool
    per_write: bool

    @classmethod
    def parse(cls, r: _Reader) -> Fsync:
        return cls(on_close=r.boolean("on_close"), per_write=r.boolean("per_write"))


@dataclass(frozen=True)
class Verify:
    bytes_checked: int
    errors: int
    first_bad_offset: int | None
    first_bad_rank: int | None

    @classmethod
    def parse(cls, r: _Reader) -> Verify:
        return cls(
            bytes_checked=r.integer("bytes_checked"),
            errors=r.integer("errors"),
            first_bad_offset=r.integer("first_bad_offset", None, nullable=True),
            first_bad_rank=r.integer("first_bad_rank", None, nullable=True),
        )


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
        return cls(
            name=r.string("name"),
            iteration=r.integer("iteration"),
            bytes=r.integer("bytes"),
            ops=r.integer("ops"),
            times=Times.parse(_req(r.object("times"))),
            bw_bytes_per_s=r.number("bw_bytes_per_s"),
            ops_per_s=r.number("ops_per_s"),
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
        f = r.number
        return cls(
            name=r.string("name"),
            iterations=r.integer("iterations"),
            bw_max_bytes_per_s=f("bw_max_bytes_per_s"),
            bw_min_bytes_per_s=f("bw_min_bytes_per_s"),
            bw_mean_bytes_per_s=f("bw_mean_bytes_per_s"),
            bw_stddev_bytes_per_s=f("bw_stddev_bytes_per_s"),
            ops_max_per_s=f("ops_max_per_s"),
            ops_min_per_s=f("ops_min_per_s"),
            ops_mean_per_s=f("ops_mean_per_s"),
            ops_stddev_per_s=f("ops_stddev_per_s"),
            time_mean_s=f("time_mean_s"),
            bytes=r.integer("bytes"),
            latency_ns=Latency.parse(_req(r.object("latency_ns")), False),
        )


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


def parse(obj: Any) -> Document:
    """Build a Document from parsed JSON; raise ResultError naming the first key that is wrong."""
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
    return Document(
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
        target=section("target", Target),
        phases=tuple(Phase.parse(_Reader(p, f"phases[{i}]")) for i, p in enumerate(r.array("phases", []))),
        summary=tuple(
            SummaryEntry.parse(_Reader(s, f"summary[{i}]")) for i, s in enumerate(r.array("summary", []))
        ),
        raw=obj,
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
