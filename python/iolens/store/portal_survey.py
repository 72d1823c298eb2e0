"""The application I/O survey across jobs (the portal's /survey, staff only): one row per job, or the same
figures added up per user or per program, filtered and sorted in SQL.

Every figure is an SQL expression over a profile row `p` (JOB_FIGURES), so another query (one job's page,
store.portal_jobs) can select exactly the same figures by formatting them into its own SELECT. A page of
jobs is one query (its LIMIT/OFFSET inside, the account read from the documents of those rows only) plus
one COUNT; an export reads the jobs in id order in batches (keyset on the id), never all at once.

Definitions (docs/web.md, "Survey"):
- total I/O size: bytes read + bytes written;
- I/O time: read + write + metadata time, summed over the job's processes;
- % I/O time: I/O time / (run time × processes): the share of the job's process time spent in I/O (above
  100% when the threads of a process do I/O at once);
- I/O speed: total bytes / I/O time (per process second of I/O);
- % metadata: metadata time / I/O time.
A ratio whose denominator is 0 or unknown is NULL (shown as "-").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from iolens.store.db import Database

TOTAL_BYTES = "(COALESCE(p.bytes_read, 0) + COALESCE(p.bytes_written, 0))"
IO_TIME = "(COALESCE(p.read_time_s, 0) + COALESCE(p.write_time_s, 0) + COALESCE(p.meta_time_s, 0))"
PROCESS_TIME = "(p.runtime_s * p.processes)"  # NULL when either is unknown

# One job's survey figures: name -> SQL over `p` (profiles).
JOB_FIGURES: dict[str, str] = {
    "total_bytes": TOTAL_BYTES,
    "io_time_s": IO_TIME,
    "io_share": f"({IO_TIME} / NULLIF({PROCESS_TIME}, 0))",
    "io_bytes_per_s": f"({TOTAL_BYTES} / NULLIF({IO_TIME}, 0))",
    "meta_share": f"(COALESCE(p.meta_time_s, 0) / NULLIF({IO_TIME}, 0))",
}

# The same figures over a group of jobs: totals, and ratios of totals (not means of ratios: a job of one
# second does not weigh as much as a job of a day). The sums are taken once per group (GROUP_SUMS, over
# `p`), the ratios from them (GROUP_RATIOS, over the sums): each row's I/O time is added up once, not once
# per ratio. The process-time share counts only jobs whose process time is known, on both sides of the
# ratio. PostgreSQL's SUM of a BIGINT is a NUMERIC: cast back.
_KNOWN = f"{PROCESS_TIME} > 0"
GROUP_SUMS: dict[str, str] = {
    "jobs": "COUNT(*)",
    "processes": "CAST(SUM(p.processes) AS BIGINT)",
    "runtime_s": "SUM(p.runtime_s)",
    "bytes_read": "CAST(SUM(COALESCE(p.bytes_read, 0)) AS BIGINT)",
    "bytes_written": "CAST(SUM(COALESCE(p.bytes_written, 0)) AS BIGINT)",
    "io_time_s": f"SUM({IO_TIME})",
    "known_io_time_s": f"SUM(CASE WHEN {_KNOWN} THEN {IO_TIME} END)",
    "known_process_s": f"SUM(CASE WHEN {_KNOWN} THEN {PROCESS_TIME} END)",
    "files": "CAST(SUM(COALESCE(p.files, 0)) AS BIGINT)",
    "meta_ops": "CAST(SUM(COALESCE(p.meta_ops, 0)) AS BIGINT)",
    "meta_time_s": "SUM(COALESCE(p.meta_time_s, 0))",
}
GROUP_RATIOS: dict[str, str] = {
    "total_bytes": "(g.bytes_read + g.bytes_written)",
    "io_share": "(g.known_io_time_s / NULLIF(g.known_process_s, 0))",
    "io_bytes_per_s": "((g.bytes_read + g.bytes_written) / NULLIF(g.io_time_s, 0))",
    "meta_share": "(g.meta_time_s / NULLIF(g.io_time_s, 0))",
}

# A job row's own columns, then its figures.
JOB_COLUMNS = (
    "p.id AS id, p.job_id AS job_id, p.user_name AS user_name, p.exe AS exe, s.name AS system,"
    " p.started_at AS started_at, p.processes AS processes, p.runtime_s AS runtime_s,"
    " p.bytes_read AS bytes_read, p.bytes_written AS bytes_written, p.files AS files,"
    " p.meta_ops AS meta_ops, p.meta_time_s AS meta_time_s, "
    + ", ".join(f"{sql} AS {name}" for name, sql in JOB_FIGURES.items())
)

# Sort keys of the job table (a direction and then the id break ties; unknown values go last).
JOB_SORTS: dict[str, str] = {
    "time": "p.started_at",
    "user": "p.user_name",
    "program": "p.exe",
    "bytes": TOTAL_BYTES,
    "runtime": "p.runtime_s",
    "io_share": JOB_FIGURES["io_share"],
    "io_speed": JOB_FIGURES["io_bytes_per_s"],
    "files": "p.files",
    "meta_ops": "p.meta_ops",
    "meta_share": JOB_FIGURES["meta_share"],
}
# The group table follows the same keys (by total bytes where the key is the job's start time).
GROUP_SORTS: dict[str, str] = {
    "time": "total_bytes",
    "user": "grp",
    "program": "grp",
    "bytes": "total_bytes",
    "runtime": "runtime_s",
    "io_share": "io_share",
    "io_speed": "io_bytes_per_s",
    "files": "files",
    "meta_ops": "meta_ops",
    "meta_share": "meta_share",
}
# What jobs are grouped by; no value is grouped as "" (so a keyset on the key walks every group).
GROUP_KEYS: dict[str, str] = {"user": "COALESCE(p.user_name, '')", "program": "COALESCE(p.exe, '')"}

# The account a job was charged to, where its stored document names one (a top-level "account"). Profiles
# have no account column yet (issue 21's scheduler import will add one); read only for the rows shown
# (a page's 50, an export's batch).
ACCOUNT: dict[str, str] = {
    "sqlite": "json_extract(p.document, '$.account')",
    "postgresql": "(p.document::json ->> 'account')",
}


@dataclass(frozen=True)
class SurveyFilter:
    """Which jobs the survey covers; None: no condition."""

    user: str | None = None  # the job's user, exactly
    program: str | None = None  # a substring of the executable's path, any case
    system: str | None = None  # the system's name, exactly
    since: float | None = None  # started at or after (epoch seconds)
    until: float | None = None  # started before
    min_bytes: int | None = None  # total I/O size at least

    def where(self) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if self.user is not None:
            clauses.append("p.user_name = ?")
            params.append(self.user)
        if self.program is not None:
            clauses.append("LOWER(p.exe) LIKE ? ESCAPE '\\'")
            params.append("%" + like_escape(self.program.lower()) + "%")
        if self.system is not None:
            clauses.append("p.system_id IN (SELECT id FROM systems WHERE name = ?)")
            params.append(self.system)
        if self.since is not None:
            clauses.append("p.started_at >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append("p.started_at < ?")
            params.append(self.until)
        if self.min_bytes is not None:
            clauses.append(f"{TOTAL_BYTES} >= ?")
            params.append(self.min_bytes)
        return " AND ".join(clauses) or "1 = 1", params


def like_escape(text: str) -> str:
    """Text matched literally inside a LIKE pattern (with ESCAPE '\\')."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _direction(descending: bool) -> str:
    return "DESC" if descending else "ASC"


