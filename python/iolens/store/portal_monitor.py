"""The portal's questions about monitoring samples: hosts, series, downsampled time series, the newest
samples of a host (the live view), and the jobs that moved the most data (Lustre job_stats and profiles).

Every aggregation happens in SQL, and each query reads only the samples of the series it names within its
window, through the samples table's key (series_id, t): a dashboard over a day reads as many rows as the
day holds for its series, and returns at most a few hundred per series. The same SQL runs on SQLite and
PostgreSQL; where their functions differ (floor division, finding a substring) `_dialect` spells it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from iolens.store.db import Database
from iolens.store.rollup import MINUTE_S

# Series under a Lustre job_stats parameter: one per job, target and operation. They are read by the top
# jobs' query, never drawn one by one (a server lists tens of thousands of jobs).
JOB_STATS_LIKE = r"%.job\_stats/jobs/%"
RATE_LIKE = r"%\_per\_s"
KINDS = ("rates", "gauges", "counters")
# job_stats operations that are data, not metadata: the bytes counters and (Lustre 2.15+) the time spent
# in reads and writes.
DATA_OPS = ("read_bytes", "write_bytes", "read", "write")
TOP_SORTS = ("bytes", "ops", "meta")
# A profiled job that ran in a window started at most this long before it: the bound lets the query read
# the profiles by their start time (index profiles_by_time) instead of every profile.
LONGEST_JOB_S = 31 * 86400


@dataclass(frozen=True)
class Series:
    id: int
    host: str
    source: str
    target: str
    metric: str
    unit: str | None


class Bucket(NamedTuple):
    """One downsampling bucket of a series: its index b covers [origin + b*step, origin + (b+1)*step). A
    named tuple: a day's dashboard makes tens of thousands (a frozen dataclass costs three times as much)."""

    b: int
    mean: float | None
    peak: float | None
    count: int


def _marks(items: Sequence[Any]) -> str:
    return ", ".join("?" for _ in items)


def _least(db: Database) -> str:
    """The name of the function that gives the smaller of its arguments."""
    return "LEAST" if db.dialect == "postgresql" else "MIN"


def _greatest(db: Database) -> str:
    """The name of the function that gives the larger of its arguments."""
    return "GREATEST" if db.dialect == "postgresql" else "MAX"


def _find(db: Database) -> str:
    """The name of the function that gives the 1-based position of a substring (0 when absent)."""
    return "strpos" if db.dialect == "postgresql" else "instr"


