"""The portal's questions about benchmarks: the systems overview, a system's main phases and IO500 runs, a
page of runs. Staff only (the pages check that); the history lines and regressions are queries.trend() and
queries.regressions(), comparisons queries.compare().

Each answer is aggregated in SQL and bounded (a page of rows, a count), so a database of thousands of runs
is never read into Python whole.
"""

from __future__ import annotations

from typing import Any

from iolens.store.db import Database
from iolens.store.queries import RUN_COLUMNS, RUNS_JOINED, NotFound, _fix_bools, _run_filter

# SQLite and PostgreSQL keep ids in signed 64-bit integers: a bigger one is no row (and must not reach the
# driver, which would fail on it).
MAX_ID = 2**63 - 1

# The IO500 figures a run's list row shows: its score phases (kind 'score'), mean over iterations.
_SCORE = (
    "(SELECT AVG(p.value) FROM phases p WHERE p.run_id = r.id AND p.name = '{name}' AND p.kind = 'score')"
)


def systems_overview(db: Database) -> list[dict[str, Any]]:
    """Every system with its number of runs and profiles, its last run's time, and its latest IO500 score
    (with that run's id and validity), in one query."""
    rows = db.query_dicts(
        "SELECT s.id AS id, s.name AS name, s.site AS site, s.fs_type AS fs_type,"
        " (SELECT COUNT(*) FROM runs r WHERE r.system_id = s.id) AS runs,"
        " COALESCE(pc.n, 0) AS profiles,"
        " (SELECT MAX(r.started_at) FROM runs r WHERE r.system_id = s.id) AS last_run,"
        " li.score AS io500_score, li.id AS io500_run, li.valid AS io500_valid"
        # one grouped count of profiles (read from the profiles_by_system index), not one query per system
        " FROM systems s LEFT JOIN (SELECT system_id, COUNT(*) AS n FROM profiles GROUP BY system_id) pc"
        " ON pc.system_id = s.id"
        " LEFT JOIN runs li ON li.id = (SELECT r.id FROM runs r WHERE r.system_id = s.id AND r.tool = 'io500'"
        " AND r.score IS NOT NULL ORDER BY r.started_at DESC, r.id DESC LIMIT 1)"
        " ORDER BY s.name"
    )
    return _fix_bools(rows, "io500_valid")


def system(db: Database, name: str) -> dict[str, Any]:
    """A system's row by its name; NotFound when there is none."""
    if "\x00" in name or len(name) > 1000:  # no stored name holds these; PostgreSQL refuses a NUL
        raise NotFound("no such system")
    rows = db.query_dicts(
        "SELECT id, name, site, fs_type, fs_version, servers, clients, description FROM systems"
        " WHERE name = ?",
        (name,),
    )
    if not rows:
        raise NotFound("no such system")
    return rows[0]


def main_phases(db: Database, system_id: int) -> list[dict[str, Any]]:
    """The (tool, phase, kind, unit) pairs the system's runs measured, with how many runs measured each."""
    return db.query_dicts(
        "SELECT r.tool AS tool, p.name AS name, p.kind AS kind, MIN(p.unit) AS unit,"
        " COUNT(DISTINCT r.id) AS runs, MIN(p.seq) AS seq"
        " FROM runs r JOIN phases p ON p.run_id = r.id"
        " WHERE r.system_id = ? AND p.value IS NOT NULL AND r.status = 'ok'"
        " GROUP BY r.tool, p.name, p.kind ORDER BY r.tool, MIN(p.seq), p.name",
        (system_id,),
    )


def io500_runs(db: Database, system_id: int, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    """One page of the system's IO500 runs, newest first: score, BW, MD, validity, status, cache mode; and
    how many there are in all."""
    total = db.query_one(
        "SELECT COUNT(*) FROM runs r WHERE r.system_id = ? AND r.tool = 'io500'", (system_id,)
    )
    rows = db.query_dicts(
        "SELECT r.id AS id, r.started_at AS started_at, r.origin AS origin, r.status AS status,"
        " r.valid AS valid, r.score AS score, r.ranks AS ranks, r.nodes AS nodes,"
        " cm.cache_mode AS cache_mode,"
        f" {_SCORE.format(name='bw')} AS bw, {_SCORE.format(name='md')} AS md"
        " FROM runs r LEFT JOIN run_cache_modes cm ON cm.run_id = r.id"
        " WHERE r.system_id = ? AND r.tool = 'io500'"
        f" ORDER BY r.started_at DESC, r.id DESC LIMIT {int(limit)} OFFSET {int(offset)}",
        (system_id,),
    )
    return _fix_bools(rows, "valid"), int(total[0]) if total else 0


def tools(db: Database) -> list[str]:
    """The tools runs were made with (the runs list's filter)."""
    return [r[0] for r in db.query("SELECT DISTINCT tool FROM runs ORDER BY tool")]


def run_list(
    db: Database, system: str | None, tool: str | None, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    """One page of runs, newest first, of one system and/or tool; and how many there are in all."""
    where, params = _run_filter(system, tool, None)
    total = db.query_one(f"SELECT COUNT(*) FROM {RUNS_JOINED} {where}", params)
    rows = db.query_dicts(
        f"SELECT {RUN_COLUMNS} FROM {RUNS_JOINED} {where}"
        f" ORDER BY r.started_at DESC, r.id DESC LIMIT {int(limit)} OFFSET {int(offset)}",
        params,
    )
    return _fix_bools(rows, "valid"), int(total[0]) if total else 0
