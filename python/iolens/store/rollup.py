"""The per-minute rollup of monitoring samples: table sample_minutes, kept by the database itself.

A dashboard over a day reads a host's samples at one second: 2.9M rows for 58 series, 0.7 s of a server
core per page (bench/web_load.py). Each (series, minute) has one rollup row instead: how many samples
(`present`), how many with a value (`valued`), their sum (`total`) and maximum (`peak`) — what a bucket's
count, mean and maximum are made of — so a bucket of whole minutes reads 60 times fewer rows.

Triggers on samples keep the rollup, in the transaction that writes the samples, whoever writes them (the
monitor's sink, an import, a center's own SQL): it is never stale and never needs a rebuild. An insert adds
to its minute (PostgreSQL: one statement-level trigger per insert or COPY, reading the rows it inserted from
a transition table; rows an ON CONFLICT DO NOTHING skipped are not in it). A delete subtracts, and finds
the minute's maximum again from the samples left only when it removed it; an update is a delete and an
insert. A minute with no sample left has no row.

Minute m holds the samples with m*60 <= t < (m+1)*60. `t / 60` can round up to the next integer for a t just
below a multiple of 60, so each dialect's floor is corrected by comparing back with t: the rollup's minutes
and the ranges the readers ask for around them (portal_monitor.buckets) then agree to the last sample.
"""

from __future__ import annotations

MINUTE_S = 60

# minute(t) in each dialect; `{t}` is the column expression.
_SQLITE_MINUTE = "(CAST({t} / 60 AS INTEGER) - ({t} < CAST({t} / 60 AS INTEGER) * 60))"
_PG_MINUTE = "(floor({t} / 60) - ({t} < floor({t} / 60) * 60)::int)::bigint"


def minute_of(dialect: str, t: str) -> str:
    """The SQL expression of the minute that holds time `t` (a column or expression)."""
    return (_PG_MINUTE if dialect == "postgresql" else _SQLITE_MINUTE).format(t=t)


TABLE = """CREATE TABLE sample_minutes (
    series_id {int} NOT NULL REFERENCES series (id),
    minute {int} NOT NULL,
    present {int} NOT NULL,
    valued {int} NOT NULL,
    total {real},
    peak {real},
    PRIMARY KEY (series_id, minute)
) {without_rowid}"""


def _fill(dialect: str) -> str:
    """The rollup of the samples already stored (the migration's one pass over them)."""
    m = minute_of(dialect, "t")
    return (
        "INSERT INTO sample_minutes (series_id, minute, present, valued, total, peak)"
        f" SELECT series_id, {m}, COUNT(*), COUNT(value), SUM(value), MAX(value) FROM samples"
        f" GROUP BY series_id, {m}"
    )


# --- SQLite: row triggers --------------------------------------------------------------------------------


def _sqlite_add(row: str) -> str:
    m = minute_of("sqlite", f"{row}.t")
    return (
        "INSERT INTO sample_minutes (series_id, minute, present, valued, total, peak)"
        f" VALUES ({row}.series_id, {m}, 1, {row}.value IS NOT NULL, {row}.value, {row}.value)"
        " ON CONFLICT (series_id, minute) DO UPDATE SET present = present + 1,"
        " valued = valued + excluded.valued,"
        " total = COALESCE(total + excluded.total, total, excluded.total),"
        " peak = COALESCE(MAX(peak, excluded.peak), peak, excluded.peak);"
    )


def _sqlite_remove(row: str) -> str:
    m = minute_of("sqlite", f"{row}.t")
    key = f"series_id = {row}.series_id AND minute = {m}"
    return (
        "UPDATE sample_minutes SET present = present - 1,"
        f" valued = valued - ({row}.value IS NOT NULL),"
        f" total = CASE WHEN {row}.value IS NULL THEN total WHEN valued = 1 THEN NULL"
        f" ELSE total - {row}.value END,"
        f" peak = CASE WHEN {row}.value IS NULL OR {row}.value < peak THEN peak ELSE"
        f" (SELECT MAX(s.value) FROM samples s WHERE s.series_id = {row}.series_id"
        f" AND s.t >= {m} * 60 AND s.t < ({m} + 1) * 60) END"
        f" WHERE {key};"
        f" DELETE FROM sample_minutes WHERE {key} AND present <= 0;"
    )