def like_escape(text: str) -> str:
    """`text` as a LIKE pattern that matches it literally (with ESCAPE '\\')."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# --- hosts and series ---------------------------------------------------------------------------------


def hosts(db: Database, limit: int = 5000) -> list[str]:
    """The hosts that have series, in order: one index step per host (a skip scan over series' unique key),
    not a scan of every series."""
    rows = db.query(
        "WITH RECURSIVE h(host) AS ("
        " SELECT MIN(host) FROM series"
        " UNION ALL SELECT (SELECT MIN(s.host) FROM series s WHERE s.host > h.host) FROM h"
        " WHERE h.host IS NOT NULL)"
        f" SELECT host FROM h WHERE host IS NOT NULL LIMIT {int(limit)}"
    )
    return [str(r[0]) for r in rows]


def sources(db: Database, host_names: Sequence[str]) -> list[str]:
    """The sources the hosts' series come from."""
    if not host_names:
        return []
    rows = db.query(
        f"SELECT DISTINCT source FROM series WHERE host IN ({_marks(host_names)}) ORDER BY source",
        list(host_names),
    )
    return [str(r[0]) for r in rows]


def find_series(
    db: Database,
    host_names: Sequence[str],
    kind: str = "rates",
    source: str | None = None,
    match: str | None = None,
    limit: int = 2000,
) -> list[Series]:
    """The series of the hosts (no job_stats jobs) of one kind: `rates` (metrics ending in _per_s),
    `counters` (cumulative values: those that have a rate beside them), `gauges` (levels: the others).
    `match`: a text the target or metric contains. At most `limit` series, by host, source, target, metric."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r}")
    if not host_names:
        return []
    clauses = [f"se.host IN ({_marks(host_names)})", "se.target NOT LIKE ? ESCAPE '\\'"]
    params: list[Any] = [*host_names, JOB_STATS_LIKE]
    sibling = (
        "EXISTS (SELECT 1 FROM series r WHERE r.host = se.host AND r.source = se.source"
        " AND r.target = se.target AND r.metric = se.metric || '_per_s')"
    )
    if kind == "rates":
        clauses.append("se.metric LIKE ? ESCAPE '\\'")
        params.append(RATE_LIKE)
    else:
        clauses.append("se.metric NOT LIKE ? ESCAPE '\\'")
        params.append(RATE_LIKE)
        clauses.append(sibling if kind == "counters" else f"NOT {sibling}")
    if source is not None:
        clauses.append("se.source = ?")
        params.append(source)
    if match is not None:
        clauses.append("(se.target LIKE ? ESCAPE '\\' OR se.metric LIKE ? ESCAPE '\\')")
        pattern = "%" + like_escape(match) + "%"
        params += [pattern, pattern]
    rows = db.query(
        "SELECT se.id, se.host, se.source, se.target, se.metric, se.unit FROM series se"
        f" WHERE {' AND '.join(clauses)} ORDER BY se.host, se.source, se.target, se.metric"
        f" LIMIT {int(limit)}",
        params,
    )
    return [Series(int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), r[5]) for r in rows]


# --- windows of samples --------------------------------------------------------------------------------


def sampling_interval(
    db: Database, ids: Sequence[int], t0: float, t1: float, probes: int = 5
) -> float | None:
    """The sampling interval of the series in [t0, t1): the median spacing of the first samples of the first
    series (of at most `probes`) that has some there; None when none has two."""
    for sid in ids[:probes]:
        rows = db.query(
            "SELECT t FROM samples WHERE series_id = ? AND t >= ? AND t < ? ORDER BY t LIMIT 16",
            [sid, t0, t1],
        )
        gaps = sorted(b[0] - a[0] for a, b in zip(rows, rows[1:], strict=False))
        if gaps:
            return float(gaps[len(gaps) // 2])
    return None


def buckets(
    db: Database, ids: Sequence[int], t0: float, t1: float, step: float, origin: float | None = None
) -> dict[int, list[Bucket]]:
    """Each series' samples in [t0, t1) in buckets of `step` seconds: bucket b covers [origin + b*step,
    origin + (b+1)*step) within the window (origin: t0 unless given, at most t0). Per bucket the mean, the
    maximum and the count of values; empty buckets absent; in bucket order.

    With a step and an origin of whole minutes the minutes inside the window are read from the rollup
    (store/rollup.py) and only the window's partial first and last minutes from the samples: the same
    figures (the mean to rounding) from 60 times fewer rows at one sample a second."""
    if not ids:
        return {}
    origin = t0 if origin is None else origin
    if origin > t0 or step <= 0:
        raise ValueError("buckets: origin after t0, or a step not positive")
    whole = step % MINUTE_S == 0 and origin % MINUTE_S == 0 and math.ceil(t0 / MINUTE_S) < t1 // MINUTE_S
    if not whole:
        return _unpack(_sample_buckets(db, ids, t0, t1, step, origin))
    first, end = math.ceil(t0 / MINUTE_S), int(t1 // MINUTE_S)  # the whole minutes: [first, end)
    parts = _minute_buckets(db, ids, first, end, int(step) // MINUTE_S, int(origin) // MINUTE_S)
    edges: list[_Part] = []
    for lo, hi in ((t0, first * MINUTE_S), (end * MINUTE_S, t1)):
        if lo < hi:  # less than a minute, inside one bucket (the buckets are whole minutes from origin)
            edges += _edge(db, ids, lo, hi, math.floor((lo - origin) / step))
    return _unpack(parts, edges)


# A bucket's figures as read: (series id, bucket, rows, values, sum, maximum); sum and maximum None when no
# row has a value.
_Part = tuple[int, int, int, int, float | None, float | None]


def _unpack(parts: list[_Part], edges: Sequence[_Part] = ()) -> dict[int, list[Bucket]]:
    """Buckets from their parts, in (series, bucket) order with one part per bucket; `edges`, in any order,
    are pieces of buckets (the window's partial first and last minutes) added to them."""
    extra: dict[tuple[int, int], _Part] = {}
    for part in edges:
        key = (part[0], part[1])
        extra[key] = _merged(extra[key], part) if key in extra else part
    out: dict[int, list[Bucket]] = {}
    for part in parts:
        if extra:
            edge = extra.pop((part[0], part[1]), None)
            if edge is not None:
                part = _merged(part, edge)
        _append(out, part)
    for part in sorted(extra.values()):  # edge buckets no whole minute falls in
        if part[2]:
            _append(out, part)
            out[part[0]].sort(key=lambda k: k.b)
    return out


def _merged(a: _Part, b: _Part) -> _Part:
    total = a[4] if b[4] is None else b[4] if a[4] is None else a[4] + b[4]
    peak = a[5] if b[5] is None else b[5] if a[5] is None else max(a[5], b[5])
    return (a[0], a[1], a[2] + b[2], a[3] + b[3], total, peak)


def _append(out: dict[int, list[Bucket]], part: _Part) -> None:
    sid, b, rows, count, total, peak = part
    if rows:
        out.setdefault(sid, []).append(
            Bucket(b, None if total is None or not count else total / count, peak, count)
        )


def _parse(sid: Any, b: Any, figures: Any) -> _Part:
    rows, count, total, peak = str(figures).split(" ")
    return (int(sid), int(b), int(rows), int(count), None if total == "n" else float(total),
            None if peak == "n" else float(peak))  # fmt: skip


def _pack(db: Database) -> str:
    """SQL that gives a range of samples' row count, value count, sum and maximum as one text, 'n' for NULL:
    SQLite has no LATERAL join to return several aggregates of one correlated range. Reals in 17 digits
    (SQLite's CAST to text keeps 15; PostgreSQL's is exact)."""
    if db.dialect == "postgresql":
        real = "COALESCE(CAST({} AS TEXT), 'n')"
    else:
        real = "CASE WHEN {0} IS NULL THEN 'n' ELSE printf('%!.17g', {0}) END"  # printf(NULL) is '0'
    return " || ' ' || ".join(
        ("CAST(COUNT(*) AS TEXT)", "CAST(COUNT(s.value) AS TEXT)", real.format("SUM(s.value)"),
         real.format("MAX(s.value)"))
    )  # fmt: skip


def _sample_buckets(
    db: Database, ids: Sequence[int], t0: float, t1: float, step: float, origin: float
) -> list[_Part]:
    """The buckets' figures of the samples in [t0, t1)."""
    # Each bucket of each series is one range of the samples' key (series_id, t), added up as it is read:
    # no sort. A GROUP BY on the computed bucket sorts every sample first (SQLite: a temporary B-tree, 2.3 s
    # for the 2.9M samples of a host's rates over 24 h, where reading them takes 0.2 s; PostgreSQL: an
    # external merge sort on disk, 2.2 s); walked by bucket 0.7 s and 1.1 s (docs/web.md "Load").
    b0 = math.floor((t0 - origin) / step)
    n = max(b0, math.ceil((t1 - origin) / step))
    packed = _pack(db)
    rows = db.query(
        "WITH RECURSIVE k(b) AS (SELECT CAST(? AS INTEGER) UNION ALL SELECT b + 1 FROM k WHERE b + 1 < ?),"
        f" ss(id) AS (SELECT id FROM series WHERE id IN ({_marks(ids)}))"
        f" SELECT ss.id, k.b, (SELECT {packed} FROM samples s WHERE s.series_id = ss.id"
        f" AND s.t >= {_greatest(db)}(?, ? + k.b * ?) AND s.t < {_least(db)}(? + (k.b + 1) * ?, ?))"
        " FROM ss, k ORDER BY ss.id, k.b",
        [b0, n, *ids, t0, origin, step, origin, step, t1],
    )
    return [_parse(*r) for r in rows]


def _part(sid: Any, b: Any, n: Any, c: Any, total: Any, peak: Any) -> _Part:
    """A bucket's figures from a row (PostgreSQL's SUM and MAX may come as Decimal)."""
    return (int(sid), int(b), int(n), int(c), None if total is None else float(total),
            None if peak is None else float(peak))  # fmt: skip


def _edge(db: Database, ids: Sequence[int], t0: float, t1: float, b: int) -> list[_Part]:
    """The figures of the samples in [t0, t1), all in bucket b: one range of the key per series."""
    rows = db.query(
        "SELECT series_id, COUNT(*), COUNT(value), SUM(value), MAX(value) FROM samples"
        f" WHERE series_id IN ({_marks(ids)}) AND t >= ? AND t < ? GROUP BY series_id",
        [*ids, t0, t1],
    )
    return [_part(sid, b, n, c, total, peak) for sid, n, c, total, peak in rows]


def _minute_buckets(
    db: Database, ids: Sequence[int], first: int, end: int, step_min: int, origin_min: int
) -> list[_Part]:
    """The buckets' figures of the rollup's minutes [first, end) (buckets of step_min minutes from minute
    origin_min)."""
    # One grouped read of the rollup's rows (a day is 1,440 a series): a range of the key per series and
    # a group per bucket, cheaper here than _sample_buckets' one subquery per bucket (SQLite 195 -> 60 ms,
    # PostgreSQL 503 -> 90 ms for a host's 58 series over 24 h: bench/rollup_cost.py).
    rows = db.query(
        "SELECT series_id, (minute - ?) / ? AS b, SUM(present), SUM(valued), SUM(total), MAX(peak)"
        f" FROM sample_minutes WHERE series_id IN ({_marks(ids)}) AND minute >= ? AND minute < ?"
        " GROUP BY 1, 2 ORDER BY 1, 2",
        [origin_min, step_min, *ids, first, end],
    )
    return [_part(*row) for row in rows]


# --- the live view --------------------------------------------------------------------------------------


def _live_clauses() -> str:
    return "se.host = ? AND se.metric LIKE ? ESCAPE '\\' AND se.target NOT LIKE ? ESCAPE '\\'"


def live_series(db: Database, host: str, limit: int = 200) -> list[Series]:
    """The rate series of a host the live view shows (no job_stats jobs)."""
    rows = db.query(
        "SELECT se.id, se.host, se.source, se.target, se.metric, se.unit FROM series se"
        f" WHERE {_live_clauses()} ORDER BY se.source, se.target, se.metric LIMIT {int(limit)}",
        [host, RATE_LIKE, JOB_STATS_LIKE],
    )
    return [Series(int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), r[5]) for r in rows]


