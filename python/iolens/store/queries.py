"""The questions the store answers, as plain rows (dicts); the CLI prints them, store.api makes data frames.

Phase values are "higher is better" rates (bandwidth, items/s, IO500 scores); a run that repeated a phase
(iterations) counts with the mean of its iterations.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from iolens.io500.cache import MODES as CACHE_MODES
from iolens.store.db import Damaged, Database, StoreError, describe

RUN_COLUMNS = (
    "r.id AS id, r.started_at AS started_at, r.ended_at AS ended_at, s.name AS system, r.tool AS tool,"
    " r.origin AS origin, r.version AS version, r.command AS command, r.config_hash AS config_hash,"
    " r.ranks AS ranks, r.nodes AS nodes, r.hostname AS hostname, r.file_system AS file_system,"
    " r.status AS status, r.valid AS valid, r.score AS score, r.source_path AS source_path,"
    " r.imported_at AS imported_at, cm.cache_mode AS cache_mode"
)
# The tables RUN_COLUMNS come from.
RUNS_JOINED = (
    "runs r LEFT JOIN systems s ON s.id = r.system_id LEFT JOIN run_cache_modes cm ON cm.run_id = r.id"
)
PHASE_COLUMNS = (
    "run_id, seq, name, iteration, kind, value, unit, bytes, ops, time_s, started_at, ended_at, lat_count,"
    " lat_mean_ns, p50_ns, p90_ns, p99_ns, p99_9_ns, max_ns, valid, status"
)


class NotFound(StoreError):
    """No run or profile with that id."""


def _bool(v: Any) -> bool | None:
    return None if v is None else bool(v)


def _fix_bools(rows: list[dict[str, Any]], *keys: str) -> list[dict[str, Any]]:
    for r in rows:
        for k in keys:
            if k in r:
                r[k] = _bool(r[k])
    return rows


# --- time arguments ---------------------------------------------------------------------------------------

_RELATIVE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: float | None = None) -> float:
    """`--since`: an age (30m, 24h, 7d, 2w) or a local date/time (2026-05-01, 2026-05-01T10:00)."""
    t = text.strip()
    m = _RELATIVE.fullmatch(t)
    if m:
        return (now if now is not None else time.time()) - float(m.group(1)) * _UNIT_S[m.group(2)]
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--since: expected an age (7d, 24h) or a date (2026-05-01), got {text!r}") from None
    return dt.timestamp()


# --- runs -------------------------------------------------------------------------------------------------


def list_runs(
    db: Database,
    system: str | None = None,
    tool: str | None = None,
    since: float | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Runs, newest first."""
    where, params = _run_filter(system, tool, since)
    sql = f"SELECT {RUN_COLUMNS} FROM {RUNS_JOINED} {where} ORDER BY r.started_at DESC, r.id DESC"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return _fix_bools(db.query_dicts(sql, params), "valid")


def _run_filter(system: str | None, tool: str | None, since: float | None) -> tuple[str, list[Any]]:
    clauses, params = [], []
    if system is not None:
        clauses.append("s.name = ?")
        params.append(system)
    if tool is not None:
        clauses.append("r.tool = ?")
        params.append(tool)
    if since is not None:
        clauses.append("r.started_at >= ?")
        params.append(since)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params


def stored_json(db: Database, text: str, what: str) -> Any:
    """A JSON column's value. The store wrote it as JSON: text that does not parse was damaged on disk
    (SQLite keeps no checksum of a page's content, so this is where such damage shows)."""
    try:
        return json.loads(text)
    except (ValueError, TypeError) as exc:
        raise Damaged(
            f"{describe(db.url)}: {what} is not the JSON that was stored ({exc}): the database is damaged; "
            "`iolens db check` lists what else is"
        ) from None


