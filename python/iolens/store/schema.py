"""The store's schema, one definition for SQLite and PostgreSQL, and its migrations.

Each migration is a list of statements with the column types as placeholders ({id}, {int}, {real}, {bool},
{text}, {without_rowid}) that db.Database.ddl() spells in its dialect. The version a database is at lives in
the table iolens_meta (key 'schema_version'); migrate() brings an older database up to SCHEMA_VERSION in one
transaction, and refuses a database at a higher version (written by a newer iolens) instead of guessing.

Times are seconds since the epoch (UTC) as floats; latencies are integer nanoseconds; bytes are integers;
JSON is kept as compact text: documents in canonical form (keys sorted, no spaces; records.canonical_json),
with every value they came with but not their formatting (docs/db.md, "Schema").
"""

from __future__ import annotations

import time
from collections.abc import Callable

from iolens import __version__
from iolens.store import rollup
from iolens.store.db import Database, StoreError, describe

# A migration's step: one statement, or a function of the dialect that gives its statements (triggers and
# functions are spelt differently in SQLite and PostgreSQL).
Step = str | Callable[[str], list[str]]

# The portal's survey lists jobs newest first, unknown start times last (ORDER BY started_at DESC NULLS LAST,
# id DESC). PostgreSQL puts NULLs first in a descending scan of an ascending index, so without an index in
# that order it sorted all 100,000 jobs of bench/web_load.py for each page (33 ms; with it 1.5 ms). SQLite
# sorts NULLs as the smallest values: its ascending profiles_by_time, read backwards, is already that order.
_NEWEST_FIRST = ["CREATE INDEX profiles_newest_first ON profiles (started_at DESC NULLS LAST, id DESC)"]