def latest_time(db: Database, host: str) -> float | None:
    """The time of the host's newest rate sample: each series' newest through the key (one step each), not
    a read of the host's whole history."""
    row = db.query_one(
        "SELECT MAX((SELECT MAX(s.t) FROM samples s WHERE s.series_id = se.id)) FROM series se"
        f" WHERE {_live_clauses()}",
        [host, RATE_LIKE, JOB_STATS_LIKE],
    )
    return None if row is None or row[0] is None else float(row[0])


def samples_after(
    db: Database, host: str, after: float, limit: int = 5000
) -> list[tuple[int, float, float | None]]:
    """The host's rate samples newer than `after`: (series id, t, value), oldest first, at most `limit`."""
    rows = db.query(
        "SELECT s.series_id, s.t, s.value FROM series se JOIN samples s ON s.series_id = se.id"
        f" WHERE {_live_clauses()} AND s.t > ? ORDER BY s.t, s.series_id LIMIT {int(limit)}",
        [host, RATE_LIKE, JOB_STATS_LIKE, after],
    )
    return [(int(r[0]), float(r[1]), None if r[2] is None else float(r[2])) for r in rows]


def latest_values(db: Database, ids: Sequence[int], since: float) -> dict[int, tuple[float, float | None]]:
    """Each series' newest sample at or after `since`: {series id: (t, value)} (series without one absent)."""
    if not ids:
        return {}
    rows = db.query(
        "SELECT s.series_id, s.t, s.value FROM samples s JOIN ("
        " SELECT series_id, MAX(t) AS t FROM samples"
        f" WHERE series_id IN ({_marks(ids)}) AND t >= ? GROUP BY series_id"
        ") newest ON newest.series_id = s.series_id AND newest.t = s.t",
        [*ids, since],
    )
    return {int(r[0]): (float(r[1]), None if r[2] is None else float(r[2])) for r in rows}