def job_count(db: Database, f: SurveyFilter) -> int:
    where, params = f.where()
    row = db.query_one(f"SELECT COUNT(*) FROM profiles p WHERE {where}", params)
    return int(row[0]) if row else 0


def job_page(
    db: Database,
    f: SurveyFilter,
    sort: str = "time",
    descending: bool = True,
    limit: int = 50,
    offset: int = 0,
) -> list[dict[str, Any]]:
    """One page of the job table, sorted by JOB_SORTS[sort]: one query. The page's ids are chosen inside
    (only the sort key is worked out for every job), then only those rows are read, with their documents
    for the account."""
    where, params = f.where()
    d = _direction(descending)
    return db.query_dicts(
        f"SELECT {JOB_COLUMNS}, {ACCOUNT[db.dialect]} AS account FROM ("
        f"SELECT p.id AS id, {JOB_SORTS[sort]} AS sort_key FROM profiles p WHERE {where}"
        f" ORDER BY sort_key {d} NULLS LAST, p.id {d} LIMIT {int(limit)} OFFSET {int(offset)}"
        ") k JOIN profiles p ON p.id = k.id LEFT JOIN systems s ON s.id = p.system_id"
        f" ORDER BY k.sort_key {d} NULLS LAST, k.id {d}",
        params,
    )