MIGRATIONS: list[list[Step]] = [
    # --- version 1 --------------------------------------------------------------------------------------
    [
        """CREATE TABLE iolens_meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        )""",
        # The systems runs and profiles are tagged with: the fields an IO500 submission records.
        """CREATE TABLE systems (
            id {id},
            name TEXT NOT NULL UNIQUE,
            site TEXT,
            fs_type TEXT,
            fs_version TEXT,
            servers {int},
            clients {int},
            description TEXT,
            info TEXT,
            created_at {real} NOT NULL
        )""",
        """CREATE TABLE runs (
            id {id},
            uid TEXT NOT NULL UNIQUE,
            system_id {int} REFERENCES systems (id),
            tool TEXT NOT NULL,
            origin TEXT NOT NULL,
            version TEXT,
            command TEXT,
            config TEXT,
            config_hash TEXT,
            started_at {real},
            ended_at {real},
            ranks {int},
            nodes {int},
            hostname TEXT,
            file_system TEXT,
            status TEXT NOT NULL,
            valid {bool},
            score {real},
            source_path TEXT,
            imported_at {real} NOT NULL,
            document TEXT NOT NULL
        )""",
        "CREATE INDEX runs_by_system ON runs (system_id, started_at)",
        "CREATE INDEX runs_by_tool ON runs (tool, started_at)",
        "CREATE INDEX runs_by_time ON runs (started_at)",
        """CREATE TABLE phases (
            id {id},
            run_id {int} NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            seq {int} NOT NULL,
            name TEXT NOT NULL,
            iteration {int} NOT NULL,
            kind TEXT NOT NULL,
            value {real},
            unit TEXT,
            bytes {int},
            ops {int},
            time_s {real},
            started_at {real},
            ended_at {real},
            lat_count {int},
            lat_mean_ns {real},
            p50_ns {int},
            p90_ns {int},
            p99_ns {int},
            p99_9_ns {int},
            max_ns {int},
            valid {bool},
            status TEXT,
            UNIQUE (run_id, seq)
        )""",
        "CREATE INDEX phases_by_name ON phases (name, run_id)",
        # Monitoring: one row per value (narrow); the repeated labels of a series are stored once.
        """CREATE TABLE series (
            id {id},
            host TEXT NOT NULL,
            source TEXT NOT NULL,
            target TEXT NOT NULL,
            metric TEXT NOT NULL,
            unit TEXT,
            UNIQUE (host, source, target, metric)
        )""",
        """CREATE TABLE samples (
            series_id {int} NOT NULL REFERENCES series (id),
            t {real} NOT NULL,
            value {real},
            PRIMARY KEY (series_id, t)
        ) {without_rowid}""",
        """CREATE VIEW monitor_samples AS
            SELECT s.t AS t, se.host AS host, se.source AS source, se.target AS target,
                   se.metric AS metric, s.value AS value, se.unit AS unit
            FROM samples s JOIN series se ON se.id = s.series_id""",
        """CREATE TABLE sample_imports (
            id {id},
            uid TEXT NOT NULL UNIQUE,
            source_path TEXT,
            imported_at {real} NOT NULL,
            samples {int} NOT NULL,
            series {int} NOT NULL,
            t_min {real},
            t_max {real}
        )""",
        """CREATE TABLE profiles (
            id {id},
            uid TEXT NOT NULL UNIQUE,
            system_id {int} REFERENCES systems (id),
            origin TEXT NOT NULL,
            job_id TEXT,
            user_name TEXT,
            exe TEXT,
            command TEXT,
            hosts {int},
            processes {int},
            started_at {real},
            ended_at {real},
            runtime_s {real},
            files {int},
            opens {int},
            reads {int},
            writes {int},
            stats {int},
            seeks {int},
            fsyncs {int},
            meta_ops {int},
            bytes_read {int},
            bytes_written {int},
            read_time_s {real},
            write_time_s {real},
            meta_time_s {real},
            small_ios {int},
            truncated {bool},
            source_path TEXT,
            imported_at {real} NOT NULL,
            document TEXT NOT NULL
        )""",
        "CREATE INDEX profiles_by_time ON profiles (started_at)",
        """CREATE TABLE profile_files (
            profile_id {int} NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
            file_no {int} NOT NULL,
            path TEXT NOT NULL,
            fs_type TEXT,
            processes {int},
            opens {int},
            reads {int},
            writes {int},
            stats {int},
            seeks {int},
            fsyncs {int},
            bytes_read {int},
            bytes_written {int},
            read_time_s {real},
            write_time_s {real},
            meta_time_s {real},
            first_s {real},
            last_s {real},
            counters TEXT,
            PRIMARY KEY (profile_id, file_no)
        )""",
    ],
    # --- version 2: the page-cache mode of a run (docs/db.md "Cache modes") -------------------------------
    # "evict" (iolens dropped each file's pages before its buffered reads) or "keep" (--keep-cache, IOR and
    # the IO500 app); no row where no such choice was made (no read phase, other tools). A table of its own,
    # not a column of runs: a column added to runs would sit after `document`, and SQLite reads a row's
    # columns in order, so every run list would read each document's overflow pages to reach it.
    # Runs stored before are given the mode their rows tell: what their source says (an io500 document's
    # "cache_mode", result.txt's "iolens cache mode" comment, an ior config's keep-cache), else iolens's
    # io500 evicted (there was no --keep-cache yet) and the app's IOR never evicts.
    [
        """CREATE TABLE run_cache_modes (
            run_id {int} PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
            cache_mode TEXT NOT NULL
        )""",
        """INSERT INTO run_cache_modes (run_id, cache_mode)
            SELECT id, CASE WHEN document LIKE '%"cache_mode":"keep"%' THEN 'keep' ELSE 'evict' END
            FROM runs WHERE tool = 'io500' AND origin = 'iolens'""",
        """INSERT INTO run_cache_modes (run_id, cache_mode)
            SELECT id, CASE WHEN document LIKE '%; iolens cache mode: keep %' THEN 'keep'
                            WHEN document LIKE '%; iolens cache mode: evict %' THEN 'evict'
                            WHEN version LIKE 'iolens-%' THEN 'evict'
                            ELSE 'keep' END
            FROM runs WHERE origin = 'io500-app'""",
        """INSERT INTO run_cache_modes (run_id, cache_mode)
            SELECT id, CASE WHEN config LIKE '%"keep-cache":true%' THEN 'keep' ELSE 'evict' END
            FROM runs WHERE tool = 'ior' AND origin = 'iolens'
            AND EXISTS (SELECT 1 FROM phases p WHERE p.run_id = runs.id AND p.name = 'read')""",
    ],
    # --- version 3: the web portal's sign-in tokens (docs/web.md "Who sees what") -------------------------
    # A token is 256 random bits shown once; only its SHA-256 is kept (a hash that cannot be searched
    # backwards from 256 random bits needs no slow key derivation). Revoked tokens stay, marked, so a list
    # shows who had access and until when.
    [
        """CREATE TABLE web_tokens (
            id {id},
            user_name TEXT NOT NULL,
            token_hash TEXT NOT NULL UNIQUE,
            staff {bool} NOT NULL,
            label TEXT,
            created_at {real} NOT NULL,
            last_used_at {real},
            revoked_at {real}
        )""",
        # Profiles are looked up by their user for the portal's job lists (newest first: the index's
        # order). It also holds every column the job lists and the survey sort, filter and add up
        # (store.portal_jobs, store.portal_survey), so they pick a page's ids, count and group from the
        # index alone: a profile row carries its document inline (SQLite keeps up to ~4 KB of it in the
        # row), and a scan of the rows read ~400 MB for 100,000 jobs where this index is ~12 MB. On the
        # 100,000 jobs of bench/web_load.py (SQLite): the survey sorted by bytes 386 -> 39 ms, per user
        # 1204 -> 111 ms, a user's 4,986 jobs sorted by bytes 70 -> 1 ms.
        "CREATE INDEX profiles_by_user ON profiles (user_name, started_at, exe, system_id, processes,"
        " runtime_s, bytes_read, bytes_written, read_time_s, write_time_s, meta_time_s, files, meta_ops)",
        # The portal's systems overview counts each system's profiles: an index answers it without reading
        # the profiles' rows (a scan of 100,000 profiles took 0.57 s).
        "CREATE INDEX profiles_by_system ON profiles (system_id, started_at)",
    ],
    # --- version 4: the per-minute rollup of monitoring samples, kept by triggers (store/rollup.py) -------
    # The portal's dashboards read it for buckets of whole minutes. The migration reads every sample once.
    [rollup.migration, lambda dialect: _NEWEST_FIRST if dialect == "postgresql" else []],
    # --- version 5: the batch system's accounting records (docs/site.md, docs/schema.md) ------------------
    # One row per job of the batch system, profiled or not: from `iolens db import --sacct`, `iolens site
    # sync` (sacct) and the site epilog (the job's environment and `scontrol show job`). A job is its cluster
    # and its raw job id (Slurm's JobIDRaw, the id Lustre's jobid_var=SLURM_JOB_ID and the profiler record):
    # importing it again updates the row (a RUNNING job later COMPLETED). `source` says which of those wrote
    # the row last; a record from the epilog never replaces one from sacct (the controller's final word).
    [
        """CREATE TABLE sched_jobs (
            id {id},
            scheduler TEXT NOT NULL,
            cluster TEXT NOT NULL,
            job_id TEXT NOT NULL,
            job_ref TEXT,
            array_job_id TEXT,
            array_task_id TEXT,
            job_name TEXT,
            user_name TEXT,
            uid {int},
            account TEXT,
            partition_name TEXT,
            nodes {int},
            tasks {int},
            cpus {int},
            node_list TEXT,
            submitted_at {real},
            started_at {real},
            ended_at {real},
            elapsed_s {real},
            state TEXT,
            exit_code {int},
            exit_signal {int},
            source TEXT NOT NULL,
            updated_at {real} NOT NULL,
            UNIQUE (cluster, job_id)
        )""",
        "CREATE INDEX sched_jobs_by_job ON sched_jobs (job_id)",
        "CREATE INDEX sched_jobs_by_time ON sched_jobs (started_at)",
        # The profile the site epilog stored for a job (profiles.job_id alone does not say the cluster).
        """CREATE TABLE sched_job_profiles (
            profile_id {int} PRIMARY KEY REFERENCES profiles (id) ON DELETE CASCADE,
            cluster TEXT NOT NULL,
            job_id TEXT NOT NULL
        )""",
        "CREATE INDEX sched_job_profiles_by_job ON sched_job_profiles (cluster, job_id)",
    ],
]