def history(db: Database, ids: Sequence[int], since: float) -> dict[int, list[tuple[float, float | None]]]:
    """The series' samples at or after `since`, oldest first (for a few series over a few minutes)."""
    if not ids:
        return {}
    rows = db.query(
        f"SELECT series_id, t, value FROM samples WHERE series_id IN ({_marks(ids)}) AND t >= ?"
        " ORDER BY series_id, t",
        [*ids, since],
    )
    out: dict[int, list[tuple[float, float | None]]] = {}
    for sid, t, v in rows:
        out.setdefault(int(sid), []).append((float(t), None if v is None else float(v)))
    return out


def series_by_id(db: Database, ids: Sequence[int]) -> list[Series]:
    if not ids:
        return []
    rows = db.query(
        f"SELECT id, host, source, target, metric, unit FROM series WHERE id IN ({_marks(ids)})", list(ids)
    )
    return [Series(int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), r[5]) for r in rows]


# --- top jobs -------------------------------------------------------------------------------------------

_TOP_ORDER = {
    "bytes": "bytes_read + bytes_written",
    "ops": "reads + writes",
    "meta": "meta_ops",
}


def job_stats_top(
    db: Database, t0: float, t1: float, by: str = "bytes", limit: int = 20
) -> list[dict[str, Any]]:
    """The jobs Lustre's job_stats saw grow the most within [t0, t1], added up over every server and
    target: bytes read and written (read_bytes, write_bytes `sum`), reads and writes (their `samples`),
    metadata operations (the `samples` of every other operation but read and write time). A counter grows
    by the rises between consecutive samples of its series; where it fell (Lustre dropped the job and it
    came back, counted from zero) the value after the fall is its rise. Also each job's first and last
    sample time and how many servers (hosts) and targets report it."""
    if by not in TOP_SORTS:
        raise ValueError(f"by {by!r}")
    find = _find(db)
    data_ops = ", ".join(f"'{op}'" for op in DATA_OPS)
    sql = (
        # The job series first, then their samples through the key (series_id, t): a window function over
        # a join would lead the planner to read the whole samples table in key order instead.
        "WITH js AS ("
        " SELECT id FROM series WHERE source = 'lustre' AND target LIKE ? ESCAPE '\\'"
        " AND metric IN ('sum', 'samples')),"
        " d AS ("
        " SELECT s.series_id AS series_id, s.t AS t, s.value AS v,"
        " s.value - LAG(s.value) OVER (PARTITION BY s.series_id ORDER BY s.t) AS dv"
        " FROM samples s WHERE s.series_id IN (SELECT id FROM js) AND s.t >= ? AND s.t <= ?),"
        " g AS ("
        " SELECT se.host AS host, se.target AS target, se.metric AS metric, MIN(d.t) AS t_first,"
        " MAX(d.t) AS t_last, SUM(CASE WHEN dv IS NULL THEN 0 WHEN dv >= 0 THEN dv ELSE v END) AS grown"
        " FROM d JOIN series se ON se.id = d.series_id GROUP BY se.id, se.host, se.target, se.metric),"
        f" j AS (SELECT host, target, metric, t_first, t_last, grown,"
        f" substr(target, {find}(target, '/jobs/') + 6) AS rest FROM g),"
        f" k AS (SELECT host, target, metric, t_first, t_last, grown,"
        f" substr(rest, 1, {find}(rest, '/counters/') - 1) AS job,"
        f" substr(rest, {find}(rest, '/counters/') + 10) AS op FROM j WHERE {find}(rest, '/counters/') > 0),"
        " per_job AS ("
        " SELECT job,"
        " SUM(CASE WHEN op = 'read_bytes' AND metric = 'sum' THEN grown ELSE 0 END) AS bytes_read,"
        " SUM(CASE WHEN op = 'write_bytes' AND metric = 'sum' THEN grown ELSE 0 END) AS bytes_written,"
        " SUM(CASE WHEN op = 'read_bytes' AND metric = 'samples' THEN grown ELSE 0 END) AS reads,"
        " SUM(CASE WHEN op = 'write_bytes' AND metric = 'samples' THEN grown ELSE 0 END) AS writes,"
        f" SUM(CASE WHEN op NOT IN ({data_ops}) AND metric = 'samples' THEN grown ELSE 0 END) AS meta_ops,"
        " MIN(t_first) AS t_first, MAX(t_last) AS t_last,"
        " COUNT(DISTINCT host) AS servers, COUNT(DISTINCT substr(target, 1, "
        f"{find}(target, '/jobs/') - 1)) AS targets"
        " FROM k WHERE op NOT LIKE '%/%' GROUP BY job)"
        f" SELECT * FROM per_job ORDER BY {_TOP_ORDER[by]} DESC, job LIMIT {int(limit)}"
    )
    return db.query_dicts(sql, [JOB_STATS_LIKE, t0, t1])


