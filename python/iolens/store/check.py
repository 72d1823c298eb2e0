"""`iolens db check`: is the database whole, and is it an iolens database?

SQLite: the file's header, SQLite's integrity_check (every page, b-tree, free list, record and index), the
schema version and every table and view of the schema. PostgreSQL (whose pages the server checks as it reads
them): the schema version, every table and view, and a full read of every table.

What is damaged is a finding (Check.problems), not an exception: only a database that cannot be looked at
(a missing file, a server that does not answer) raises StoreError.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass, field

from iolens.io500.cache import MODES as CACHE_MODES
from iolens.store import schema
from iolens.store.db import (
    BUSY_TIMEOUT_S,
    PostgresDatabase,
    StoreError,
    describe,
    is_empty_file,
    is_postgres_url,
    sqlite_path,
)
from iolens.store.records import sha256

SQLITE_HEADER = b"SQLite format 3\x00"
_SHA256 = re.compile(r"[0-9a-f]{64}")
# integrity_check stops after this many problems (one damaged page can give thousands of lines).
MAX_PROBLEMS = 100


@dataclass
class Check:
    location: str
    dialect: str
    schema_version: int | None = None
    checked: list[str] = field(default_factory=list)  # what was looked at, for the report
    problems: list[str] = field(default_factory=list)  # what is damaged or missing
    rows: dict[str, int] = field(default_factory=dict)  # rows read per table (PostgreSQL)

    @property
    def ok(self) -> bool:
        return not self.problems


def check(url: str) -> Check:
    if is_postgres_url(url):
        return _check_postgres(url)
    return _check_sqlite(url)


def _check_sqlite(url: str) -> Check:
    path = sqlite_path(url)
    result = Check(str(path), "sqlite")
    if not path.exists():
        raise StoreError(f"no database at {path}")
    if path.is_dir():
        raise StoreError(f"{path}: is a directory, not a database file")
    if is_empty_file(path):
        result.problems.append("empty file (0 bytes): it holds no database (lost, or never written)")
        return result
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise StoreError(f"{path}: cannot read it: {exc.strerror}") from None
    if head != SQLITE_HEADER:
        result.problems.append(
            "the file does not start with SQLite's header: page 1 is damaged, or it is not a SQLite file"
        )
        return result
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open it: {exc}") from None
    try:
        result.checked.append("SQLite integrity_check: every page, b-tree, free list, record and index")
        try:
            names = {
                str(r[0]): str(r[1])
                for r in conn.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')")
            }
        except sqlite3.DatabaseError as exc:
            result.problems.append(f"the schema (page 1, sqlite_master) cannot be read: {exc}")
            return result
        result.problems += _integrity(conn, [n for n, kind in names.items() if kind == "table"])
        _schema_findings(result, lambda: _sqlite_version(conn), names)
        if not result.problems:
            result.checked.append("every stored JSON text parses, every iolens document matches its uid")
            result.problems += _contents(conn)
    finally:
        conn.close()
    return result


def _integrity(conn: sqlite3.Connection, tables: list[str]) -> list[str]:
    """SQLite's integrity_check, one problem a line. When SQLite cannot walk the file as a whole (a b-tree
    page it cannot parse stops it), each table is checked alone, so the report says which are damaged."""
    try:
        rows = conn.execute(f"PRAGMA integrity_check({MAX_PROBLEMS})").fetchall()
    except sqlite3.DatabaseError:
        rows = None
    if rows is not None:
        lines = [line for r in rows for line in str(r[0]).splitlines() if line.strip()]
        lines = [line for line in lines if line != "*** in database main ***"]
        return [] if lines == ["ok"] else _capped(lines)
    problems = []
    for table in sorted(tables):
        try:
            rows = conn.execute(f"PRAGMA integrity_check('{table}')").fetchall()
            conn.execute(f'SELECT * FROM "{table}"').fetchall()
        except sqlite3.DatabaseError as exc:
            problems.append(f"table {table}: cannot be read ({exc})")
            continue
        lines = [line for r in rows for line in str(r[0]).splitlines() if line.strip()]
        lines = [line for line in lines if line not in ("ok", "*** in database main ***")]
        problems += [f"table {table}: {line}" for line in lines]
    return _capped(problems) or ["SQLite cannot walk the file (database disk image is malformed)"]


def _capped(lines: list[str], shown: int = 20) -> list[str]:
    if len(lines) <= shown:
        return lines
    return [*lines[:shown], f"… and {len(lines) - shown} more such lines"]


def _contents(conn: sqlite3.Connection) -> list[str]:
    """What SQLite cannot see: it keeps no checksum of a page's content, so zeros written over a document's
    text pass its checks. Every JSON column must parse, and a run stored from an iolens document has the
    SHA-256 of that text as its uid."""
    problems: list[str] = []
    queries = (
        ("run", "SELECT id, uid, origin, document, config FROM runs"),
        ("profile", "SELECT id, uid, origin, document, NULL FROM profiles"),
        ("system", "SELECT id, name, '', info, NULL FROM systems"),
    )
    for kind, sql in queries:
        try:
            for rid, uid, origin, document, config in conn.execute(sql):
                for what, text in (("document", document), ("config", config)):
                    if text is None:
                        continue
                    try:
                        json.loads(text)
                    except (ValueError, TypeError) as exc:
                        problems.append(f"{kind} {rid}: its {what} is not the JSON that was stored ({exc})")
                # Only a uid that is a SHA-256 (what iolens gives the runs it stores from a document): the
                # Python API lets a caller store records under uids of its own.
                if (
                    kind == "run"
                    and origin == "iolens"
                    and isinstance(document, str)
                    and _SHA256.fullmatch(uid)
                ):
                    if sha256(document) != uid:
                        problems.append(
                            f"run {rid}: its document does not match its uid, the SHA-256 of the document it "
                            "was stored with (changed on disk)"
                        )
        except sqlite3.DatabaseError as exc:
            problems.append(f"the {kind}s cannot be read: {exc}")
    try:
        for rid, mode in conn.execute("SELECT run_id, cache_mode FROM run_cache_modes"):
            if mode not in CACHE_MODES:
                problems.append(f"run {rid}: its cache mode {mode!r} is not one iolens stores")
    except sqlite3.DatabaseError as exc:
        problems.append(f"the runs' cache modes cannot be read: {exc}")
    return _capped(problems)


def _sqlite_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM iolens_meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        raise ValueError("iolens_meta has no schema_version")
    return int(row[0])


def _schema_findings(result: Check, version_of: object, names: dict[str, str]) -> None:
    """The schema version and the tables and views the schema has (names: name -> table or view)."""
    result.checked.append(f"the schema's {len(schema.TABLES)} tables and {len(schema.VIEWS)} view")
    if "iolens_meta" not in names:
        result.problems.append(
            "no iolens_meta table: not an iolens database"
            + (f" (tables: {', '.join(sorted(names)[:8])})" if names else " (no tables at all)")
        )
        return
    try:
        version = version_of()  # type: ignore[operator]
    except (ValueError, sqlite3.DatabaseError, StoreError) as exc:
        result.problems.append(f"the schema version cannot be read: {exc}")
    else:
        result.schema_version = int(version)
        if version > schema.SCHEMA_VERSION:
            result.problems.append(
                f"schema version {version} is newer than this iolens knows ({schema.SCHEMA_VERSION}): "
                "upgrade iolens to check it"
            )
            return
    for table in schema.TABLES:
        if names.get(table) != "table":
            result.problems.append(f"table {table} is missing")
    for view in schema.VIEWS:
        if names.get(view) != "view":
            result.problems.append(f"view {view} is missing")


def _check_postgres(url: str) -> Check:
    result = Check(describe(url), "postgresql")
    db = PostgresDatabase(url)  # StoreError when the server cannot be reached
    try:
        here = "WHERE schemaname = current_schema()"
        names = {str(r[0]): "table" for r in db.query(f"SELECT tablename FROM pg_catalog.pg_tables {here}")}
        views = db.query(f"SELECT viewname FROM pg_catalog.pg_views {here}")
        names.update({str(r[0]): "view" for r in views})

        def version() -> int:
            row = db.query_one("SELECT value FROM iolens_meta WHERE key = 'schema_version'")
            if row is None:
                raise ValueError("iolens_meta has no schema_version")
            return int(row[0])

        _schema_findings(result, version, names)
        if result.problems:
            return result
        result.checked.append("every row of every table read (the server checks each page it reads)")
        for table in schema.TABLES:
            try:
                row = db.query_one(f"SELECT count(*) FROM (SELECT * FROM {table}) AS t")
            except StoreError as exc:
                result.problems.append(f"table {table} cannot be read: {exc}")
                continue
            result.rows[table] = int(row[0]) if row else 0
    finally:
        db.close()
    return result