SCHEMA_VERSION = len(MIGRATIONS)


class SchemaTooNew(StoreError):
    """The database was written by a newer iolens: this one does not know its schema."""


# Every table and view of the current schema (`iolens db check` looks for each).
TABLES = ("iolens_meta", "systems", "runs", "phases", "series", "samples", "sample_imports", "profiles",
          "profile_files", "run_cache_modes", "web_tokens", "sample_minutes", "sched_jobs",
          "sched_job_profiles")  # fmt: skip
VIEWS = ("monitor_samples",)


def current_version(db: Database) -> int:
    """The schema version of the database: 0 when it holds no iolens schema yet."""
    if not db.table_exists("iolens_meta"):
        if not (db.table_exists("runs") or db.table_exists("samples")):
            return 0
        # iolens_meta is looked for again after runs or samples were found: another process may have
        # committed the whole schema between the two lookups (PostgreSQL reads its catalog as last
        # committed, lookup by lookup), and that is a database to use, not a foreign one.
        if not db.table_exists("iolens_meta"):
            raise StoreError(f"{describe(db.url)}: has tables named like iolens's but no iolens_meta table")
    row = db.query_one("SELECT value FROM iolens_meta WHERE key = 'schema_version'")
    if row is None:
        raise StoreError(f"{describe(db.url)}: iolens_meta has no schema_version")
    try:
        return int(row[0])
    except ValueError:
        raise StoreError(f"{describe(db.url)}: schema_version {row[0]!r} is not a number") from None