def profile_top(
    db: Database, t0: float, t1: float, by: str = "bytes", limit: int = 20
) -> list[dict[str, Any]]:
    """The profiled jobs that ran during [t0, t1] (started before its end, ended after its start, at most
    LONGEST_JOB_S before it) with the most bytes, read and write calls, or metadata operations (their whole
    run's totals)."""
    if by not in TOP_SORTS:
        raise ValueError(f"by {by!r}")
    return db.query_dicts(
        "SELECT * FROM ("
        " SELECT p.id AS id, p.job_id AS job_id, p.user_name AS user_name, p.exe AS exe,"
        " sy.name AS system, p.started_at AS started_at, p.runtime_s AS runtime_s,"
        " COALESCE(p.bytes_read, 0) AS bytes_read, COALESCE(p.bytes_written, 0) AS bytes_written,"
        " COALESCE(p.reads, 0) AS reads, COALESCE(p.writes, 0) AS writes,"
        " COALESCE(p.meta_ops, 0) AS meta_ops"
        " FROM profiles p LEFT JOIN systems sy ON sy.id = p.system_id"
        " WHERE p.started_at >= ? AND p.started_at <= ?"
        " AND COALESCE(p.ended_at, p.started_at + COALESCE(p.runtime_s, 0)) >= ?"
        f") top ORDER BY {_TOP_ORDER[by]} DESC, id DESC LIMIT {int(limit)}",
        [t0 - LONGEST_JOB_S, t1, t0],
    )
