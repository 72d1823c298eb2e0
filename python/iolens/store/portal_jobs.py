"""The portal's questions about jobs (profiles): lists by owner, one job's survey row, its owner.

Every function that can return a job takes the viewer's user name (None for staff, who see every job) and
filters on it in SQL: a job of another user is not found, exactly as a job that does not exist.
"""

from __future__ import annotations

from typing import Any

from iolens.store.db import Database
from iolens.store.queries import PROFILE_COLUMNS, NotFound, _fix_bools

JOB_SORTS = {
    "time": "p.started_at DESC, p.id DESC",
    "bytes": "(p.bytes_read + p.bytes_written) DESC, p.id DESC",
    "iotime": "(p.read_time_s + p.write_time_s + p.meta_time_s) DESC, p.id DESC",
}


def _owner(clauses: list[str], params: list[Any], owner: str | None) -> None:
    if owner is not None:
        clauses.append("p.user_name = ?")
        params.append(owner)


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
    rows = db.query_dicts(
        f"SELECT {PROFILE_COLUMNS} FROM profiles p LEFT JOIN systems s ON s.id = p.system_id {where}"
        f" ORDER BY {JOB_SORTS[sort]} LIMIT {int(limit)} OFFSET {int(offset)}",
        params,
    )
    return _fix_bools(rows, "truncated"), int(total_row[0]) if total_row else 0


def job(db: Database, profile_id: int, owner: str | None) -> dict[str, Any]:
    """One job's columns (no document); NotFound when it does not exist or is not `owner`'s."""
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