def get_run(db: Database, run_id: int, document: bool = False) -> dict[str, Any]:
    cols = RUN_COLUMNS + ", r.config AS config" + (", r.document AS document" if document else "")
    rows = db.query_dicts(f"SELECT {cols} FROM {RUNS_JOINED} WHERE r.id = ?", (run_id,))
    if not rows:
        raise NotFound(f"no run {run_id} in the database")
    run = _fix_bools(rows, "valid")[0]
    run["config"] = stored_json(db, run["config"], f"run {run_id}'s config") if run["config"] else None
    run["phases"] = phases_of(db, [run_id])
    return run


def phases_of(db: Database, run_ids: Sequence[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for chunk in _chunks(list(run_ids), 500):
        marks = ", ".join("?" for _ in chunk)
        out += db.query_dicts(
            f"SELECT {PHASE_COLUMNS} FROM phases WHERE run_id IN ({marks}) ORDER BY run_id, seq", chunk
        )
    return _fix_bools(out, "valid")


def _chunks(items: list[Any], n: int) -> Iterable[list[Any]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


@dataclass
class PhaseFigure:
    """A phase of one run, its iterations folded into one figure: the mean value, the mean percentiles."""

    name: str
    kind: str
    unit: str | None
    value: float | None
    iterations: int
    valid: bool | None
    bytes: int | None = None
    ops: int | None = None
    time_s: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    percentiles: dict[str, float] = field(default_factory=dict)


PERCENTILES = ("p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "max_ns")


def fold_phases(phases: Iterable[dict[str, Any]]) -> list[PhaseFigure]:
    """One figure per phase name, in the order the phases first ran."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for p in phases:
        groups.setdefault(p["name"], []).append(p)
    out = []
    for name, rows in groups.items():
        values = [r["value"] for r in rows if r["value"] is not None]
        pct = {}
        for key in PERCENTILES:
            xs = [r[key] for r in rows if r[key] is not None]
            if xs:
                pct[key] = statistics.fmean(xs)
        valids = [r["valid"] for r in rows if r["valid"] is not None]
        starts = [r["started_at"] for r in rows if r["started_at"] is not None]
        ends = [r["ended_at"] for r in rows if r["ended_at"] is not None]
        out.append(
            PhaseFigure(
                name=name,
                kind=rows[0]["kind"],
                unit=rows[0]["unit"],
                value=statistics.fmean(values) if values else None,
                iterations=len(rows),
                valid=all(valids) if valids else None,
                bytes=_mean_int(r["bytes"] for r in rows),
                ops=_mean_int(r["ops"] for r in rows),
                time_s=statistics.fmean(ts)
                if (ts := [r["time_s"] for r in rows if r["time_s"] is not None])
                else None,
                started_at=min(starts) if starts else None,
                ended_at=max(ends) if ends else None,
                percentiles=pct,
            )
        )
    return out


def _mean_int(values: Iterable[Any]) -> int | None:
    xs = [v for v in values if v is not None]
    return round(statistics.fmean(xs)) if xs else None


# --- compare ----------------------------------------------------------------------------------------------


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as dotted keys → scalar values (lists as JSON text)."""
    out: dict[str, Any] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(obj, list) and any(isinstance(x, dict | list) for x in obj):
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{prefix}[{i}]"))
    elif isinstance(obj, list):
        out[prefix] = json.dumps(obj)
    else:
        out[prefix] = obj
    return out


RUN_FIELDS = (
    "tool", "system", "version", "origin", "ranks", "nodes", "hostname", "file_system", "cache_mode",
    "command",
)  # fmt: skip


class MixedCacheModes(StoreError):
    """Runs made in different page-cache modes: their read figures are not like-for-like."""

    def __init__(self, modes: Sequence[tuple[int, str]]) -> None:
        self.modes = list(modes)
        said = ", ".join(f"run {i} {m}" for i, m in self.modes)
        super().__init__(
            f"runs made in different page-cache modes ({said}): a read with the cache evicted measures the "
            "storage, with it kept it may measure memory"
        )


@dataclass
class Comparison:
    runs: list[dict[str, Any]]
    # phase name → one PhaseFigure (or None) per run, in the order of `runs`
    phases: dict[str, list[PhaseFigure | None]]
    # what differs between the runs: field or config key → one value per run
    run_differences: dict[str, list[Any]]
    config_differences: dict[str, list[Any]]
    # per run: compared although its cache mode is not the reference run's (allow_mixed_cache)
    mixed_cache: list[bool] = field(default_factory=list)

    @property
    def reference_cache_mode(self) -> str | None:
        """The mode the others are held against: the first run's, or the first known one."""
        return next((r["cache_mode"] for r in self.runs if r.get("cache_mode") is not None), None)


def compare(db: Database, run_ids: Sequence[int], allow_mixed_cache: bool = False) -> Comparison:
    """The runs phase by phase. Runs made in different page-cache modes (a run without one, None, matches
    any) are refused (MixedCacheModes) unless `allow_mixed_cache`, which marks the runs whose mode differs."""
    runs = [get_run(db, i) for i in run_ids]
    known = [(int(r["id"]), r["cache_mode"]) for r in runs if r.get("cache_mode") is not None]
    for rid, mode in known:
        if mode not in CACHE_MODES:
            raise Damaged(
                f"{describe(db.url)}: run {rid}'s cache mode {mode!r} is not one iolens stores: the database "
                "is damaged; `iolens db check` lists what else is"
            )
    if len({m for _, m in known}) > 1 and not allow_mixed_cache:
        raise MixedCacheModes(known)
    figures = [{f.name: f for f in fold_phases(r["phases"])} for r in runs]
    names: list[str] = []
    for f in figures:
        names += [n for n in f if n not in names]
    phases = {n: [f.get(n) for f in figures] for n in names}
    run_diff = {
        k: [r.get(k) for r in runs] for k in RUN_FIELDS if len({json.dumps(r.get(k)) for r in runs}) > 1
    }
    flat = [flatten(r["config"] or {}) for r in runs]
    keys = sorted(set().union(*flat)) if flat else []
    config_diff = {
        k: [f.get(k) for f in flat]
        for k in keys
        if len({json.dumps(f.get(k), default=str) for f in flat}) > 1
    }
    c = Comparison(runs, phases, run_diff, config_diff)
    ref = c.reference_cache_mode
    c.mixed_cache = [r.get("cache_mode") not in (None, ref) for r in runs]
    return c


# --- trend ------------------------------------------------------------------------------------------------


def trend(
    db: Database,
    phase: str,
    system: str | None = None,
    tool: str | None = None,
    config_hash: str | None = None,
    until: float | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The phase's value in every run (mean over iterations), oldest first: run id, time, value, unit,
    config hash, validity, cache mode. `until` keeps runs that started before it; `limit` the latest ones."""
    clauses, params = ["p.name = ?", "p.value IS NOT NULL", "r.status = 'ok'"], [phase]
    if system is not None:
        clauses.append("r.system_id = (SELECT id FROM systems WHERE name = ?)")
        params.append(system)
    if tool is not None:
        clauses.append("r.tool = ?")
        params.append(tool)
    if config_hash is not None:
        clauses.append("r.config_hash = ?")
        params.append(config_hash)
    if until is not None:
        clauses.append("r.started_at <= ?")
        params.append(until)
    sql = (
        "SELECT r.id AS run_id, r.started_at AS started_at, AVG(p.value) AS value, MIN(p.unit) AS unit,"
        " r.config_hash AS config_hash, r.tool AS tool, r.valid AS valid, cm.cache_mode AS cache_mode"
        " FROM phases p JOIN runs r ON r.id = p.run_id LEFT JOIN run_cache_modes cm ON cm.run_id = r.id"
        f" WHERE {' AND '.join(clauses)}"
        " GROUP BY r.id, r.started_at, r.config_hash, r.tool, r.valid, cm.cache_mode"
        " ORDER BY r.started_at DESC, r.id DESC"
    )
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    rows = _fix_bools(db.query_dicts(sql, params), "valid")
    rows.reverse()
    return rows


def phase_names(db: Database, system: str | None = None) -> list[str]:
    if system is None:
        rows = db.query("SELECT DISTINCT name FROM phases ORDER BY name")
    else:
        rows = db.query(
            "SELECT DISTINCT p.name FROM phases p JOIN runs r ON r.id = p.run_id"
            " JOIN systems s ON s.id = r.system_id WHERE s.name = ? ORDER BY p.name",
            (system,),
        )
    return [r[0] for r in rows]


# --- regressions ------------------------------------------------------------------------------------------

# MAD × 1.4826 estimates the standard deviation of normally distributed values.
MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class RegressionCheck:
    system: str | None
    tool: str
    config_hash: str | None
    phase: str
    unit: str | None
    run_id: int
    started_at: float | None
    value: float
    history: int  # previous like-for-like runs
    median: float | None
    mad: float | None
    drop: float | None  # (median - value) / median
    regression: bool
    cache_mode: str | None = None  # runs of another page-cache mode are another history (like the config)

    @property
    def ratio(self) -> float | None:
        return self.value / self.median if self.median else None


def regressions(
    db: Database,
    threshold: float = 0.10,
    mad_k: float = 3.0,
    min_history: int = 3,
    window: int = 20,
    system: str | None = None,
) -> list[RegressionCheck]:
    """For each system, tool, config hash, cache mode and phase: the latest run against the median and MAD of
    the (up to `window`) previous ones. A regression is a drop of more than `threshold` of the median that is
    also more than `mad_k` × 1.4826 × MAD (the noise of those runs); at least `min_history` runs needed."""
    clauses, params = ["p.value IS NOT NULL", "r.status = 'ok'"], []
    if system is not None:
        clauses.append("s.name = ?")
        params.append(system)
    sql = (
        "SELECT s.name AS system, r.tool AS tool, r.config_hash AS config_hash, p.name AS phase,"
        " MIN(p.unit) AS unit, r.id AS run_id, r.started_at AS started_at, AVG(p.value) AS value,"
        " cm.cache_mode AS cache_mode"
        " FROM phases p JOIN runs r ON r.id = p.run_id LEFT JOIN systems s ON s.id = r.system_id"
        " LEFT JOIN run_cache_modes cm ON cm.run_id = r.id"
        f" WHERE {' AND '.join(clauses)}"
        " GROUP BY s.name, r.tool, r.config_hash, cm.cache_mode, p.name, r.id, r.started_at"
    )
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in db.query_dicts(sql, params):
        groups[(row["system"], row["tool"], row["config_hash"], row["cache_mode"], row["phase"])].append(row)
    out = []
    for (sys_name, tool, chash, mode, phase), rows in groups.items():
        rows.sort(key=lambda r: (r["started_at"] if r["started_at"] is not None else -math.inf, r["run_id"]))
        latest, previous = rows[-1], rows[:-1][-window:]
        value = float(latest["value"])
        med = mad = drop = None
        flagged = False
        if previous:
            xs = [float(r["value"]) for r in previous]
            med = statistics.median(xs)
            mad = statistics.median(abs(x - med) for x in xs)
            drop = (med - value) / med if med else None
            if len(previous) >= min_history and drop is not None:
                flagged = drop > threshold and (med - value) > mad_k * MAD_TO_SIGMA * mad
        out.append(
            RegressionCheck(
                system=sys_name,
                tool=tool,
                config_hash=chash,
                phase=phase,
                unit=latest["unit"],
                run_id=int(latest["run_id"]),
                started_at=latest["started_at"],
                value=value,
                history=len(previous),
                median=med,
                mad=mad,
                drop=drop,
                regression=flagged,
                cache_mode=mode,
            )
        )
    out.sort(key=lambda c: (not c.regression, c.system or "", c.tool, c.phase, c.config_hash or ""))
    return out


# --- systems ----------------------------------------------------------------------------------------------


def list_systems(db: Database) -> list[dict[str, Any]]:
    return db.query_dicts(
        "SELECT s.id AS id, s.name AS name, s.site AS site, s.fs_type AS fs_type, s.fs_version AS fs_version,"
        " s.servers AS servers, s.clients AS clients, s.description AS description,"
        " (SELECT COUNT(*) FROM runs r WHERE r.system_id = s.id) AS runs,"
        " (SELECT COUNT(*) FROM profiles p WHERE p.system_id = s.id) AS profiles"
        " FROM systems s ORDER BY s.name"
    )


def counts(db: Database) -> dict[str, int]:
    out = {}
    for table in ("systems", "runs", "phases", "series", "samples", "profiles", "profile_files"):
        row = db.query_one(f"SELECT COUNT(*) FROM {table}")
        out[table] = int(row[0]) if row else 0
    return out


# --- profiles ---------------------------------------------------------------------------------------------

PROFILE_COLUMNS = (
    "p.id AS id, s.name AS system, p.origin AS origin, p.job_id AS job_id, p.user_name AS user_name,"
    " p.exe AS exe, p.command AS command, p.hosts AS hosts, p.processes AS processes,"
    " p.started_at AS started_at, p.ended_at AS ended_at, p.runtime_s AS runtime_s, p.files AS files,"
    " p.opens AS opens, p.reads AS reads, p.writes AS writes, p.stats AS stats, p.seeks AS seeks,"
    " p.fsyncs AS fsyncs, p.meta_ops AS meta_ops, p.bytes_read AS bytes_read,"
    " p.bytes_written AS bytes_written, p.read_time_s AS read_time_s, p.write_time_s AS write_time_s,"
    " p.meta_time_s AS meta_time_s, p.small_ios AS small_ios, p.truncated AS truncated,"
    " p.source_path AS source_path"
)

JOB_ORDER = {
    "bytes": "(p.bytes_read + p.bytes_written) DESC",
    "meta": "meta_share DESC",
    "small": "p.small_ios DESC",
}


def jobs(
    db: Database,
    by: str = "bytes",
    limit: int | None = 20,
    system: str | None = None,
    since: float | None = None,
) -> list[dict[str, Any]]:
    """Profiles ranked by bytes moved, by the metadata share of their I/O time, or by small-I/O count."""
    if by not in JOB_ORDER:
        raise ValueError(f"--by: expected one of {', '.join(JOB_ORDER)}, got {by!r}")
    clauses, params = [], []
    if system is not None:
        clauses.append("s.name = ?")
        params.append(system)
    if since is not None:
        clauses.append("p.started_at >= ?")
        params.append(since)
    where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
    sql = (
        f"SELECT {PROFILE_COLUMNS}, CASE WHEN p.read_time_s + p.write_time_s + p.meta_time_s > 0"
        " THEN p.meta_time_s / (p.read_time_s + p.write_time_s + p.meta_time_s) ELSE 0 END AS meta_share"
        f" FROM profiles p LEFT JOIN systems s ON s.id = p.system_id {where}"
        f" ORDER BY {JOB_ORDER[by]}, p.id DESC"
    )
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return _fix_bools(db.query_dicts(sql, params), "truncated")


def get_profile(db: Database, profile_id: int, document: bool = True) -> dict[str, Any]:
    cols = PROFILE_COLUMNS + (", p.document AS document" if document else "")
    rows = db.query_dicts(
        f"SELECT {cols} FROM profiles p LEFT JOIN systems s ON s.id = p.system_id WHERE p.id = ?",
        (profile_id,),
    )
    if not rows:
        raise NotFound(f"no profile {profile_id} in the database")
    prof = _fix_bools(rows, "truncated")[0]
    if document:
        prof["document"] = stored_json(db, prof["document"], f"profile:{profile_id}'s document")
    return prof


def profile_files(
    db: Database, profile_id: int, order: str = "bytes", limit: int | None = None
) -> list[dict[str, Any]]:
    orders = {
        "bytes": "(bytes_read + bytes_written) DESC",
        "time": "(read_time_s + write_time_s + meta_time_s) DESC",
        "path": "path",
    }
    sql = (
        "SELECT file_no, path, fs_type, processes, opens, reads, writes, stats, seeks, fsyncs, bytes_read,"
        " bytes_written, read_time_s, write_time_s, meta_time_s, first_s, last_s"
        # Equal values in path order: the same table whatever order the files were stored in.
        f" FROM profile_files WHERE profile_id = ? ORDER BY {orders[order]}, path, file_no"
    )
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return db.query_dicts(sql, (profile_id,))


def profile_file_counters(db: Database, profile_id: int) -> list[dict[str, Any]]:
    """Every stored file of a profile with its counters (the JSON object of its non-zero counters, merged
    over the processes that had it): what `iolens replay kernel profile:ID` builds a kernel from."""
    rows = db.query_dicts(
        "SELECT path, processes, counters, first_s, last_s FROM profile_files WHERE profile_id = ?"
        " ORDER BY file_no",
        (profile_id,),
    )
    for row in rows:
        text = row["counters"]
        row["counters"] = stored_json(db, text, f"profile:{profile_id}'s file {row['path']}") if text else {}
    return rows


# --- monitoring samples -----------------------------------------------------------------------------------


def samples(
    db: Database,
    t0: float,
    t1: float,
    hosts: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
) -> list[tuple[Any, ...]]:
    """Samples in [t0, t1]: (t, host, source, target, metric, value, unit), by series then time."""
    clauses, params = [], []
    if hosts:
        clauses.append(f"se.host IN ({', '.join('?' for _ in hosts)})")
        params += list(hosts)
    if metrics:
        clauses.append(f"se.metric IN ({', '.join('?' for _ in metrics)})")
        params += list(metrics)
    where = (" AND " + " AND ".join(clauses)) if clauses else ""
    return db.query(
        "SELECT s.t, se.host, se.source, se.target, se.metric, s.value, se.unit"
        " FROM series se JOIN samples s ON s.series_id = se.id AND s.t >= ? AND s.t <= ?"
        f" WHERE 1 = 1{where} ORDER BY se.id, s.t",
        [t0, t1, *params],
    )


def run_window(run: dict[str, Any], margin_s: float = 10.0) -> tuple[float, float] | None:
    """The time span of a run (from its phases' windows where the run has none), widened by margin_s."""
    starts = [p["started_at"] for p in run.get("phases", ()) if p.get("started_at") is not None]
    ends = [p["ended_at"] for p in run.get("phases", ()) if p.get("ended_at") is not None]
    t0 = run.get("started_at") if run.get("started_at") is not None else (min(starts) if starts else None)
    t1 = run.get("ended_at") if run.get("ended_at") is not None else (max(ends) if ends else None)
    if t0 is None or t1 is None:
        return None
    return t0 - margin_s, t1 + margin_s


def run_samples(db: Database, run_id: int, margin_s: float = 10.0) -> list[tuple[Any, ...]]:
    """The monitoring samples taken while a run ran (every host, with margin_s on each side)."""
    run = get_run(db, run_id)
    window = run_window(run, margin_s)
    if window is None:
        return []
    return samples(db, *window)


def overlapping_runs(
    db: Database, t0: float, t1: float, hosts: Sequence[str], exclude_id: int | None = None
) -> list[dict[str, Any]]:
    """Runs on any of `hosts` (their rank 0's host) whose start..end meets [t0, t1], by start: the other
    tenants of a run's monitoring window."""
    if not hosts:
        return []
    marks = ", ".join("?" for _ in hosts)
    return db.query_dicts(
        "SELECT r.id AS id, r.tool AS tool, r.command AS command, r.hostname AS hostname,"
        " r.started_at AS started_at, r.ended_at AS ended_at FROM runs r"
        f" WHERE r.hostname IN ({marks}) AND r.started_at <= ? AND r.ended_at >= ? AND r.id <> ?"
        " ORDER BY r.started_at, r.id",
        [*hosts, t1, t0, -1 if exclude_id is None else exclude_id],
    )


def run_document(db: Database, run_id: int) -> dict[str, Any] | None:
    """The result document stored with a run (None when the run was stored without one)."""
    row = db.query_one("SELECT document FROM runs WHERE id = ?", (run_id,))
    if row is None or not row[0]:
        return None
    doc = stored_json(db, row[0], f"run {run_id}'s document")
    return doc if isinstance(doc, dict) else None
