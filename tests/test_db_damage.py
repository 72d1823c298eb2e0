"""A lost or damaged database file is said, never taken for an empty one: an empty (0-byte) file refused by
every query command and left as it was; pages zeroed in the middle of a real file met with a one-line
message by every command that reads them, refused by every writer before it writes, and listed by
`iolens db check`; `report --html` given a directory, refused before any work, never leaving a .tmp file."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from iolens.store import SCHEMA_VERSION, Store, queries

from .conftest import MountTmpfs
from .db_helpers import PgServer, iolens, iolens_env, ior_document

# Every command that only reads the database, with the ids a database of RUNS runs has.
RUNS = 60
QUERIES: list[list[str]] = [
    ["db", "runs"],
    ["db", "runs", "--json"],
    ["db", "show", "7"],
    ["db", "show", "7", "--json"],
    ["db", "trend", "--phase", "write"],
    ["db", "regressions"],
    ["db", "jobs"],
    ["db", "systems"],
    ["db", "info"],
    ["compare", "7", "8"],
    ["report", "7", "--html", "REPORT"],
]
WRITERS: list[list[str]] = [["db", "import", "NEWDOC"], ["db", "system", "lustre", "--site", "x"]]


def _digest(directory: Path) -> dict[str, str]:
    """Every file of a directory and the SHA-256 of its bytes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


def _run(args: list[str], db: str, tmp_path: Path) -> tuple[int, str, str]:
    report = tmp_path / "out" / "report.html"
    report.parent.mkdir(exist_ok=True)
    newdoc = tmp_path / "new.json"
    if not newdoc.exists():
        newdoc.write_text(json.dumps(ior_document(3e9, started="2026-07-01T10:00:00Z")))
    args = [str(report) if a == "REPORT" else str(newdoc) if a == "NEWDOC" else a for a in args]
    r = iolens(*args, "--db", db, env=iolens_env(home=tmp_path))
    return r.returncode, r.stdout, r.stderr


def _one_line(stderr: str) -> bool:
    return "Traceback" not in stderr and stderr.count("\n") == 1 and stderr.startswith("iolens: error: ")


# --- an empty file ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", QUERIES + [["db", "check"]], ids=lambda a: " ".join(a[:3]))
def test_empty_file_is_refused_by_every_query_and_left_byte_for_byte(tmp_path: Path, args: list[str]) -> None:
    home = tmp_path / "dbdir"
    home.mkdir()
    db = home / "iolens.db"
    db.write_bytes(b"")
    rc, out, err = _run(args, str(db), tmp_path)
    if args == ["db", "check"]:
        # db check reports the finding on standard output and exits 1: damage found.
        assert rc == 1 and "damage: empty file (0 bytes)" in out and _one_line(err), (out, err)
    else:
        assert rc == (2 if args[1:2] == ["regressions"] else 1), (out, err)
        assert _one_line(err) and "empty file (0 bytes), not an iolens database" in err, err
        assert out == ""
    # Untouched: still 0 bytes, no journal or WAL left beside it, no report written.
    assert _digest(home) == {"iolens.db": hashlib.sha256(b"").hexdigest()}
    assert not (tmp_path / "out" / "report.html").exists()


def test_storing_into_an_empty_file_makes_it_a_database(tmp_path: Path) -> None:
    db = tmp_path / "iolens.db"
    db.write_bytes(b"")
    rc, out, err = _run(["db", "import", "NEWDOC"], str(db), tmp_path)
    assert rc == 0 and "stored as run 1" in out, err
    rc, out, err = _run(["db", "runs", "--json"], str(db), tmp_path)
    assert rc == 0 and len(json.loads(out)) == 1


def test_sqlite_file_of_another_program_is_refused_by_queries_and_writers_and_left_alone(
    tmp_path: Path,
) -> None:
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE accounts (id INTEGER, name TEXT)")
        conn.execute("INSERT INTO accounts VALUES (1, 'x')")
    conn.close()
    before = db.read_bytes()
    for args in (["db", "runs"], ["db", "regressions"], ["db", "import", "NEWDOC"]):
        rc, _, err = _run(args, str(db), tmp_path)
        assert rc in (1, 2) and _one_line(err), err
        assert "not an iolens database" in err or "holds no iolens database" in err, err
    rc, out, _ = _run(["db", "check"], str(db), tmp_path)
    assert rc == 1 and "no iolens_meta table: not an iolens database (tables: accounts)" in out
    assert db.read_bytes() == before


