"""The portal's questions about jobs (profiles): lists by owner, one job, its survey row, the owner's earlier
runs of the same program, and the latest benchmark figures of the job's system.

Every function that can return a job takes the viewer's user name (None for staff, who see every job) and
filters on it in SQL: a job of another user is not found, exactly as a job that does not exist.
"""

from __future__ import annotations

from typing import Any

from iolens.store.db import Database
from iolens.store.profiles import owner_names
from iolens.store.queries import PROFILE_COLUMNS, NotFound, _fix_bools, fold_phases, phases_of, stored_json

# The largest id a database can hold (a 64-bit integer): a larger one in a URL is no job, not an error.
MAX_ID = 2**63 - 1

JOB_SORTS = {
    "time": "p.started_at DESC, p.id DESC",
    "bytes": "(p.bytes_read + p.bytes_written) DESC, p.id DESC",
    "iotime": "(p.read_time_s + p.write_time_s + p.meta_time_s) DESC, p.id DESC",
}


def _owner(clauses: list[str], params: list[Any], owner: str | None) -> None:
    """Only `owner`'s jobs: stored under their name, or (Darshan logs carry a number only) as `uid N` with
    their uid on this machine."""
    if owner is not None:
        names = owner_names(owner)
        clauses.append(f"p.user_name IN ({', '.join('?' for _ in names)})")
        params.extend(names)


