"""Store: the database of runs, phases, systems, profiles and monitoring samples, and how records get in.

Every record is written in one transaction: a process killed in the middle leaves nothing of it behind.
Every record has a uid (the hash of its source), so storing the same thing again changes nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter
from typing import Any

from iolens.store import schema
from iolens.store.db import Database, StoreError, connect
from iolens.store.records import (
    ProfileFile,
    ProfileRecord,
    RunRecord,
    Sample,
    SystemInfo,
    canonical_json,
)

# Rows handed to the database at once when streaming samples or profile files.
BATCH = 20_000
# A profile's files go in smaller batches: each row holds a path and a JSON object (a 20k batch of a 100k-file
# profile was 30 MB).
FILE_BATCH = 4096


@dataclass(frozen=True)
class Stored:
    """What storing a record did: its id, and whether it was new (False: it was there already)."""

    kind: str  # "run", "profile", "samples"
    id: int
    new: bool
    detail: str = ""

    @property
    def ref(self) -> str:
        return f"profile:{self.id}" if self.kind == "profile" else str(self.id)


class _AlreadyStored(Exception):
    """Raised inside a storing transaction to roll it back: the record is there already (its id)."""

    def __init__(self, record_id: int) -> None:
        super().__init__(record_id)
        self.id = record_id


class Store:
    def __init__(self, db: Database) -> None:
        self.db = db
        # Series ids by (host, source, target, metric), as committed. Nothing deletes a series, so an id
        # once committed stays right: a monitor storing a batch every 10 s then sends its rows and no query
        # per series (a node's 600 series cost 1200 round trips per batch before). A wrong id could only
        # fail the batch (samples.series_id references series), never file a sample under another series.
        self._series_ids: dict[tuple[str, str, str, str], int] = {}
        self._hosts_loaded: set[str] = set()

    @classmethod
    def open(cls, url: str, create: bool = True) -> Store:
        """Open (creating a SQLite file when `create`) and bring the schema up to date."""
        db = connect(url, create=create)
        try:
            schema.migrate(db, create=create)
        except BaseException:
            db.close()
            raise
        return cls(db)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- systems ---------------------------------------------------------------------------------------

    def system_id(self, system: SystemInfo | str | None) -> int | None:
        """The id of a system (created on first use; fields given later fill the ones still empty)."""
        if system is None:
            return None
        info = SystemInfo(system) if isinstance(system, str) else system
        if not info.name:
            return None
        fills = (info.site, info.fs_type, info.fs_version, info.servers, info.clients, info.description)
        if not info.info and all(v is None for v in fills):
            # A run tagged with a known system: no upsert (each one uses up an id in PostgreSQL).
            known = self.db.query_one("SELECT id FROM systems WHERE name = ?", (info.name,))
            if known is not None:
                return int(known[0])
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO systems (name, site, fs_type, fs_version, servers, clients, description, info,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET"
                " site = COALESCE(systems.site, excluded.site),"
                " fs_type = COALESCE(systems.fs_type, excluded.fs_type),"
                " fs_version = COALESCE(systems.fs_version, excluded.fs_version),"
                " servers = COALESCE(systems.servers, excluded.servers),"
                " clients = COALESCE(systems.clients, excluded.clients),"
                " description = COALESCE(systems.description, excluded.description),"
                " info = COALESCE(systems.info, excluded.info)",
                (
                    info.name,
                    info.site,
                    info.fs_type,
                    info.fs_version,
                    info.servers,
                    info.clients,
                    info.description,
                    canonical_json(info.info) if info.info else None,
                    time.time(),
                ),
            )
            row = self.db.query_one("SELECT id FROM systems WHERE name = ?", (info.name,))
        assert row is not None
        return int(row[0])

    def set_system(self, info: SystemInfo) -> int:
        """Create or update a system with every field given (None leaves a field as it is)."""
        sid = self.system_id(info.name)
        assert sid is not None
        fields = {
            "site": info.site,
            "fs_type": info.fs_type,
            "fs_version": info.fs_version,
            "servers": info.servers,
            "clients": info.clients,
            "description": info.description,
            "info": canonical_json(info.info) if info.info else None,
        }
        given = {k: v for k, v in fields.items() if v is not None}
        if given:
            sets = ", ".join(f"{k} = ?" for k in given)
            with self.db.transaction():
                self.db.execute(f"UPDATE systems SET {sets} WHERE id = ?", (*given.values(), sid))
        return sid

    # --- runs ------------------------------------------------------------------------------------------

    def put_run(self, record: RunRecord, system: str | None = None) -> Stored:
        """Store a run and its phases (one transaction); a run with the same uid is left as it is (and its
        system: a record already stored is neither tagged again nor creates the system named)."""
        from iolens.store.records import PhaseRow

        try:
            with self.db.transaction():
                existing = self._stored_id("runs", record.uid)
                if existing is not None:
                    return Stored("run", existing, False)
                sid = self.system_id(SystemInfo(system) if system else record.system)
                run_id = self._claim(
                    "runs",
                    ("uid", "system_id", "tool", "origin", "version", "command", "config", "config_hash",
                     "started_at", "ended_at", "ranks", "nodes", "hostname", "file_system", "status", "valid",
                     "score", "source_path", "imported_at", "document"),
                    (
                        record.uid,
                        sid,
                        record.tool,
                        record.origin,
                        record.version,
                        record.command,
                        None if record.config is None else canonical_json(record.config),
                        record.config_hash,
                        record.started_at,
                        record.ended_at,
                        record.ranks,
                        record.nodes,
                        record.hostname,
                        record.file_system,
                        record.status,
                        record.valid,
                        record.score,
                        record.source_path,
                        time.time(),
                        record.document,
                    ),
                )  # fmt: skip
                if record.cache_mode is not None:
                    self.db.execute(
                        "INSERT INTO run_cache_modes (run_id, cache_mode) VALUES (?, ?)",
                        (run_id, record.cache_mode),
                    )
                cols = ("run_id", "seq", *PhaseRow.COLUMNS)
                marks = ", ".join("?" for _ in cols)
                self.db.executemany(
                    f"INSERT INTO phases ({', '.join(cols)}) VALUES ({marks})",
                    [(run_id, seq, *p.values()) for seq, p in enumerate(record.phases)],
                )
                if record.samples:
                    self.put_samples(record.samples, f"run:{record.uid}", record.source_path)
        except _AlreadyStored as done:
            return Stored("run", done.id, False)
        return Stored("run", run_id, True)

    def tag_run(self, run_id: int, system: str) -> None:
        sid = self.system_id(system)
        with self.db.transaction():
            self.db.execute("UPDATE runs SET system_id = ? WHERE id = ?", (sid, run_id))

    def delete_run(self, run_id: int) -> bool:
        with self.db.transaction():
            self.db.execute("DELETE FROM phases WHERE run_id = ?", (run_id,))
            row = self.db.query_one("DELETE FROM runs WHERE id = ? RETURNING id", (run_id,))
        return row is not None

    # --- profiles --------------------------------------------------------------------------------------

    def put_profile(self, record: ProfileRecord, system: str | None = None) -> Stored:
        """Store a profile and its files (one transaction, files streamed in batches); a profile with the
        same uid is left as it is (and its system, as put_run)."""
        try:
            with self.db.transaction():
                existing = self._stored_id("profiles", record.uid)
                if existing is not None:
                    return Stored("profile", existing, False)
                sid = self.system_id(system)
                cols = ("uid", "system_id", *ProfileRecord.COLUMNS, "source_path", "imported_at", "document")
                values = (
                    record.uid,
                    sid,
                    *(getattr(record, c) for c in ProfileRecord.COLUMNS),
                    record.source_path,
                    time.time(),
                    json.dumps(record.summary, separators=(",", ":"), ensure_ascii=False),
                )
                pid = self._claim("profiles", cols, values)
                fcols = ("profile_id", "file_no", *ProfileFile.COLUMNS, "counters")
                count = 0
                columns = attrgetter(*ProfileFile.COLUMNS)  # one C call a file (100k files: a second less)
                for chunk in _batches(
                    ((pid, n, *columns(f), _counters(f)) for n, f in enumerate(record.file_rows)),
                    FILE_BATCH,
                ):
                    self.db.bulk_insert("profile_files", fcols, chunk)
                    count += len(chunk)
                for batch in record.file_columns:
                    # The rows are zipped from the columns as the driver binds them: no list of tuples.
                    n = len(batch)
                    rows = zip(repeat(pid, n), range(count, count + n), *batch.columns, strict=True)
                    self.db.bulk_insert("profile_files", fcols, rows)
                    count += n
        except _AlreadyStored as done:
            return Stored("profile", done.id, False)
        return Stored("profile", pid, True, f"{count} files")

    # --- monitoring samples ----------------------------------------------------------------------------

    def put_samples(
        self, samples: Iterable[Sample], uid: str | None = None, source_path: str | None = None
    ) -> Stored:
        """Store samples (one transaction). With a uid (the hash of their source), a source stored before
        is skipped; a sample already there (same series and time) is kept as it was."""
        known = self._series_ids
        found: dict[tuple[str, str, str, str], int] = {}  # ids looked up or created in this transaction
        hosts: set[str] = set()
        used: set[tuple[str, str, str, str]] = set()
        count = 0
        t_min = t_max = None

        def series_id(key: tuple[str, str, str, str], unit: str | None) -> int:
            sid = known.get(key) or found.get(key)
            if sid is None:
                if key[0] not in self._hosts_loaded and key[0] not in hosts:
                    hosts.add(key[0])  # one query for every series of a host seen for the first time
                    found.update(self._host_series(key[0]))
                    sid = found.get(key)
                if sid is None:
                    sid = found[key] = self._series_id(key, unit)
            return sid

        def rows() -> Iterator[tuple[int, float, float | None]]:
            nonlocal count, t_min, t_max
            for s in samples:
                key = (s.host, s.source, s.target, s.metric)
                sid = series_id(key, s.unit)
                used.add(key)
                count += 1
                t_min = s.t if t_min is None or s.t < t_min else t_min
                t_max = s.t if t_max is None or s.t > t_max else t_max
                yield (sid, s.t, s.value)

        try:
            with self.db.transaction():
                if uid is not None:
                    existing = self._stored_id("sample_imports", uid)
                    if existing is not None:
                        return Stored("samples", existing, False)
                # The uid is claimed first: a second writer of the same source waits here, not after
                # reading the whole source again.
                import_id = self._claim(
                    "sample_imports",
                    ("uid", "source_path", "imported_at", "samples", "series"),
                    (uid or f"stream:{time.time_ns()}", source_path, time.time(), 0, 0),
                )
                for chunk in _batches(rows(), BATCH):
                    self.db.bulk_insert(
                        "samples", ("series_id", "t", "value"), chunk, "ON CONFLICT (series_id, t) DO NOTHING"
                    )
                self.db.execute(
                    "UPDATE sample_imports SET samples = ?, series = ?, t_min = ?, t_max = ? WHERE id = ?",
                    (count, len(used), t_min, t_max, import_id),
                )
        except _AlreadyStored as done:
            return Stored("samples", done.id, False)
        # Committed: the ids are kept (not before: a rolled-back transaction's new series do not exist).
        known.update(found)
        self._hosts_loaded |= hosts
        return Stored("samples", import_id, True, f"{count} samples in {len(used)} series")

    # --- claiming a uid --------------------------------------------------------------------------------

    def _stored_id(self, table: str, uid: str) -> int | None:
        row = self.db.query_one(f"SELECT id FROM {table} WHERE uid = ?", (uid,))
        return None if row is None else int(row[0])

    def _claim(self, table: str, columns: Sequence[str], values: Sequence[Any]) -> int:
        """Insert the row that holds a record's uid (columns[0] is "uid"); its id. When another writer
        stored the same uid since the caller looked (PostgreSQL: this insert waited for that writer's
        transaction on the unique index), raises _AlreadyStored with that record's id: the caller's
        transaction is then rolled back, so nothing of this attempt (a new system, say) is kept."""
        marks = ", ".join("?" for _ in columns)
        row = self.db.query_one(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
            " ON CONFLICT (uid) DO NOTHING RETURNING id",
            values,
        )
        if row is not None:
            return int(row[0])
        existing = self._stored_id(table, str(values[0]))
        if existing is None:  # pragma: no cover - the conflicting row was committed, so it is seen
            raise StoreError(f"{table}: uid {values[0]} conflicts with a row that cannot be read")
        raise _AlreadyStored(existing)

    def _host_series(self, host: str) -> dict[tuple[str, str, str, str], int]:
        rows = self.db.query("SELECT id, source, target, metric FROM series WHERE host = ?", (host,))
        return {(host, str(r[1]), str(r[2]), str(r[3])): int(r[0]) for r in rows}

    def _series_id(self, key: tuple[str, str, str, str], unit: str | None) -> int:
        self.db.execute(
            "INSERT INTO series (host, source, target, metric, unit) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (host, source, target, metric) DO NOTHING",
            (*key, unit),
        )
        row = self.db.query_one(
            "SELECT id FROM series WHERE host = ? AND source = ? AND target = ? AND metric = ?", key
        )
        assert row is not None
        return int(row[0])


def _counters(f: ProfileFile) -> str | None:
    if isinstance(f.counters, str):
        return f.counters
    return json.dumps(f.counters, separators=(",", ":")) if f.counters else None


def _batches(rows: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
