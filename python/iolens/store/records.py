"""What the store writes: a run with its phases, a profile with its files, a batch of monitoring samples.

Importers turn their sources (result documents, IO500 result directories, profile and Darshan logs, sample
streams) into these records; store.Store writes each record in one transaction.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


def canonical_json(obj: Any) -> str:
    """One spelling of a JSON value: keys sorted, no spaces (hashes do not depend on formatting).
    ValueError names the member that holds NaN or Infinity, which JSON has no spelling for."""
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        found = _non_finite(obj, "")
        if found is None:
            raise
        where, value = found
        raise ValueError(
            f"{where or 'the value'}: {value} is not a JSON number (NaN and Infinity are not allowed)"
        ) from None


def _non_finite(obj: Any, where: str) -> tuple[str, str] | None:
    """The first member (a dotted path) that holds a float that is not finite, and that value."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return where, "NaN" if math.isnan(obj) else ("Infinity" if obj > 0 else "-Infinity")
    if isinstance(obj, dict):
        for key, value in obj.items():
            found = _non_finite(value, f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
    elif isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            found = _non_finite(value, f"{where}[{i}]")
            if found is not None:
                return found
    return None


def sha256(text: str | bytes) -> str:
    return hashlib.sha256(text.encode("utf-8") if isinstance(text, str) else text).hexdigest()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes, read 1 MiB at a time; OSError when it cannot be read."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def config_hash(config: Any) -> str:
    """The hash runs are matched on ("like-for-like"): the first 16 hex digits of the config's sha256."""
    return sha256(canonical_json(config))[:16]


def epoch(iso: str | None) -> float | None:
    """Seconds since the epoch of an ISO-8601 time ("2024-05-01T10:00:00Z"); naive times are UTC."""
    if not iso:
        return None
    text = iso.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def iso(t: float | None) -> str:
    """An epoch time as ISO-8601 UTC to the second, "" for none."""
    if t is None or (isinstance(t, float) and math.isnan(t)):
        return ""
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class SystemInfo:
    """A system as an IO500 submission describes it; only `name` is required."""

    name: str
    site: str | None = None
    fs_type: str | None = None
    fs_version: str | None = None
    servers: int | None = None
    clients: int | None = None
    description: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class PhaseRow:
    name: str
    iteration: int = 0
    kind: str = "phase"  # "phase", or "score" for IO500's BW, MD and SCORE
    value: float | None = None
    unit: str | None = None
    bytes: int | None = None
    ops: int | None = None
    time_s: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    lat_count: int | None = None
    lat_mean_ns: float | None = None
    p50_ns: int | None = None
    p90_ns: int | None = None
    p99_ns: int | None = None
    p99_9_ns: int | None = None
    max_ns: int | None = None
    valid: bool | None = None
    status: str | None = None

    COLUMNS = (
        "name", "iteration", "kind", "value", "unit", "bytes", "ops", "time_s", "started_at", "ended_at",
        "lat_count", "lat_mean_ns", "p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "max_ns", "valid", "status",
    )  # fmt: skip

    def values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, c) for c in self.COLUMNS)


@dataclass
class RunRecord:
    uid: str
    tool: str
    origin: str  # "iolens" (a result document) or "io500-app" (an official IO500 result directory)
    status: str
    document: str  # the source, as JSON text
    version: str | None = None
    command: str | None = None
    config: Any = None
    config_hash: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    ranks: int | None = None
    nodes: int | None = None
    hostname: str | None = None
    file_system: str | None = None
    valid: bool | None = None
    score: float | None = None
    source_path: str | None = None
    # The page cache before buffered reads: "evict", "keep", or None where no such choice applies (docs/db.md)
    cache_mode: str | None = None
    phases: list[PhaseRow] = field(default_factory=list)
    system: SystemInfo | None = None  # what the source says about the system, if anything
    # Monitoring samples taken during the run (a document's "monitor" object), stored with it.
    samples: list[Sample] = field(default_factory=list)


# The per-file counters every profile file row has as columns (the rest stay in its `counters` JSON).
@dataclass
class ProfileFile:
    path: str
    fs_type: str | None = None
    processes: int = 1
    opens: int = 0
    reads: int = 0
    writes: int = 0
    stats: int = 0
    seeks: int = 0
    fsyncs: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    read_time_s: float = 0.0
    write_time_s: float = 0.0
    meta_time_s: float = 0.0
    first_s: float | None = None  # first and last activity, seconds since the job started
    last_s: float | None = None
    # The non-zero counters: a dict, or the JSON object of one already made (a 100k-file job's rows).
    counters: dict[str, Any] | str = field(default_factory=dict)

    COLUMNS = (
        "path", "fs_type", "processes", "opens", "reads", "writes", "stats", "seeks", "fsyncs", "bytes_read",
        "bytes_written", "read_time_s", "write_time_s", "meta_time_s", "first_s", "last_s",
    )  # fmt: skip


@dataclass(frozen=True)
class FileColumns:
    """A batch of files as columns: `columns` holds one list per ProfileFile.COLUMNS, then the counters' JSON
    objects (None: no counter), all of one length. A 100k-file job is stored from these without a Python
    object per file (ProfileFile): making those took 1 s of its 2.4 s import (docs/profile.md, "Darshan
    logs")."""

    columns: tuple[list[Any], ...]

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0


@dataclass
class ProfileRecord:
    uid: str
    origin: str  # "iolens" or "darshan"
    summary: dict[str, Any]  # the stored document (docs/db.md "Profile summaries")
    job_id: str | None = None
    user_name: str | None = None
    exe: str | None = None
    command: str | None = None
    hosts: int | None = None
    processes: int | None = None
    started_at: float | None = None
    ended_at: float | None = None
    runtime_s: float | None = None
    files: int = 0
    opens: int = 0
    reads: int = 0
    writes: int = 0
    stats: int = 0
    seeks: int = 0
    fsyncs: int = 0
    meta_ops: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    read_time_s: float = 0.0
    write_time_s: float = 0.0
    meta_time_s: float = 0.0
    small_ios: int = 0
    truncated: bool = False
    source_path: str | None = None
    file_rows: Iterable[ProfileFile] = ()
    # Files as column batches (after file_rows, numbered on from them): how a job's own files are given.
    file_columns: Iterable[FileColumns] = ()

    COLUMNS = (
        "origin", "job_id", "user_name", "exe", "command", "hosts", "processes", "started_at", "ended_at",
        "runtime_s", "files", "opens", "reads", "writes", "stats", "seeks", "fsyncs", "meta_ops",
        "bytes_read", "bytes_written", "read_time_s", "write_time_s", "meta_time_s", "small_ios", "truncated",
    )  # fmt: skip


@dataclass(frozen=True)
class Sample:
    t: float
    host: str
    source: str
    target: str
    metric: str
    value: float | None
    unit: str | None = None
