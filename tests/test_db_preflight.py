"""`--db` is checked before a benchmark runs: a database that cannot take the result (a read-only file, a
read-only directory for a new file, a PostgreSQL server that does not answer or only reads, a file that is
not an iolens database, a damaged one) is a usage error said in one line, exit status 2, before any I/O:
the benchmark's file is never created. Real files: a tmpfs remounted read-only, another user (setpriv),
the PostgreSQL server of tests/db_helpers.py."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolens.store import Store, queries

from .conftest import MountTmpfs
from .db_helpers import PgServer, iolens, iolens_env, ior_document

NOBODY = 65534


def _env(home: Path, engine: Path) -> dict[str, str]:
    return iolens_env({"IOLENS_BENCH": str(engine)}, home=home)


def _ior(target: Path) -> list[str]:
    return ["ior", "-t", "4k", "-b", "16k", "-w", "-o", str(target), "--no-live"]


def _refused_before_the_run(r: subprocess.CompletedProcess[str], target: Path, why: str) -> None:
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("iolens: error: --db: "), r.stderr
    assert why in r.stderr, r.stderr
    assert "nothing was run" in r.stderr
    assert not target.exists() and not list(target.parent.glob(target.name + "*"))


def _iolens_db(path: Path, home: Path) -> None:
    doc = home / "doc.json"
    doc.write_text(json.dumps(ior_document(2e9)))
    r = iolens("db", "import", str(doc), "--db", str(path), env=iolens_env(home=home))
    assert r.returncode == 0, r.stderr


@pytest.fixture
def readonly_tmpfs(tmp_path: Path, mount_tmpfs: MountTmpfs) -> Path:
    """A tmpfs holding a valid iolens database (iolens.db), then remounted read-only."""
    mnt = mount_tmpfs("16m")
    _iolens_db(mnt / "iolens.db", tmp_path)
    subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
    return mnt


def test_valid_database_on_a_read_only_file_system_is_refused_as_read_only(
    engine: Path, readonly_tmpfs: Path, tmp_path: Path
) -> None:
    target = tmp_path / "data" / "f"
    target.parent.mkdir()
    db = readonly_tmpfs / "iolens.db"
    r = iolens(*_ior(target), "--db", str(db), env=_env(tmp_path, engine))
    _refused_before_the_run(r, target, f"{db}: the database file is not writable (read-only file system)")
    assert "not an iolens database" not in r.stderr
    # A new file in that directory: the directory is said to be read-only.
    new = readonly_tmpfs / "new.db"
    r = iolens(*_ior(target), "--db", str(new), env=_env(tmp_path, engine))
    _refused_before_the_run(r, target, f"directory {readonly_tmpfs} is not writable (read-only file system)")
    # The queries still read it.
    q = iolens("db", "runs", "--json", "--db", str(db), env=iolens_env(home=tmp_path))
    assert q.returncode == 0 and len(json.loads(q.stdout)) == 1, q.stderr


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory another user may enter (pytest's tmp_path is root's, 0700), removed afterwards."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux) to run iolens as another user")
    root = Path(tempfile.mkdtemp(prefix="iolens-preflight-"))
    try:
        root.chmod(0o755)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _as_nobody(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmd = [
        "setpriv",
        f"--reuid={NOBODY}",
        f"--regid={NOBODY}",
        "--clear-groups",
        sys.executable,
        "-m",
        "iolens",
    ]
    return subprocess.run([*cmd, *args], env=env, capture_output=True, text=True, timeout=120, check=False)


def test_database_another_user_may_not_write_is_refused_naming_what_is_read_only(
    engine: Path, shared_dir: Path
) -> None:
    home = shared_dir / "home"
    home.mkdir(mode=0o777)
    home.chmod(0o777)
    data = shared_dir / "data"
    data.mkdir()
    data.chmod(0o777)
    target = data / "f"
    env = _env(home, engine)
    dbdir = shared_dir / "db"  # root's, 0755: nobody may read, not create
    dbdir.mkdir(mode=0o755)
    db = dbdir / "iolens.db"
    _iolens_db(db, shared_dir)
    db.chmod(0o644)
    before = db.read_bytes()

    r = _as_nobody([*_ior(target), "--db", str(db)], env)
    _refused_before_the_run(r, target, f"{db}: the database file is not writable (permission denied)")
    r = _as_nobody([*_ior(target), "--db", str(dbdir / "new.db")], env)
    _refused_before_the_run(r, target, f"directory {dbdir} is not writable (permission denied)")
    assert not (dbdir / "new.db").exists()
    # The file writable, its directory not: SQLite could not create the WAL beside it.
    db.chmod(0o666)
    r = _as_nobody([*_ior(target), "--db", str(db)], env)
    _refused_before_the_run(r, target, "must create iolens.db-wal beside the database")
    assert db.read_bytes() == before
    # Both writable: the run goes ahead and is stored.
    dbdir.chmod(0o777)
    r = _as_nobody([*_ior(target), "--db", str(db)], env)
    assert r.returncode == 0 and "stored as run 2" in r.stderr, r.stderr


def test_file_that_is_not_an_iolens_database_is_refused_and_left_alone(engine: Path, tmp_path: Path) -> None:
    target = tmp_path / "data" / "f"
    target.parent.mkdir()
    text = tmp_path / "notes.db"
    text.write_text("these are my notes, not a database\n" * 200)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE accounts (id INTEGER)")
    conn.close()
    for path, why in (
        (text, "not an iolens database (file is not a database)"),
        (other, "not an iolens database (a SQLite database with other tables: accounts)"),
    ):
        before = path.read_bytes()
        r = iolens(*_ior(target), "--db", str(path), env=_env(tmp_path, engine))
        _refused_before_the_run(r, target, why)
        assert path.read_bytes() == before
        assert not Path(f"{path}-wal").exists() and not Path(f"{path}-journal").exists()


def test_damaged_database_is_refused_before_the_run(engine: Path, tmp_path: Path) -> None:
    db = tmp_path / "iolens.db"
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(40):
        (docs / f"{i}.json").write_text(
            json.dumps(ior_document(1e9 + i, started=f"2026-05-01T10:{i:02d}:00Z"))
        )
    assert iolens("db", "import", str(docs), "--db", str(db), env=iolens_env(home=tmp_path)).returncode == 0
    with sqlite3.connect(db) as conn:
        leaves = [
            r[0]
            for r in conn.execute("SELECT pageno FROM dbstat WHERE name = 'phases' AND pagetype = 'leaf'")
        ]
    conn.close()
    with open(db, "r+b") as f:
        f.seek(4096 * (leaves[len(leaves) // 2] - 1))
        f.write(b"\0" * 4096)
    target = tmp_path / "data" / "f"
    target.parent.mkdir()
    r = iolens(*_ior(target), "--db", str(db), env=_env(tmp_path, engine))
    _refused_before_the_run(r, target, "the database is damaged")


def test_empty_and_new_files_are_accepted_and_the_run_stored(engine: Path, tmp_path: Path) -> None:
    target = tmp_path / "f"
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    for db in (empty, tmp_path / "new.db"):
        r = iolens(*_ior(target), "--db", str(db), env=_env(tmp_path, engine))
        assert r.returncode == 0 and "stored as run 1" in r.stderr, r.stderr
        with Store.open(str(db), create=False) as store:
            assert queries.counts(store.db)["runs"] == 1


def test_postgresql_that_does_not_answer_or_only_reads_is_refused_before_the_run(
    engine: Path, pg_server: PgServer, tmp_path: Path
) -> None:
    import psycopg

    target = tmp_path / "data" / "f"
    target.parent.mkdir()
    env = _env(tmp_path, engine)
    gone = f"postgresql://iolens@/iolens?host={tmp_path}/no-server-here"
    r = iolens(*_ior(target), "--db", gone, env=env)
    _refused_before_the_run(r, target, "cannot connect to postgresql://iolens@/iolens")
    url = pg_server.new_database()
    assert iolens(*_ior(target), "--db", url, env=env).returncode == 0  # stored: the schema is there
    target.unlink(missing_ok=True)
    dbname = url.split("@/", 1)[1].split("?")[0]
    with psycopg.connect(pg_server.url("postgres"), autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{dbname}" SET default_transaction_read_only = on')  # type: ignore[arg-type]
    r = iolens(*_ior(target), "--db", url, env=env)
    _refused_before_the_run(r, target, "the server is read-only")
    # Through the environment too, named as such.
    r = iolens(*_ior(target), env={**env, "IOLENS_DB": gone})
    assert r.returncode == 2 and r.stderr.startswith("iolens: error: IOLENS_DB: cannot connect"), r.stderr


def test_profile_and_monitor_check_the_database_before_they_start(engine: Path, tmp_path: Path) -> None:
    bad = tmp_path / "notes.db"
    bad.write_text("not a database\n" * 100)
    marker = tmp_path / "ran"
    env = _env(tmp_path, engine)
    r = iolens("profile", "--db", str(bad), "--", "touch", str(marker), env=env)
    assert r.returncode == 2 and "not an iolens database" in r.stderr and not marker.exists(), r.stderr
    r = iolens("monitor", "--db", str(bad), "--interval", "0.1", "--duration", "0.3", "--no-live", env=env)
    assert r.returncode == 2 and "not an iolens database" in r.stderr and r.stdout == "", r.stderr
