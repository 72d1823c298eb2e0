"""Typed model of a find run's result document ("workload": "find", docs/schema.md "find documents").

The envelope (status, error, host, comm, build, config) is read with the same pieces as every other document
(iolens.results); the `find` member is what this module adds. Strict where the schema requires a key in an
ok run, tolerant of keys it does not know.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolens.results import SCHEMA_VERSIONS, Build, Comm, ErrorInfo, Host, Latency, ResultError, _Reader


@dataclass(frozen=True)
class Predicates:
    newer: str | None = None
    newer_mtime_ns: int | None = None
    size: str | None = None
    name: str | None = None

    @classmethod
    def parse(cls, r: _Reader) -> Predicates:
        return cls(
            newer=r.string("newer", None, nullable=True),
            newer_mtime_ns=r.integer("newer_mtime_ns", None, nullable=True),
            size=r.string("size", None, nullable=True),
            name=r.string("name", None, nullable=True),
        )

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
class FindRankStat:
    rank: int
    scanned: int
    matched: int
    errors: int
    stat_calls: int
    directories: int
    time_s: float
    busy_s: float

    @classmethod
    def parse(cls, r: _Reader) -> FindRankStat:
        return cls(
            rank=r.integer("rank"),
            scanned=r.integer("scanned"),
            matched=r.integer("matched"),
            errors=r.integer("errors"),
            stat_calls=r.integer("stat_calls"),
            directories=r.integer("directories"),
            time_s=r.number("time_s"),
            busy_s=r.number("busy_s"),
        )


@dataclass(frozen=True)
class FirstError:
    message: str
    rank: int

    @classmethod
    def parse(cls, r: _Reader) -> FirstError:
        return cls(message=r.string("message"), rank=r.integer("rank"))


@dataclass(frozen=True)
class WorkSharing:
    levels: int
    split_entries: int
    shared_directories: int

    @classmethod
    def parse(cls, r: _Reader) -> WorkSharing:
        return cls(
            levels=r.integer("levels"),
            split_entries=r.integer("split_entries"),
            shared_directories=r.integer("shared_directories"),
        )


@dataclass(frozen=True)
class FindStonewall:
    deadline_s: float
    hit: bool

    @classmethod
    def parse(cls, r: _Reader) -> FindStonewall:
        return cls(deadline_s=r.number("deadline_s"), hit=r.boolean("hit"))


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
        def required(key: str) -> _Reader:
            sub = r.object(key)
            assert sub is not None  # _Reader raised already if it was missing
            return sub

        first = r.object("first_error", None, nullable=True)
        stonewall = r.object("stonewall", None, nullable=True)
        return cls(
            root=r.string("root"),
            file_system=r.string("file_system"),
            predicates=Predicates.parse(required("predicates")),
            scanned=r.integer("scanned"),
            matched=r.integer("matched"),
            directories=r.integer("directories"),
            stat_calls=r.integer("stat_calls"),
            time_s=r.number("time_s"),
            rate_per_s=r.number("rate_per_s"),
            errors=r.integer("errors"),
            first_error=FirstError.parse(first) if first is not None else None,
            work_sharing=WorkSharing.parse(required("work_sharing")),
            stonewall=FindStonewall.parse(stonewall) if stonewall is not None else None,
            matches_file=r.string("matches_file", None, nullable=True),
            per_rank=tuple(
                FindRankStat.parse(_Reader(x, f"{r.path}.per_rank[{i}]"))
                for i, x in enumerate(r.array("per_rank"))
            ),
            latency_ns=Latency.parse(required("latency_ns"), True),
        )


@dataclass(frozen=True)
class FindDocument:
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
    # None only in a failed run's document (it stops before there are figures).
    find: FindSection | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def parse(obj: Any) -> FindDocument:
    """A FindDocument from parsed JSON; raise ResultError naming the first key that is wrong."""
    if not isinstance(obj, dict):
        raise ResultError("not a result document: expected a JSON object")
    version = obj.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or version not in SCHEMA_VERSIONS:
        raise ResultError(f"unsupported schema_version {version!r}")
    top = _Reader(obj, "")
    status = top.string("status")
    if status not in ("ok", "failed"):
        raise ResultError(f"status: unknown value {status!r}")
    err = top.object("error", None, nullable=True)
    error = ErrorInfo.parse(err) if err else None
    if status == "failed" and error is None:
        raise ResultError("status is 'failed' but the document has no error object")
    r = _Reader(obj, "", strict=status == "ok")
    workload = r.string("workload")
    if workload != "find":
        raise ResultError(f"workload: expected 'find', got {workload!r}")

    def section(key: str, cls: Any) -> Any:
        sub = r.object(key, None)
        return cls.parse(sub) if sub is not None else cls()

    command = r.array("command", [])
    if not all(isinstance(c, str) for c in command):
        raise ResultError("command: expected an array of strings")
    config = r.object("config", None)
    find = r.object("find", None)
    return FindDocument(
        schema_version=version,
        tool=r.string("tool"),
        version=r.string("version", ""),
        workload=workload,
        status=status,
        error=error,
        command=tuple(command),
        started_at=r.string("started_at", ""),
        ended_at=r.string("ended_at", ""),
        host=section("host", Host),
        comm=section("comm", Comm),
        build=section("build", Build),
        config=dict(config.obj) if config is not None else {},
        find=FindSection.parse(find) if find is not None else None,
        raw=obj,
    )


def is_find_document(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("workload") == "find"


def load(path: str | Path) -> FindDocument:
    p = Path(path)
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultError(f"{p}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ResultError(f"{p}: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    try:
        return parse(obj)
    except ResultError as exc:
        raise ResultError(f"{p}: {exc}") from None