def test_postgresql_database_without_the_schema_is_refused_by_queries_not_given_one(
    pg_server: PgServer, tmp_path: Path
) -> None:
    import psycopg

    url = pg_server.new_database()
    for args in QUERIES:
        rc, out, err = _run(args, url, tmp_path)
        assert rc == (2 if args[1:2] == ["regressions"] else 1), (args, out, err)
        assert _one_line(err) and "holds no iolens database" in err, err
    rc, out, err = _run(["db", "check"], url, tmp_path)
    assert rc == 1 and "no iolens_meta table" in out, (out, err)
    with psycopg.connect(url) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
    assert tables == (0,)  # no schema written by a query
    rc, out, err = _run(["db", "import", "NEWDOC"], url, tmp_path)
    assert rc == 0, err
    rc, out, err = _run(["db", "check"], url, tmp_path)
    assert rc == 0 and "no damage found" in out and "runs: 1 rows read" in out, (out, err)
    assert f"schema version: {SCHEMA_VERSION}" in out
    # A table lost (dropped by hand, a partial restore): check names it and exits 1.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE profile_files")
        conn.execute("DROP VIEW monitor_samples")
    rc, out, err = _run(["db", "check"], url, tmp_path)
    assert rc == 1 and "damage: table profile_files is missing" in out, (out, err)
    assert "damage: view monitor_samples is missing" in out


# --- pages zeroed in the middle of a real file -------------------------------------------------------------


@pytest.fixture(scope="module")
def sound_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real database: RUNS ior documents imported by `iolens db import` (each document padded so that
    its text overflows onto a page of its own), closed cleanly (the WAL checkpointed into the file)."""
    base = tmp_path_factory.mktemp("sound")
    docs = base / "docs"
    docs.mkdir()
    for i in range(RUNS):
        doc = ior_document(1e9 + i * 1e7, started=f"2026-05-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z")
        doc["notes"] = f"run {i} " + "x" * 3000
        (docs / f"run{i:03d}.json").write_text(json.dumps(doc))
    db = base / "iolens.db"
    r = iolens("db", "import", str(docs), "--db", str(db), "--system", "lustre", env=iolens_env(home=base))
    assert r.returncode == 0, r.stderr
    assert not Path(str(db) + "-wal").exists()
    return db


def _pages(db: Path, table: str, kind: str) -> list[int]:
    """The numbers (from 1) of a table's pages of a kind (leaf, internal, overflow): SQLite's dbstat."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY pageno", (table, kind)
        ).fetchall()
    conn.close()
    return [int(r[0]) for r in rows]


def _zero(db: Path, pages: list[int]) -> None:
    """Write zeros over whole pages (numbered from 1, as SQLite numbers them)."""
    with sqlite3.connect(db) as conn:
        size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    conn.close()
    with open(db, "r+b") as f:
        for page in pages:
            f.seek(size * (page - 1))
            f.write(b"\0" * size)


