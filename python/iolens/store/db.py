"""The database connection: SQLite (a file, WAL mode) or PostgreSQL (a URL), behind one small interface.

SQL in the store is written once, with `?` placeholders and the column types of schema.py; this module
turns it into each dialect's form. Everything runs in autocommit mode outside `transaction()`, so a
transaction is always explicit: SQLite takes the write lock at its start (BEGIN IMMEDIATE), so two writers
queue on the busy timeout instead of failing when one of them upgrades a read lock.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# How long a writer waits for another process's transaction before it gives up (SQLite).
BUSY_TIMEOUT_S = 120.0


class StoreError(Exception):
    """A database that cannot be opened or used; the message is for the user."""


class Damaged(StoreError):
    """The database file is damaged (SQLite found a malformed page or record)."""


def is_postgres_url(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def sqlite_path(url: str) -> Path:
    """The file of a SQLite location: a path, or `sqlite:///abs/path` / `sqlite:rel/path`."""
    if url.startswith("sqlite:///"):
        return Path("/" + url[len("sqlite:///") :])
    if url.startswith("sqlite://"):
        return Path(url[len("sqlite://") :]).expanduser()
    if url.startswith("sqlite:"):
        return Path(url[len("sqlite:") :]).expanduser()
    return Path(url).expanduser()


def describe(url: str) -> str:
    """The location without a password, for messages."""
    if is_postgres_url(url) and "@" in url:
        scheme, _, rest = url.partition("://")
        cred, _, host = rest.rpartition("@")
        user = cred.split(":", 1)[0]
        return f"{scheme}://{user}@{host}" if user else f"{scheme}://{host}"
    return url


class Database:
    """One connection to the store's database. Not shared between threads."""

    dialect: str = ""
    url: str = ""

    # --- the dialect's spelling of the schema's column types ----------------------------------------------
    TYPES: dict[str, str] = {}

    def ddl(self, text: str) -> str:
        return text.format(**self.TYPES)

    def sql(self, text: str) -> str:
        return text

    # --- running statements --------------------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        raise NotImplementedError

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = self.execute(sql, params)
        with self.errors():
            return list(cur.fetchall())

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        cur = self.execute(sql, params)
        with self.errors():
            return cur.fetchone()  # type: ignore[no-any-return]

    def query_dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cur = self.execute(sql, params)
        names = [d[0] for d in cur.description]
        with self.errors():
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    @contextmanager
    def errors(self) -> Iterator[None]:
        """Turn the driver's errors into StoreError: rows are read from a cursor after execute() returned,
        and a damaged page is met there."""
        yield

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        """Run an INSERT … RETURNING id and give the id."""
        row = self.execute(sql + " RETURNING id", params).fetchone()
        assert row is not None
        return int(row[0])

    def bulk_insert(
        self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], conflict: str = ""
    ) -> None:
        """Insert many rows fast (inside the caller's transaction); `conflict` is an ON CONFLICT clause."""
        marks = ", ".join("?" for _ in columns)
        self.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks}) {conflict}", rows)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        raise NotImplementedError
        yield

    @contextmanager
    def migration(self) -> Iterator[None]:
        """A transaction that no other process migrating the schema runs beside (they queue)."""
        with self.transaction():
            yield

    def table_exists(self, name: str) -> bool:
        raise NotImplementedError

    def check_damage(self) -> None:
        """Raise Damaged when a quick check of the database finds damage (SQLite; the PostgreSQL server
        checks its pages itself as it reads them)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SqliteDatabase(Database):
    dialect = "sqlite"
    TYPES = {
        "id": "INTEGER PRIMARY KEY",
        "int": "INTEGER",
        "real": "REAL",
        "bool": "BOOLEAN",
        "text": "TEXT",
        "without_rowid": "WITHOUT ROWID",
    }

    def __init__(self, path: Path, create: bool) -> None:
        self.path = path
        self.url = str(path)
        if not create and not path.exists():
            raise StoreError(f"no database at {path} (one is created by the first store or import)")
        if path.is_dir():
            raise StoreError(f"{path}: is a directory, not a database file")
        if create and not path.parent.is_dir():
            raise StoreError(f"{path}: directory {path.parent} does not exist")
        if not create and is_empty_file(path):
            # An empty file is where a database was lost (truncated, or a failed copy): a query must say
            # so, not answer "no runs" from a schema it wrote into it. The file is not opened at all.
            raise StoreError(
                f"{path}: empty file (0 bytes), not an iolens database; nothing was changed "
                "(a store or an import creates a database in it)"
            )
        try:
            self.conn = sqlite3.connect(
                str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            self.conn.execute("PRAGMA foreign_keys = ON")
            if not create:
                self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            if create or "unable to open" not in str(exc):
                raise _sqlite_error(path, exc) from None
            self.conn = _read_only(path, exc)
        try:
            if create:
                # A writer checks the file before it adds to it (a reader meets damage where it reads).
                check_not_damaged(self)
                check_is_iolens_or_new(self)
                self._wal()
            # Readers leave the journal mode alone (every iolens database is in WAL mode already; setting
            # it would write into a file that may not be iolens's).
            self.conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise _sqlite_error(path, exc) from None
        except BaseException:
            self.conn.close()
            raise
        self._depth = 0  # open transaction levels: 1 the transaction, more its savepoints

    def _wal(self) -> None:
        mode = self.conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if mode is None or str(mode[0]).lower() != "wal":
            raise StoreError(f"{self.path}: cannot use WAL mode (journal mode {mode[0] if mode else '?'})")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        try:
            return self.conn.execute(sql, tuple(params))
        except sqlite3.DatabaseError as exc:
            raise _sqlite_error(self.path, exc) from exc

    @contextmanager
    def errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise _sqlite_error(self.path, exc) from exc

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        try:
            self.conn.executemany(sql, rows)
        except sqlite3.DatabaseError as exc:
            raise _sqlite_error(self.path, exc) from exc

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if self._depth:
            # Nested: a savepoint, so that what fails inside is undone alone (as psycopg does).
            name = f"iolens_sp{self._depth}"
            self.execute(f"SAVEPOINT {name}")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if self.conn.in_transaction:
                    try:
                        self.conn.execute(f"ROLLBACK TO {name}")
                        self.conn.execute(f"RELEASE {name}")
                    except sqlite3.DatabaseError:
                        pass  # the outer transaction is rolled back as the error goes up
                raise
            self._depth -= 1
            self.execute(f"RELEASE {name}")
            return
        self.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
            # Inside the try: a COMMIT that fails (a full disk) leaves the transaction open; it is rolled
            # back below, so nothing of the record stays, in the file or in this connection.
            self.execute("COMMIT")
        except BaseException:
            self._depth = 0
            self._rollback()
            raise
        self._depth = 0

    def _rollback(self) -> None:
        if not self.conn.in_transaction:
            return
        try:
            self.conn.execute("ROLLBACK")
        except sqlite3.DatabaseError:
            pass  # SQLite rolls back itself when it cannot go on (the error being raised says why)

    def table_exists(self, name: str) -> bool:
        row = self.query_one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        return row is not None

    def check_damage(self) -> None:
        try:
            check_not_damaged(self)
        except sqlite3.DatabaseError as exc:
            raise _sqlite_error(self.path, exc) from None

    def close(self) -> None:
        self.conn.close()


def _read_only(path: Path, first: sqlite3.DatabaseError) -> sqlite3.Connection:
    """A reader's connection to a WAL database it cannot open as usual: SQLite needs to create NAME-shm
    beside it, in a directory this user may not write or on a read-only mount. On a read-only file
    system nobody can change the file, so SQLite may read it as immutable (no locks, no -shm)."""
    read_only_fs = False
    try:
        read_only_fs = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        pass
    if not read_only_fs:
        raise _sqlite_error(path, first) from None
    uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise _sqlite_error(path, exc) from None
    return conn


def _sqlite_error(path: Path, exc: sqlite3.DatabaseError) -> Exception:
    msg = str(exc)
    if isinstance(exc, sqlite3.IntegrityError):
        return exc  # constraint violations are the caller's to handle
    if "locked" in msg or "busy" in msg:
        return StoreError(f"{path}: the database stayed locked by another process for {BUSY_TIMEOUT_S:.0f} s")
    if "file is not a database" in msg:
        return StoreError(f"{path}: not an iolens database ({msg})")
    if _DAMAGE_WORDS.search(msg):
        return Damaged(f"{path}: the database is damaged ({msg}); `iolens db check --db {path}` says where")
    if "disk is full" in msg or ("disk I/O error" in msg and _full(path)):
        # SQLite says "disk I/O error" when it cannot grow NAME-shm on a full file system.
        return StoreError(f"{path}: the file system is full ({msg})")
    if "readonly" in msg or "read-only" in msg:
        return StoreError(f"{path}: the database cannot be written ({msg})")
    return StoreError(f"{path}: {msg}")


# Messages of SQLite's corruption errors besides "database disk image is malformed".
_DAMAGE_WORDS = re.compile(r"\b(corrupt|malformed|btreeInitPage|invalid page|never used)\b", re.IGNORECASE)


def _full(path: Path) -> bool:
    """Whether the file system holding path has (next to) no space left for this user."""
    try:
        st = os.statvfs(path.parent if str(path.parent) else ".")
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 64 * 1024


def is_empty_file(path: Path) -> bool:
    """A SQLite path that is a 0-byte file with no write-ahead log holding data beside it."""
    try:
        if path.stat().st_size != 0:
            return False
    except OSError:
        return False
    wal = path.with_name(path.name + "-wal")
    try:
        return wal.stat().st_size == 0
    except OSError:
        return True


def check_is_iolens_or_new(db: SqliteDatabase) -> None:
    """A SQLite file is one database: one holding tables but no iolens_meta is another program's, not a
    new one; it is refused before anything is written into it (WAL mode included)."""
    names = [str(r[0]) for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    if names and "iolens_meta" not in names:
        shown = ", ".join(sorted(names)[:5]) + (", …" if len(names) > 5 else "")
        raise StoreError(
            f"{db.path}: not an iolens database (a SQLite database with other tables: {shown}); "
            "nothing was changed"
        )


def check_not_damaged(db: SqliteDatabase) -> None:
    """Raise Damaged when SQLite's quick_check finds a problem in the file (before a writer adds to it).

    quick_check reads every page and checks each b-tree's structure, the free list and the records'
    formats; integrity_check (`iolens db check`) also checks that every index matches its table, which
    costs about half as much again (0.15 s against 0.23 s for a 96 MiB database: docs/db.md, "Damaged
    files")."""
    try:
        rows = db.conn.execute("PRAGMA quick_check(20)").fetchall()
        problems = [line for r in rows for line in str(r[0]).splitlines() if line.strip()]
        problems = [line for line in problems if line != "*** in database main ***"]
    except sqlite3.DatabaseError as exc:
        if "file is not a database" in str(exc):
            raise  # not a SQLite file at all: said as such by the caller
        problems = [str(exc)]  # a b-tree page SQLite cannot even walk
    if problems != ["ok"]:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise Damaged(
            f"{db.path}: the database is damaged: {problems[0]}{more}; nothing was written to it; "
            f"`iolens db check --db {db.path}` lists the damage"
        )


class PostgresDatabase(Database):
    dialect = "postgresql"
    TYPES = {
        "id": "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
        "int": "BIGINT",
        "real": "DOUBLE PRECISION",
        "bool": "BOOLEAN",
        "text": "TEXT",
        "without_rowid": "",
    }
    # Any number: pg_advisory_lock takes a bigint; this one is iolens's schema lock.
    SCHEMA_LOCK = 0x10_1E_45_00

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise StoreError(
                "PostgreSQL needs the psycopg package: pip install 'iolens[postgresql]' "
                "(or pip install 'psycopg[binary]')"
            ) from None
        self._psycopg = psycopg
        self.url = url
        try:
            self.conn = psycopg.connect(url, autocommit=True)
        except psycopg.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreError(f"cannot connect to {describe(url)}: {first}") from None

    def sql(self, text: str) -> str:
        return text.replace("%", "%%").replace("?", "%s")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        try:
            return self.conn.execute(self.sql(sql), tuple(params) if params else None)  # type: ignore[arg-type]
        except self._psycopg.Error as exc:
            raise StoreError(f"{describe(self.url)}: {str(exc).strip()}") from exc

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        try:
            with self.conn.cursor() as cur:
                cur.executemany(self.sql(sql), rows)  # type: ignore[arg-type]
        except self._psycopg.Error as exc:
            raise StoreError(f"{describe(self.url)}: {str(exc).strip()}") from exc

    def bulk_insert(
        self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], conflict: str = ""
    ) -> None:
        """COPY straight into the table; when a row is there already (a unique key), COPY into a temporary
        table instead, then INSERT … SELECT with the conflict clause (COPY has none)."""
        cols = ", ".join(columns)
        tmp = f"_bulk_{table}"
        rows = rows if isinstance(rows, list) else list(rows)
        # Rows are new nearly always (a monitor's next batch): the straight COPY costs the server about a
        # third less than the detour (measured with bench/monitor_pg_ingest.py's record). It runs in a
        # savepoint, so a duplicate rolls back only it, and then the rows take the detour.
        try:
            with self.conn.transaction(), self.conn.cursor() as cur:
                with cur.copy(f"COPY {table} ({cols}) FROM STDIN") as copy:  # type: ignore[arg-type]
                    for row in rows:
                        copy.write_row(row)
            return
        except self._psycopg.errors.UniqueViolation as exc:
            if not conflict:
                raise StoreError(f"{describe(self.url)}: {str(exc).strip()}") from exc
        except self._psycopg.Error as exc:
            raise StoreError(f"{describe(self.url)}: {str(exc).strip()}") from exc
        try:
            with self.conn.cursor() as cur:
                cur.execute(
                    f"CREATE TEMPORARY TABLE IF NOT EXISTS {tmp} "  # type: ignore[arg-type]
                    f"(LIKE {table} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
                )
                with cur.copy(f"COPY {tmp} ({cols}) FROM STDIN") as copy:  # type: ignore[arg-type]
                    for row in rows:
                        copy.write_row(row)
                cur.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {tmp} {conflict}")  # type: ignore[arg-type]
                cur.execute(f"DELETE FROM {tmp}")  # type: ignore[arg-type]
        except self._psycopg.Error as exc:
            raise StoreError(f"{describe(self.url)}: {str(exc).strip()}") from exc

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.conn.transaction():
            yield

    @contextmanager
    def migration(self) -> Iterator[None]:
        # A session lock taken before the transaction starts: the transaction then sees the catalog as the
        # previous holder committed it (a lock taken inside it could leave stale catalog caches).
        self.execute("SELECT pg_advisory_lock(?)", (self.SCHEMA_LOCK,))
        try:
            with self.transaction():
                yield
        finally:
            self.execute("SELECT pg_advisory_unlock(?)", (self.SCHEMA_LOCK,))

    def table_exists(self, name: str) -> bool:
        row = self.query_one(
            "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = ?",
            (name,),
        )
        return row is not None

    def close(self) -> None:
        self.conn.close()


def connect(url: str, create: bool = True) -> Database:
    """Open the database at url: a SQLite file path (created when `create`), or a postgresql:// URL."""
    if is_postgres_url(url):
        return PostgresDatabase(url)
    path = sqlite_path(url)
    return SqliteDatabase(path, create)


def default_location() -> Path:
    """Where the database is when none is named: $XDG_DATA_HOME/iolens/iolens.db."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "iolens" / "iolens.db"