def _sqlite_triggers() -> list[str]:
    return [
        f"CREATE TRIGGER samples_rollup_insert AFTER INSERT ON samples BEGIN {_sqlite_add('NEW')} END",
        f"CREATE TRIGGER samples_rollup_delete AFTER DELETE ON samples BEGIN {_sqlite_remove('OLD')} END",
        "CREATE TRIGGER samples_rollup_update AFTER UPDATE ON samples BEGIN"
        f" {_sqlite_remove('OLD')} {_sqlite_add('NEW')} END",
    ]


# --- PostgreSQL: statement triggers over transition tables -----------------------------------------------


def _pg_add(rows: str) -> str:
    m = minute_of("postgresql", "t")
    # In key order: two writers adding to the same minutes lock their rows in one order (no deadlock).
    return (
        "INSERT INTO sample_minutes AS r (series_id, minute, present, valued, total, peak)"
        f" SELECT series_id, {m}, COUNT(*), COUNT(value), SUM(value), MAX(value) FROM {rows}"
        f" GROUP BY series_id, {m} ORDER BY 1, 2"
        " ON CONFLICT (series_id, minute) DO UPDATE SET present = r.present + excluded.present,"
        " valued = r.valued + excluded.valued,"
        " total = COALESCE(r.total + excluded.total, r.total, excluded.total),"
        " peak = GREATEST(r.peak, excluded.peak);"
    )


def _pg_remove(rows: str) -> str:
    m = minute_of("postgresql", "t")
    gone = (
        f"SELECT series_id, {m} AS minute, COUNT(*) AS present, COUNT(value) AS valued,"
        f" SUM(value) AS total, MAX(value) AS peak FROM {rows} GROUP BY series_id, {m}"
    )
    return (
        "UPDATE sample_minutes r SET present = r.present - g.present, valued = r.valued - g.valued,"
        " total = CASE WHEN g.valued = 0 THEN r.total WHEN r.valued = g.valued THEN NULL"
        " ELSE r.total - g.total END,"
        " peak = CASE WHEN g.peak IS NULL OR g.peak < r.peak THEN r.peak ELSE"
        " (SELECT MAX(s.value) FROM samples s WHERE s.series_id = r.series_id"
        " AND s.t >= r.minute * 60 AND s.t < (r.minute + 1) * 60) END"
        f" FROM ({gone}) g WHERE r.series_id = g.series_id AND r.minute = g.minute;"
        f" DELETE FROM sample_minutes r USING ({gone}) g"
        " WHERE r.series_id = g.series_id AND r.minute = g.minute AND r.present <= 0;"
    )


def _pg_function(name: str, body: str) -> str:
    # SECURITY DEFINER: the rollup is the schema owner's bookkeeping, so a role a center lets insert samples
    # (a monitor's) needs no right on sample_minutes; the search path is fixed to the schema's, so no table
    # a caller puts earlier in its own path is written instead.
    return (
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER"
        f" SET search_path FROM CURRENT AS $body$ BEGIN {body} RETURN NULL; END $body$"
    )


def _pg_triggers() -> list[str]:
    return [
        _pg_function("iolens_samples_rollup_insert", _pg_add("added")),
        _pg_function("iolens_samples_rollup_delete", _pg_remove("removed")),
        _pg_function("iolens_samples_rollup_update", _pg_remove("removed") + " " + _pg_add("added")),
        "CREATE TRIGGER samples_rollup_insert AFTER INSERT ON samples REFERENCING NEW TABLE AS added"
        " FOR EACH STATEMENT EXECUTE FUNCTION iolens_samples_rollup_insert()",
        "CREATE TRIGGER samples_rollup_delete AFTER DELETE ON samples REFERENCING OLD TABLE AS removed"
        " FOR EACH STATEMENT EXECUTE FUNCTION iolens_samples_rollup_delete()",
        "CREATE TRIGGER samples_rollup_update AFTER UPDATE ON samples"
        " REFERENCING OLD TABLE AS removed NEW TABLE AS added"
        " FOR EACH STATEMENT EXECUTE FUNCTION iolens_samples_rollup_update()",
    ]


TRIGGERS = ("samples_rollup_insert", "samples_rollup_delete", "samples_rollup_update")


def migration(dialect: str) -> list[str]:
    """The statements that add the rollup to a database of `dialect` (types still as placeholders)."""
    triggers = _pg_triggers() if dialect == "postgresql" else _sqlite_triggers()
    return [TABLE, _fill(dialect), *triggers]