def _damaged(sound_db: Path, tmp_path: Path, where: str) -> tuple[Path, str]:
    d = tmp_path / "dbdir"
    d.mkdir()
    db = d / "iolens.db"
    shutil.copy(sound_db, db)
    if where == "middle":
        # The brief's case: a few pages in the middle of the file, whatever they hold.
        n = os.path.getsize(db) // 4096
        _zero(db, [n // 2, n // 2 + 1, n // 2 + 2])
    elif where == "runs-leaf":
        leaves = _pages(db, "runs", "leaf")
        _zero(db, [leaves[len(leaves) // 2]])
    elif where == "phases-leaf":
        leaves = _pages(db, "phases", "leaf")
        _zero(db, [leaves[len(leaves) // 2]])
    elif where == "document-overflow":
        # The last page of a document's overflow chain: only its text changes, which SQLite cannot see.
        pages = _pages(db, "runs", "overflow")
        _zero(db, [pages[6]])
    return db, where


@pytest.mark.parametrize("where", ["middle", "runs-leaf", "phases-leaf", "document-overflow"])
def test_zeroed_pages_are_met_with_one_line_by_every_command_and_listed_by_check(
    sound_db: Path, tmp_path: Path, where: str
) -> None:
    db, _ = _damaged(sound_db, tmp_path, where)
    before = _digest(db.parent)
    outcomes = {}
    for args in QUERIES:
        rc, out, err = _run(args, str(db), tmp_path)
        key = " ".join(args[:4])
        outcomes[key] = rc
        assert "Traceback" not in err, (key, err)
        if rc != 0:
            # Met the damage: one line that says so; regressions' "could not check" is 2, not "dropped".
            assert _one_line(err) and "damaged" in err, (key, err)
            assert rc == (2 if args[1:2] == ["regressions"] else 1), (key, rc, err)
            assert not list((tmp_path / "out").glob("*")), "a report or its .tmp was left"
    # The nightly check never passes a file SQLite finds damaged (the whole file is quick-checked first).
    if where != "document-overflow":
        assert outcomes["db regressions"] == 2
        if where in ("middle", "runs-leaf"):
            assert outcomes["db runs"] == 1
    # Writers check the file before they add to it: refused, the file unchanged.
    for args in WRITERS:
        rc, out, err = _run(args, str(db), tmp_path)
        if where == "document-overflow":
            continue  # content damage SQLite cannot see: db check finds it (below)
        assert (
            rc == 1 and _one_line(err) and "the database is damaged" in err and "nothing was written" in err
        )
    if where != "document-overflow":
        assert _digest(db.parent) == before
    # db check lists what it found and exits 1.
    rc, out, err = _run(["db", "check"], str(db), tmp_path)
    assert rc == 1, (out, err)
    assert _one_line(err) and "problem(s) found" in err
    damage = [line for line in out.splitlines() if line.startswith("damage: ")]
    assert damage, out
    if where == "document-overflow":
        assert any("its document is not the JSON that was stored" in line for line in damage), damage
        # The run whose document is damaged: show --json, which parses it, says so in one line.
        bad = int(damage[0].split()[2].rstrip(":"))
        rc, out, err = _run(["db", "show", str(bad), "--json"], str(db), tmp_path)
        assert rc == 1 and _one_line(err) and f"run {bad}'s document is not the JSON" in err, err
        assert "the database is damaged" in err


def test_sound_database_passes_check_and_every_query(sound_db: Path, tmp_path: Path) -> None:
    for args in QUERIES:
        rc, out, err = _run(args, str(sound_db), tmp_path)
        assert rc == 0 and err.count("Traceback") == 0, (args, err)
    rc, out, err = _run(["db", "check"], str(sound_db), tmp_path)
    assert rc == 0 and "no damage found" in out and f"schema version: {SCHEMA_VERSION}" in out, (out, err)
    with Store.open(str(sound_db), create=False) as store:
        assert queries.counts(store.db)["runs"] == RUNS


def test_check_of_a_database_that_is_not_there_cannot_check(tmp_path: Path) -> None:
    rc, out, err = _run(["db", "check"], str(tmp_path / "none.db"), tmp_path)
    assert rc == 2 and _one_line(err) and "cannot check: no database at" in err
    assert not (tmp_path / "none.db").exists()


# --- report --html -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["report", "7"], ["db", "trend", "--phase", "write"]], ids=str)
def test_html_given_an_existing_directory_is_refused_before_any_work(
    sound_db: Path, tmp_path: Path, command: list[str]
) -> None:
    target = tmp_path / "reports"
    target.mkdir()
    r = iolens(*command, "--html", str(target), "--db", str(sound_db), env=iolens_env(home=tmp_path))
    assert r.returncode == 2 and r.stdout == "" and _one_line(r.stderr), r.stderr
    assert f"--html {target}: is a directory" in r.stderr
    assert list(target.iterdir()) == [] and list(tmp_path.glob(".*.tmp")) == []


def test_report_that_cannot_be_written_leaves_no_tmp_file(
    sound_db: Path, tmp_path: Path, mount_tmpfs: MountTmpfs
) -> None:
    """A report larger than the space left: the error in one line, no .tmp of several MB left behind."""
    mnt = mount_tmpfs("1m")
    out = mnt / "run7.html"
    r = iolens("report", "7", "--html", str(out), "--db", str(sound_db), env=iolens_env(home=tmp_path))
    assert r.returncode == 1 and _one_line(r.stderr), r.stderr
    assert "No space left on device" in r.stderr and str(out) in r.stderr
    assert list(mnt.iterdir()) == []


def test_check_takes_a_run_stored_under_a_uid_of_its_own_as_sound(tmp_path: Path) -> None:
    """The Python API stores records under the caller's uids: only a SHA-256 uid is checked against the
    document's hash, so such a run is no damage."""
    from iolens.store.records import PhaseRow, RunRecord

    db = str(tmp_path / "api.db")
    with Store.open(db) as store:
        store.put_run(
            RunRecord(uid="my-run-1", tool="ior", origin="iolens", status="ok", document='{"a":1}',
                      phases=[PhaseRow(name="write", value=1.0, unit="B/s")])
        )  # fmt: skip
    rc, out, err = _run(["db", "check"], db, tmp_path)
    assert rc == 0 and "no damage found" in out, (out, err)
    # The same run with a SHA-256 uid that is not its document's: changed on disk.
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET uid = ? WHERE id = 1", ("0" * 64,))
    conn.close()
    rc, out, err = _run(["db", "check"], db, tmp_path)
    assert rc == 1 and "run 1: its document does not match its uid" in out, (out, err)