def job_batch(db: Database, f: SurveyFilter, after_id: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
    """The next `limit` jobs of the survey in id order after `after_id`: an export reads it batch by batch
    (a keyset on the primary key: each batch costs the same, and the whole survey never sits in memory)."""
    where, params = f.where()
    return db.query_dicts(
        f"SELECT {JOB_COLUMNS}, {ACCOUNT[db.dialect]} AS account"
        f" FROM profiles p LEFT JOIN systems s ON s.id = p.system_id"
        f" WHERE {where} AND p.id > ? ORDER BY p.id LIMIT {int(limit)}",
        [*params, after_id],
    )


def _groups(key: str, where: str, order: str, limit: int) -> str:
    """The per-group query: sums per group inside, ratios outside, and how many groups there are in all
    (a window over the grouped rows: no second scan of the jobs)."""
    sums = ", ".join(f"{sql} AS {name}" for name, sql in GROUP_SUMS.items())
    ratios = ", ".join(f"{sql} AS {name}" for name, sql in GROUP_RATIOS.items())
    return (
        f"SELECT g.*, {ratios}, COUNT(*) OVER () AS group_total FROM ("
        f"SELECT {GROUP_KEYS[key]} AS grp, {sums} FROM profiles p WHERE {where} GROUP BY {GROUP_KEYS[key]}"
        f") g ORDER BY {order} LIMIT {int(limit)}"
    )


def group_page(
    db: Database,
    f: SurveyFilter,
    key: str = "user",
    sort: str = "bytes",
    descending: bool = True,
    limit: int = 50,
) -> tuple[list[dict[str, Any]], int]:
    """The survey's figures per user or per program (GROUP_KEYS), sorted by GROUP_SORTS[sort], and how
    many groups there are in all: one query."""
    where, params = f.where()
    d = _direction(descending)
    rows = db.query_dicts(_groups(key, where, f"{GROUP_SORTS[sort]} {d} NULLS LAST, grp", limit), params)
    return rows, int(rows[0]["group_total"]) if rows else 0


def group_count(db: Database, f: SurveyFilter, key: str) -> int:
    where, params = f.where()
    row = db.query_one(
        f"SELECT COUNT(*) FROM (SELECT 1 AS one FROM profiles p WHERE {where} GROUP BY {GROUP_KEYS[key]}) g",
        params,
    )
    return int(row[0]) if row else 0


def group_batch(
    db: Database, f: SurveyFilter, key: str = "user", after: str | None = None, limit: int = 1000
) -> list[dict[str, Any]]:
    """The next `limit` groups in the order of their key after `after` (None: from the first): a keyset on
    the key, as job_batch."""
    where, params = f.where()
    if after is not None:
        where, params = f"{where} AND {GROUP_KEYS[key]} > ?", [*params, after]
    return db.query_dicts(_groups(key, where, "grp", limit), params)


def system_names(db: Database) -> list[str]:
    """Every system's name, for the survey's system filter."""
    return [str(r[0]) for r in db.query("SELECT name FROM systems ORDER BY name")]