def job_list(
    db: Database,
    owner: str | None,
    user: str | None = None,
    sort: str = "time",
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    """One page of jobs (newest first by default) and how many there are in all. `owner`: the viewer's
    own jobs only (None: staff, every job); `user`: a staff filter on the job's user."""
    clauses: list[str] = []
    params: list[Any] = []
    _owner(clauses, params, owner)
    if user is not None:
        clauses.append("p.user_name = ?")
        params.append(user)
    where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
    total_row = db.query_one(f"SELECT COUNT(*) FROM profiles p {where}", params)
    # The page's ids first, from the index profiles_by_user alone (it holds the sort columns), then only
    # those rows: a sort by bytes or I/O time does not read every row of the user's jobs.
    order = JOB_SORTS[sort]
    rows = db.query_dicts(
        f"SELECT {PROFILE_COLUMNS} FROM (SELECT p.id AS id FROM profiles p {where} ORDER BY {order}"
        f" LIMIT {int(limit)} OFFSET {int(offset)}) k JOIN profiles p ON p.id = k.id"
        f" LEFT JOIN systems s ON s.id = p.system_id ORDER BY {order}",
        params,
    )
    return _fix_bools(rows, "truncated"), int(total_row[0]) if total_row else 0


def job(db: Database, profile_id: int, owner: str | None) -> dict[str, Any]:
    """One job's columns (no document); NotFound when it does not exist or is not `owner`'s."""
    if not 0 < profile_id <= MAX_ID:
        raise NotFound(f"no profile {profile_id}")
    clauses, params = ["p.id = ?"], [profile_id]
    _owner(clauses, params, owner)
    rows = db.query_dicts(
        f"SELECT {PROFILE_COLUMNS}, p.system_id AS system_id FROM profiles p"
        f" LEFT JOIN systems s ON s.id = p.system_id WHERE {' AND '.join(clauses)}",
        params,
    )
    if not rows:
        raise NotFound(f"no profile {profile_id}")
    return _fix_bools(rows, "truncated")[0]


def job_document(db: Database, profile_id: int) -> dict[str, Any]:
    """The job's JSON report (docs/profile.md); call after job() has checked who may see it."""
    row = db.query_one("SELECT document FROM profiles WHERE id = ?", (profile_id,))
    if row is None:
        raise NotFound(f"no profile {profile_id}")
    doc = stored_json(db, row[0], f"profile:{profile_id}'s document") if row[0] else None
    return doc if isinstance(doc, dict) else {}


# --- the survey row ------------------------------------------------------------------------------------
#
# The figures centers put in their application I/O surveys, one row a job. Each column is an SQL expression
# over `profiles p` (SURVEY_COLUMNS) or over the per-job file counts `f` that file_kinds() makes from
# profile_files (FILE_COLUMNS): a list of jobs selects the same expressions over more rows. Times are summed
# over the job's processes (Darshan's convention); a rate divides by the mean process's time (the sum over
# the processes), which is the job's rate when its processes do their I/O at the same time. A quotient whose
# divisor is 0 or unknown is NULL (NULLIF: both SQLite and PostgreSQL then answer NULL, not an error); the
# integer quotients are cast first (integer division truncates in both).

_IO_TIME = "(COALESCE(p.read_time_s, 0) + COALESCE(p.write_time_s, 0) + COALESCE(p.meta_time_s, 0))"
_BYTES = "(COALESCE(p.bytes_read, 0) + COALESCE(p.bytes_written, 0))"


def _per_process(seconds: str) -> str:
    """The mean process's share of a time summed over processes (NULL when 0 or unknown)."""
    return f"NULLIF({seconds} / NULLIF(p.processes, 0), 0)"


# (column, SQL expression over `profiles p`, what it is)
SURVEY_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("bytes_read", "p.bytes_read", "bytes read"),
    ("bytes_written", "p.bytes_written", "bytes written"),
    ("bytes_total", _BYTES, "bytes read + written"),
    ("reads", "p.reads", "read calls"),
    ("writes", "p.writes", "write calls"),
    ("meta_ops", "p.meta_ops", "metadata operations (opens, stats, seeks, syncs, …)"),
    ("read_time_s", "p.read_time_s", "time in reads, summed over the processes"),
    ("write_time_s", "p.write_time_s", "time in writes, summed over the processes"),
    ("meta_time_s", "p.meta_time_s", "time in metadata operations, summed over the processes"),
    ("io_time_s", _IO_TIME, "read + write + metadata time, summed over the processes"),
    ("runtime_s", "p.runtime_s", "the job's run time (wall clock)"),
    ("processes", "p.processes", "processes (ranks) of the job"),
    ("io_share", f"{_IO_TIME} / NULLIF(p.runtime_s * p.processes, 0)",
     "fraction of the run time spent in I/O: I/O time / (run time × processes)"),
    ("meta_share", f"p.meta_time_s / NULLIF({_IO_TIME}, 0)", "fraction of the I/O time spent in metadata"),
    ("io_rate_bytes_per_s", f"{_BYTES} / {_per_process(_IO_TIME)}",
     "bytes / the mean process's I/O time (read + write + metadata)"),
    ("runtime_rate_bytes_per_s", f"{_BYTES} / NULLIF(p.runtime_s, 0)", "bytes / run time"),
    ("read_rate_bytes_per_s", f"p.bytes_read / {_per_process('p.read_time_s')}",
     "bytes read / the mean process's read time"),
    ("write_rate_bytes_per_s", f"p.bytes_written / {_per_process('p.write_time_s')}",
     "bytes written / the mean process's write time"),
    ("meta_rate_ops_per_s", f"p.meta_ops / {_per_process('p.meta_time_s')}",
     "metadata operations / the mean process's metadata time"),
    ("mean_read_bytes", "CAST(p.bytes_read AS DOUBLE PRECISION) / NULLIF(p.reads, 0)", "bytes per read call"),
    ("mean_write_bytes", "CAST(p.bytes_written AS DOUBLE PRECISION) / NULLIF(p.writes, 0)",
     "bytes per write call"),
    ("files", "p.files", "files with data the job read or wrote (its report's count)"),
)  # fmt: skip

# (column, SQL expression over file_kinds()'s `f`, what it is): every recorded file of the job, code and
# libraries included, classed by its calls.
FILE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("files_read_only", "COALESCE(f.read_only, 0)", "files read and not written"),
    ("files_write_only", "COALESCE(f.write_only, 0)", "files written and not read"),
    ("files_read_write", "COALESCE(f.read_write, 0)", "files read and written"),
)


def select_list(columns: tuple[tuple[str, str, str], ...]) -> str:
    return ", ".join(f"{expr} AS {name}" for name, expr, _ in columns)


