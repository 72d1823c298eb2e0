"""Before a benchmark, profile or monitor command runs: can its result be stored where the database is?

The database must be reachable and writable, and be an iolens database, an empty file, or a new file in a
writable directory. A SQLite file is opened to read its schema and quick-check it (as the store does
before writing); nothing is written: no schema, no journal mode, no file is created. A PostgreSQL server is
asked whether this session may write (not a read-only standby) and may create the tables or insert into
them. A failure raises StoreError with a message that says which of these it was.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from iolens.store import schema
from iolens.store.db import (
    PostgresDatabase,
    SqliteDatabase,
    StoreError,
    _sqlite_error,
    check_is_iolens_or_new,
    check_not_damaged,
    describe,
    is_empty_file,
    is_postgres_url,
    sqlite_path,
)


def check_writable(url: str) -> None:
    """Raise StoreError unless a result can be stored at url (a SQLite path or a postgresql:// URL)."""
    if is_postgres_url(url):
        _check_postgres(url)
    else:
        _check_sqlite(sqlite_path(url))


def _why(err: int) -> str:
    if err == errno.EROFS:
        return "read-only file system"
    if err in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return os.strerror(err)


def _writable_dir(directory: Path, what: str) -> None:
    try:
        writable = os.access(directory, os.W_OK | os.X_OK)
    except OSError as exc:  # pragma: no cover - access() reports through its result
        raise StoreError(f"directory {directory}: {exc.strerror}") from None
    if not writable:
        # access() sets errno: EROFS on a read-only mount, EACCES for permissions.
        err = _access_errno(directory, os.W_OK | os.X_OK)
        raise StoreError(f"directory {directory} is not writable ({_why(err)}): {what}")


def _access_errno(path: Path, mode: int) -> int:
    """The errno access(2) gives (os.access keeps only the answer); statvfs tells a read-only mount."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return errno.EROFS
    except OSError:
        pass
    return errno.EACCES


def _check_sqlite(path: Path) -> None:
    if path.is_dir():
        raise StoreError(f"{path}: is a directory, not a database file")
    directory = path.parent if str(path.parent) else Path(".")
    if not path.exists():
        if not directory.is_dir():
            raise StoreError(f"{path}: directory {directory} does not exist")
        _writable_dir(directory, f"the database {path.name} cannot be created in it")
        return
    # The file itself: opened for writing, nothing written (O_RDWR on a read-only file fails here).
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError as exc:
        raise StoreError(f"{path}: the database file is not writable ({_why(exc.errno or 0)})") from None
    os.close(fd)
    # WAL mode: SQLite creates NAME-wal and NAME-shm beside the file when it writes.
    _writable_dir(directory, f"SQLite must create {path.name}-wal beside the database to write to it")
    if is_empty_file(path):
        return  # an empty file becomes a new database
    db = SqliteDatabase(path, create=False)  # opens and reads the schema; writes nothing
    try:
        check_not_damaged(db)
        check_is_iolens_or_new(db)
        if db.table_exists("iolens_meta"):
            schema.check_version(db, schema.current_version(db))
    except sqlite3.DatabaseError as exc:
        raise _sqlite_error(path, exc) from None
    finally:
        db.close()


def _check_postgres(url: str) -> None:
    db = PostgresDatabase(url)  # StoreError "cannot connect to …" when unreachable
    try:
        row = db.query_one("SELECT current_setting('transaction_read_only')")
        if row is not None and str(row[0]) == "on":
            raise StoreError(
                f"{describe(url)}: the server is read-only (a standby, or default_transaction_read_only)"
            )
        if db.table_exists("iolens_meta"):
            schema.check_version(db, schema.current_version(db))
            row = db.query_one(
                "SELECT has_table_privilege('runs', 'INSERT') AND has_table_privilege('phases', 'INSERT')"
                " AND has_table_privilege('samples', 'INSERT') AND has_table_privilege('profiles', 'INSERT')"
            )
            if row is None or not row[0]:
                raise StoreError(f"{describe(url)}: this user may not insert into iolens's tables")
        else:
            row = db.query_one("SELECT has_schema_privilege(current_schema(), 'CREATE')")
            if row is None or not row[0]:
                raise StoreError(
                    f"{describe(url)}: holds no iolens tables and this user may not create them "
                    "(no CREATE privilege on its schema)"
                )
    finally:
        db.close()