def _writer(db: Database) -> str:
    row = db.query_one("SELECT value FROM iolens_meta WHERE key = 'written_by'")
    return row[0] if row else "?"


def check_version(db: Database, version: int) -> None:
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"{describe(db.url)}: the database has schema version {version} (last migrated by iolens "
            f"{_writer(db)}); this iolens ({__version__}) knows versions up to {SCHEMA_VERSION}. "
            "Upgrade iolens to use this database; nothing was changed."
        )


class NoSchema(StoreError):
    """A database with no iolens schema, opened by a command that only reads."""


def migrate(db: Database, create: bool = True) -> int:
    """Bring the database to SCHEMA_VERSION (creating the schema in an empty one when `create`); the version
    it was at.

    One transaction, under a lock that serialises processes migrating at once: the second one finds the
    work done. A database at a newer version is refused (SchemaTooNew) and left as it is. Without `create`
    (a query), a database with no iolens schema is refused (NoSchema) and left as it is: a query never
    creates a database, and an emptied one must not answer "no runs".
    """
    version = current_version(db)
    check_version(db, version)
    if version == 0 and not create:
        raise NoSchema(
            f"{describe(db.url)}: holds no iolens database (no iolens tables); nothing was changed "
            "(a store or an import creates them)"
        )
    if version == SCHEMA_VERSION:
        return version
    with db.migration():
        version = current_version(db)  # another process may have migrated while we waited for the lock
        check_version(db, version)
        start = version
        for steps in MIGRATIONS[version:]:
            for step in steps:
                for statement in [step] if isinstance(step, str) else step(db.dialect):
                    db.execute(db.ddl(statement))
        now = str(time.time())
        db.execute(
            "INSERT INTO iolens_meta (key, value) VALUES ('schema_version', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(SCHEMA_VERSION),),
        )
        for key, value in (("written_by", __version__), ("migrated_at", now)):
            db.execute(
                "INSERT INTO iolens_meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
        if start == 0:
            db.execute("INSERT INTO iolens_meta (key, value) VALUES ('created_by', ?)", (__version__,))
    return start


def open_checked(db: Database) -> None:
    """For readers: the database must hold a schema this iolens knows (older ones are migrated)."""
    migrate(db, create=False)