def file_kinds(where: str) -> str:
    """A table `f` (profile_id, read_only, write_only, read_write) of the profile_files rows that `where`
    selects (e.g. "profile_id = ?"), to LEFT JOIN on f.profile_id = p.id."""
    reads, writes = "COALESCE(reads, 0) > 0", "COALESCE(writes, 0) > 0"
    return (
        "(SELECT profile_id,"
        f" SUM(CASE WHEN {reads} AND NOT {writes} THEN 1 ELSE 0 END) AS read_only,"
        f" SUM(CASE WHEN {writes} AND NOT {reads} THEN 1 ELSE 0 END) AS write_only,"
        f" SUM(CASE WHEN {reads} AND {writes} THEN 1 ELSE 0 END) AS read_write"
        f" FROM profile_files WHERE {where} GROUP BY profile_id) f"
    )


def survey_row(db: Database, profile_id: int) -> dict[str, Any]:
    """One job's survey row (SURVEY_COLUMNS and FILE_COLUMNS, by name); call after job()."""
    rows = db.query_dicts(
        f"SELECT {select_list(SURVEY_COLUMNS)}, {select_list(FILE_COLUMNS)} FROM profiles p"
        f" LEFT JOIN {file_kinds('profile_id = ?')} ON f.profile_id = p.id WHERE p.id = ?",
        (profile_id, profile_id),
    )
    if not rows:
        raise NotFound(f"no profile {profile_id}")
    return rows[0]


# --- the user's earlier runs of the same program -----------------------------------------------------------

EARLIER_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("id", "p.id", "profile id"),
    ("job_id", "p.job_id", "the batch system's job id"),
    ("started_at", "p.started_at", "start (epoch seconds)"),
    *(c for c in SURVEY_COLUMNS if c[0] in ("runtime_s", "processes", "bytes_total", "io_time_s", "io_share",
                                           "io_rate_bytes_per_s")),
)  # fmt: skip


def earlier_runs(
    db: Database, user: str | None, exe: str | None, until: float | None, limit: int = 50
) -> list[dict[str, Any]]:
    """The user's runs of the program `exe` that started at or before `until` (every one when None), the
    latest `limit` of them, oldest first. Walks the profiles_by_user index backwards from `until`."""
    if user is None or exe is None:
        return []
    clauses, params = ["p.user_name = ?", "p.exe = ?"], [user, exe]
    if until is not None:
        clauses.append("p.started_at <= ?")
        params.append(until)
    rows = db.query_dicts(
        f"SELECT {select_list(EARLIER_COLUMNS)} FROM profiles p WHERE {' AND '.join(clauses)}"
        f" ORDER BY p.started_at DESC, p.id DESC LIMIT {int(limit)}",
        params,
    )
    rows.reverse()
    return rows


# --- the storage's latest benchmark figures ----------------------------------------------------------------

# The benchmarks a job is put beside, and how many of each tool's latest runs are read: IOR's runs differ by
# their transfer size, so its latest runs are looked through for one of each size.
BENCH_RUNS = {"io500": 1, "mdtest": 1, "ior": 50}


def latest_benchmarks(db: Database, system_id: int | None) -> list[dict[str, Any]]:
    """The system's latest successful io500 and mdtest run and its latest ior runs (BENCH_RUNS), newest first:
    id, tool, started_at, config (parsed), phases (queries.fold_phases: iterations folded). Each tool's runs
    are read newest first through runs_by_system (system_id, started_at), stopping at BENCH_RUNS."""
    if system_id is None:
        return []
    runs: list[dict[str, Any]] = []
    for tool, most in BENCH_RUNS.items():
        runs += db.query_dicts(
            "SELECT r.id AS id, r.tool AS tool, r.started_at AS started_at, r.config AS config FROM runs r"
            " WHERE r.system_id = ? AND r.tool = ? AND r.status = 'ok'"
            f" ORDER BY r.started_at DESC, r.id DESC LIMIT {int(most)}",
            (system_id, tool),
        )
    phases: dict[int, list[dict[str, Any]]] = {r["id"]: [] for r in runs}
    for row in phases_of(db, list(phases)):
        phases[row["run_id"]].append(row)
    for r in runs:
        r["config"] = stored_json(db, r["config"], f"run {r['id']}'s config") if r["config"] else None
        r["phases"] = fold_phases(phases[r["id"]])
    runs.sort(key=lambda r: (r["started_at"] or 0, r["id"]), reverse=True)
    return runs
