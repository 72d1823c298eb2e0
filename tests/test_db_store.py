"""The statistics database on both backends (a real SQLite file, a real PostgreSQL server): imports of result
documents and official IO500 result directories, idempotent re-imports, refused damaged input, schema
versions, concurrent writers, killed writers, and the questions (runs, show, compare, trend, regressions)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from iolens.io500.results_files import read_result, read_summary
from iolens.store import SCHEMA_VERSION, SchemaTooNew, Store, Stored, queries
from iolens.store.db import connect
from iolens.store.records import PhaseRow, ProfileFile, ProfileRecord, RunRecord, Sample

from .db_helpers import IO500_REFERENCE, iolens, iolens_env, ior_document

GIB = 1024**3


def counts(url: str) -> dict[str, int]:
    with Store.open(url, create=False) as store:
        return queries.counts(store.db)


def write_doc(path: Path, doc: dict[str, Any], indent: int | None = None) -> Path:
    path.write_text(json.dumps(doc, indent=indent), encoding="utf-8")
    return path


# --- IO500 result directories -------------------------------------------------------------------------


def test_reference_io500_directory_gives_the_files_phase_values_and_score(
    db_url: str, tmp_path: Path
) -> None:
    r = iolens(
        "db", "import", str(IO500_REFERENCE), "--db", db_url, "--system", "ref", env=iolens_env(home=tmp_path)
    )
    assert r.returncode == 0, r.stderr
    assert "stored as run 1" in r.stdout

    result = read_result(IO500_REFERENCE / "result.txt")
    summary = read_summary(IO500_REFERENCE / "result_summary.txt")
    with Store.open(db_url, create=False) as store:
        run = queries.get_run(store.db, 1)
    phases = {p["name"]: p for p in run["phases"]}
    # Every phase value exactly as result.txt and result_summary.txt print it.
    for name, score in result.phase_scores().items():
        assert phases[name]["value"] == score
    for line in summary.phases:
        if line.name == "timestamp":  # a dummy phase: no score in result.txt
            assert phases[line.name]["value"] is None
            continue
        assert f"{phases[line.name]['value']:f}" == line.score
        assert phases[line.name]["unit"] == line.unit
        assert phases[line.name]["valid"] is line.valid
    scores, valid, _ = result.score_values()
    assert run["score"] == scores.score == 31.923448
    assert (phases["bw"]["value"], phases["md"]["value"], phases["score"]["value"]) == (
        scores.bw,
        scores.md,
        scores.score,
    )
    assert run["valid"] is False and valid is False
    assert run["config_hash"] == "D9E23945" and run["ranks"] == 2 and run["system"] == "ref"
    assert phases["ior-easy-write"]["time_s"] == pytest.approx(2.2121)
    assert phases["ior-easy-write"]["ended_at"] - phases["ior-easy-write"]["started_at"] == 3

    # Importing the same directory again changes nothing.
    before = counts(db_url)
    again = iolens("db", "import", str(IO500_REFERENCE), "--db", db_url, env=iolens_env(home=tmp_path))
    assert again.returncode == 0 and "already stored as run 1" in again.stdout
    assert counts(db_url) == before == {**before, "runs": 1, "phases": 17}


def test_reference_phase_outputs_add_transfers_bytes_and_items(db_url: str, tmp_path: Path) -> None:
    # The app keeps IOR's and mdtest's own output per phase; the import reads what result.txt lacks.
    r = iolens("db", "import", str(IO500_REFERENCE), "--db", db_url, env=iolens_env(home=tmp_path))
    assert r.returncode == 0, r.stderr
    with Store.open(db_url, create=False) as store:
        run = queries.get_run(store.db, 1, document=True)
    phases = {p["name"]: p for p in run["phases"]}
    # ior-easy-write: the stonewall hit at 1024 transfers of 2 MiB per rank (wear-out: every rank), 2 ranks.
    assert (phases["ior-easy-write"]["ops"], phases["ior-easy-write"]["bytes"]) == (2048, 4 * GIB)
    # mdtest-easy-write: "Continue stonewall hit ... max: 658332", 2 ranks.
    assert phases["mdtest-easy-write"]["ops"] == 2 * 658332
    assert phases["mdtest-easy-write"]["bytes"] is None
    # Phases whose output the directory does not hold keep result.txt's figures only.
    assert phases["ior-hard-write"]["ops"] is None and phases["mdtest-hard-write"]["ops"] is None
    doc = json.loads(run["document"])
    assert set(doc["phase_outputs"]) == {"ior-easy-write", "mdtest-easy-write"}
    ior = doc["phase_outputs"]["ior-easy-write"]
    assert ior["tool"] == "ior" and ior["stonewall"]["pairs_max"] == 1024
    assert ior["rows"][0]["bw_mib_per_s"] == 1853.59
    md = doc["phase_outputs"]["mdtest-easy-write"]
    assert (md["stonewall_min"], md["stonewall_max"], md["files"]) == (656316, 658332, 2_000_000)
    assert doc["files"]["mdtest-easy-write.txt"] == (IO500_REFERENCE / "mdtest-easy-write.txt").read_text()


def test_phase_output_that_is_truncated_or_from_another_run_is_refused(db_url: str, tmp_path: Path) -> None:
    cut = _copy_reference(tmp_path / "cut")
    text = (cut / "mdtest-easy-write.txt").read_text()
    (cut / "mdtest-easy-write.txt").write_text(text[: text.index("SUMMARY rate")])
    r = iolens("db", "import", str(cut), "--db", db_url, env=iolens_env(home=tmp_path))
    assert r.returncode == 1
    assert f"{cut}/mdtest-easy-write.txt: line " in r.stderr and "no SUMMARY rate table" in r.stderr

    other = _copy_reference(tmp_path / "other")
    text = (other / "ior-easy-write.txt").read_text().replace("write     1853.59", "write     1953.59")
    (other / "ior-easy-write.txt").write_text(text)
    r = iolens("db", "import", str(other), "--db", db_url, env=iolens_env(home=tmp_path))
    assert r.returncode == 1 and "ior-easy-write.txt: write 1953.59 MiB/s here but 1.810145 GiB/s" in r.stderr
    assert "not from the same run" in r.stderr

    swapped = _copy_reference(tmp_path / "swapped")
    shutil.copy(swapped / "mdtest-easy-write.txt", swapped / "ior-easy-write.txt")
    r = iolens("db", "import", str(swapped), "--db", db_url, env=iolens_env(home=tmp_path))
    assert r.returncode == 1 and "ior-easy-write.txt: holds mdtest output, not ior's" in r.stderr
    assert counts(db_url)["runs"] == 0


@pytest.mark.parametrize(
    ("printed", "true_mib", "another"),
    [("3612", 3611.73, "3613"), ("3600.00", 3599.996, "3600.01"), ("12045", 12044.6, "12046"),
     ("0.734512", 0.7345117, "0.735512")],
    ids=["3612", "3599.996", "12045", "below-1"],
)  # fmt: skip
def test_ior_phase_at_or_above_3600_mib_is_compared_within_the_whole_mib_ior_printed(
    tmp_path: Path, printed: str, true_mib: float, another: str
) -> None:
    """IOR prints a bandwidth of 3600 MiB/s or more without decimals (below 1 with six, else two): the
    cross-check with result.txt's six-decimal GiB/s allows half the last digit IOR printed, no more."""
    env = iolens_env(home=tmp_path)
    score = f"{true_mib / 1024:.6f}"
    for case, bw in (("same", printed), ("other", another)):
        d = _copy_reference(tmp_path / case)
        for name, old, new in (
            ("ior-easy-write.txt", "write     1853.59    ", f"write     {bw:<10} "),
            ("result.txt", "score           = 1.810145", f"score           = {score}"),
            ("result_summary.txt", "ior-easy-write        1.810145", f"ior-easy-write        {score}"),
        ):
            text = (d / name).read_text()
            assert old in text
            (d / name).write_text(text.replace(old, new))
        url = str(tmp_path / f"{case}.db")
        r = iolens("db", "import", str(d), "--db", url, env=env)
        if case == "other":  # a digit more than IOR's rounding: another run's output, refused
            assert r.returncode == 1 and f"write {float(bw)} MiB/s here but {score} GiB/s" in r.stderr
            assert "not from the same run" in r.stderr
            continue
        assert r.returncode == 0, r.stderr
        with Store.open(url, create=False) as store:
            run = queries.get_run(store.db, 1, document=True)
        row = next(p for p in run["phases"] if p["name"] == "ior-easy-write")
        assert row["value"] == float(score) and row["ops"] == 2048
        ior = json.loads(run["document"])["phase_outputs"]["ior-easy-write"]
        assert ior["rows"][0]["bw_mib_per_s"] == float(bw)


def _copy_reference(tmp_path: Path) -> Path:
    d = tmp_path / "io500-copy"
    shutil.copytree(IO500_REFERENCE, d)
    return d


def test_truncated_or_inconsistent_io500_directory_is_refused_and_nothing_stored(
    db_url: str, tmp_path: Path
) -> None:
    cut = _copy_reference(tmp_path / "cut")
    text = (cut / "result.txt").read_text()
    (cut / "result.txt").write_text(text[: text.index("[SCORE]") - 1])
    r = iolens("db", "import", str(cut), "--db", db_url, env=iolens_env(home=tmp_path))
    assert r.returncode == 1
    assert "no [SCORE] section" in r.stderr and "nothing stored" in r.stderr

    other = _copy_reference(tmp_path / "other")
    summary = (other / "result_summary.txt").read_text().replace("1.810145", "1.910145")
    (other / "result_summary.txt").write_text(summary)
    r = iolens("db", "import", str(other), "--db", db_url, env=iolens_env(home=tmp_path))
    assert r.returncode == 1 and "not from the same run" in r.stderr
    assert counts(db_url)["runs"] == 0 and counts(db_url)["phases"] == 0


def test_io500_directory_with_bytes_that_are_not_utf8_is_refused_and_the_other_paths_import(
    db_url: str, tmp_path: Path
) -> None:
    bad_result = _copy_reference(tmp_path / "bad-result")
    data = (bad_result / "result.txt").read_bytes()
    (bad_result / "result.txt").write_bytes(data.replace(b"; START", b"; ST\xffART", 1))
    bad_config = _copy_reference(tmp_path / "bad-config")
    data = (bad_config / "config.ini").read_bytes()
    (bad_config / "config.ini").write_bytes(data.replace(b"api = POSIX", b"api = POSIX \xe9t\xe9", 1))
    good = write_doc(tmp_path / "good.json", ior_document(GIB))
    r = iolens(
        "db", "import", str(bad_result), str(bad_config), str(good), "--db", db_url,
        env=iolens_env(home=tmp_path),
    )  # fmt: skip
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert f"{bad_result / 'result.txt'}:7: byte 0xff is not UTF-8 text" in r.stderr
    line = data[: data.index(b"api = POSIX")].count(b"\n") + 1
    assert f"{bad_config / 'config.ini'}:{line}: byte 0xe9 is not UTF-8 text" in r.stderr
    assert r.stderr.count("(nothing stored)") == 2
    assert "good.json: stored as run 1" in r.stdout
    assert counts(db_url)["runs"] == 1 and counts(db_url)["phases"] == 2


# --- result documents -----------------------------------------------------------------------------------


def test_result_document_is_stored_once_however_it_is_formatted(db_url: str, tmp_path: Path) -> None:
    doc = ior_document(2 * GIB, 3 * GIB)
    compact = write_doc(tmp_path / "a.json", doc)
    pretty = write_doc(tmp_path / "b.json", doc, indent=2)
    env = iolens_env(home=tmp_path)
    first = iolens("db", "import", str(compact), "--db", db_url, env=env)
    assert first.returncode == 0, first.stderr
    before = counts(db_url)
    second = iolens("db", "import", str(pretty), str(compact), "--db", db_url, env=env)
    assert second.returncode == 0
    assert second.stdout.count("already stored as run 1") == 2
    assert counts(db_url) == before and before["runs"] == 1 and before["phases"] == 2

    with Store.open(db_url, create=False) as store:
        run = queries.get_run(store.db, 1, document=True)
    assert json.loads(run["document"]) == doc  # the source document is kept beside the columns
    assert run["tool"] == "ior" and run["ranks"] == 2 and run["hostname"] == "node01"
    assert run["file_system"] == "ext4" and run["valid"] is True
    write = run["phases"][0]
    assert (write["name"], write["value"], write["unit"], write["bytes"], write["ops"]) == (
        "write",
        2 * GIB,
        "B/s",
        2 * 64 * 1024 * 1024,
        128,
    )
    assert (write["p50_ns"], write["p99_ns"], write["max_ns"]) == (380_000, 1_900_000, 2_500_000)


def test_truncated_or_corrupt_document_is_refused_with_a_message_and_nothing_stored(
    db_url: str, tmp_path: Path
) -> None:
    text = json.dumps(ior_document(GIB))
    truncated = tmp_path / "truncated.json"
    truncated.write_text(text[: len(text) // 2])
    wrong = ior_document(GIB)
    wrong["phases"][0]["bytes"] = "many"
    corrupt = write_doc(tmp_path / "corrupt.json", wrong)
    newer = ior_document(GIB)
    newer["schema_version"] = 99
    future = write_doc(tmp_path / "future.json", newer)
    good = write_doc(tmp_path / "good.json", ior_document(GIB))
    r = iolens(
        "db", "import", str(truncated), str(corrupt), str(future), str(good), "--db", db_url,
        env=iolens_env(home=tmp_path),
    )  # fmt: skip
    assert r.returncode == 1
    assert "truncated.json: not valid JSON (truncated?)" in r.stderr
    assert "corrupt.json: phases[0].bytes: expected integer, got string" in r.stderr
    assert "unsupported schema_version 99" in r.stderr
    assert r.stderr.count("(nothing stored)") == 3
    assert "good.json: stored as run 1" in r.stdout
    assert counts(db_url)["runs"] == 1


def test_document_with_nan_or_infinity_where_the_parser_does_not_look_is_refused_and_others_import(
    db_url: str, tmp_path: Path
) -> None:
    # Python's json writes NaN and Infinity (JSON has neither); the result parser does not check the config.
    inf = ior_document(GIB)
    inf["config"]["transfer-size"] = float("inf")
    nan = ior_document(GIB, started="2026-05-02T10:00:00Z")
    nan["config"]["extra"] = {"ratios": [1.0, float("nan")]}
    inf_path = write_doc(tmp_path / "inf.json", inf)
    nan_path = write_doc(tmp_path / "nan.json", nan)
    assert "Infinity" in inf_path.read_text() and "NaN" in nan_path.read_text()
    good = write_doc(tmp_path / "good.json", ior_document(2 * GIB, started="2026-05-03T10:00:00Z"))
    r = iolens(
        "db", "import", str(inf_path), str(nan_path), str(good), "--db", db_url, env=iolens_env(home=tmp_path)
    )
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert f"{inf_path}: config.transfer-size: Infinity is not a JSON number" in r.stderr
    assert f"{nan_path}: config.extra.ratios[1]: NaN is not a JSON number" in r.stderr
    assert r.stderr.count("(nothing stored)") == 2
    assert "good.json: stored as run 1" in r.stdout
    c = counts(db_url)
    assert (c["runs"], c["phases"], c["systems"]) == (1, 2, 0)


# --- schema versions ------------------------------------------------------------------------------------


def test_database_written_by_a_newer_iolens_is_refused_and_left_alone(db_url: str, tmp_path: Path) -> None:
    with Store.open(db_url) as store:
        store.db.execute(
            "UPDATE iolens_meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),)
        )
        store.db.execute("UPDATE iolens_meta SET value = '9.9.9' WHERE key = 'written_by'")
    newer = SCHEMA_VERSION + 1
    with pytest.raises(SchemaTooNew, match=rf"schema version {newer} \(last migrated by iolens 9.9.9\)"):
        Store.open(db_url)
    doc = write_doc(tmp_path / "d.json", ior_document(GIB))
    r = iolens("db", "import", str(doc), "--db", db_url, env=iolens_env(home=tmp_path))
    assert r.returncode == 1
    assert f"knows versions up to {SCHEMA_VERSION}" in r.stderr and "Upgrade iolens" in r.stderr
    db = connect(db_url)
    try:
        assert db.query_one("SELECT COUNT(*) FROM runs") == (0,)
        assert db.query_one("SELECT value FROM iolens_meta WHERE key = 'schema_version'") == (
            str(SCHEMA_VERSION + 1),
        )
    finally:
        db.close()


def test_sqlite_database_is_created_on_first_use_in_wal_mode_at_the_default_location(tmp_path: Path) -> None:
    env = iolens_env(home=tmp_path)
    missing = iolens("db", "runs", env=env)
    default = tmp_path / ".local" / "share" / "iolens" / "iolens.db"
    assert missing.returncode == 1 and f"no database at {default}" in missing.stderr
    doc = write_doc(tmp_path / "d.json", ior_document(GIB))
    r = iolens("db", "import", str(doc), env=env)
    assert r.returncode == 0, r.stderr
    assert default.is_file()
    db = connect(str(default), create=False)
    try:
        assert db.query_one("PRAGMA journal_mode") == ("wal",)
    finally:
        db.close()
    info = iolens("db", "info", env=env)
    assert f"database: {default} (sqlite; from default)" in info.stdout
    assert f"schema version: {SCHEMA_VERSION}" in info.stdout
    # IOLENS_DB and the config file name another database, --db beats both.
    other = tmp_path / "other.db"
    r = iolens("db", "import", str(doc), env=iolens_env({"IOLENS_DB": str(other)}, home=tmp_path))
    assert r.returncode == 0 and other.is_file()
    cfg = tmp_path / ".config" / "iolens"
    cfg.mkdir(parents=True)
    (cfg / "iolens.ini").write_text(f"[store]\ndb = {tmp_path / 'cfg.db'}\nsystem = from-config\n")
    r = iolens("db", "import", str(doc), env=env)
    assert r.returncode == 0 and (tmp_path / "cfg.db").is_file()
    runs = iolens("db", "runs", "--json", env=env)
    assert json.loads(runs.stdout)[0]["system"] == "from-config"


# --- concurrency and interruption -----------------------------------------------------------------------


def test_two_processes_storing_at_once_lose_nothing_and_duplicate_nothing(
    db_url: str, tmp_path: Path
) -> None:
    dirs = []
    for w in range(2):
        d = tmp_path / f"docs{w}"
        d.mkdir()
        for i in range(15):
            write_doc(d / f"{i}.json", ior_document(GIB + i, started=f"2026-05-0{w + 1}T10:{i:02d}:00Z"))
        dirs.append(d)
    shared = tmp_path / "shared.json"
    write_doc(shared, ior_document(5 * GIB))
    env = iolens_env(home=tmp_path)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "iolens",
                "db",
                "import",
                str(d),
                str(shared),
                "--db",
                db_url,
                "--system",
                "s",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for d in dirs
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    assert counts(db_url)["runs"] == 31 and counts(db_url)["phases"] == 62 and counts(db_url)["systems"] == 1


def _put(kind: str, store: Store, system: str) -> Stored:
    """Store one small record of a kind, always with the uid "same-source"."""
    if kind == "run":
        phases = [PhaseRow(name="write", value=1.0, unit="B/s")]
        run = RunRecord(
            uid="same-source", tool="ior", origin="iolens", status="ok", document="{}", phases=phases
        )
        return store.put_run(run, system)
    if kind == "profile":
        files = [ProfileFile(path="/scratch/a", opens=1)]
        prof = ProfileRecord(uid="same-source", origin="iolens", summary={}, file_rows=files)
        return store.put_profile(prof, system)
    return store.put_samples([Sample(1.0, "n1", "cpu", "", "busy", 0.5)], "same-source")


def _wait_until_waiting(url: str, other: Store, seen: list[str]) -> None:
    """Until the other store's connection waits for the first one's transaction: on PostgreSQL, until its
    server process waits for a lock; on SQLite, until it has begun its transaction (BEGIN IMMEDIATE waits
    for the write lock)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if url.startswith("postgresql://"):
            import psycopg

            with psycopg.connect(url, autocommit=True) as watcher:
                row = watcher.execute(
                    "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                    (other.db.conn.info.backend_pid,),  # type: ignore[attr-defined]
                ).fetchone()
            if row is not None and row[0] == "Lock":
                return
        elif any(sql.startswith("BEGIN IMMEDIATE") for sql in seen):
            return
        time.sleep(0.05)
    pytest.fail("the second writer never waited for the first")


@pytest.mark.parametrize("kind", ["run", "profile", "samples"])
def test_second_writer_of_the_same_source_waits_then_finds_it_already_stored(db_url: str, kind: str) -> None:
    first_store, second_store = Store.open(db_url), Store.open(db_url)
    seen: list[str] = []
    if isinstance(second_store.db.conn, sqlite3.Connection):  # type: ignore[attr-defined]
        second_store.db.conn.set_trace_callback(seen.append)  # type: ignore[attr-defined]
    outcome: dict[str, Any] = {}

    def second() -> None:
        try:
            outcome["stored"] = _put(kind, second_store, "other")
        except BaseException as exc:  # noqa: BLE001 - the test reports whatever it was
            outcome["error"] = exc

    thread = threading.Thread(target=second)
    try:
        # The first writer stores the source and keeps its transaction open while the second one stores
        # the same source; then it commits.
        with first_store.db.transaction():
            first = _put(kind, first_store, "lustre")
            assert first.new
            thread.start()
            _wait_until_waiting(db_url, second_store, seen)
        thread.join(timeout=150)
        assert not thread.is_alive()
        assert "error" not in outcome, repr(outcome.get("error"))
        assert outcome["stored"] == Stored(kind, first.id, False)
    finally:
        first_store.close()
        second_store.close()
    c = counts(db_url)
    assert (c["runs"], c["phases"]) == ((1, 1) if kind == "run" else (0, 0))
    assert (c["profiles"], c["profile_files"]) == ((1, 1) if kind == "profile" else (0, 0))
    assert c["samples"] == (1 if kind == "samples" else 0)
    # The second writer's system was not created: nothing of its attempt is kept.
    with Store.open(db_url, create=False) as store:
        names = [s["name"] for s in queries.list_systems(store.db)]
    assert names == ([] if kind == "samples" else ["lustre"])


KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    from iolens.store import Store
    from iolens.store.records import PhaseRow, RunRecord

    class SlowPhases(list):
        # The run row is written; the transaction is open while the phases are read.
        def __iter__(self):
            yield PhaseRow(name="write", value=1.0, unit="B/s")
            print("inside", flush=True)
            time.sleep(60)
            yield PhaseRow(name="read", value=2.0, unit="B/s")

    store = Store.open(sys.argv[1])
    record = RunRecord(uid="killed", tool="ior", origin="iolens", status="ok", document="{}",
                       phases=SlowPhases())
    store.put_run(record, "victim")
    print("committed", flush=True)
    """
)


def test_writer_killed_in_the_middle_of_a_run_leaves_nothing_of_it(db_url: str, tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(KILLED_WRITER)
    proc = subprocess.Popen(
        [sys.executable, str(script), db_url],
        stdout=subprocess.PIPE,
        text=True,
        env=iolens_env(home=tmp_path),
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "inside"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    c = counts(db_url)
    assert c["runs"] == 0 and c["phases"] == 0
    # The database is usable at once: nothing is left locked.
    doc = write_doc(tmp_path / "d.json", ior_document(GIB))
    r = iolens("db", "import", str(doc), "--db", db_url, env=iolens_env(home=tmp_path), timeout=60)
    assert r.returncode == 0, r.stderr
    assert counts(db_url)["runs"] == 1


# --- questions ------------------------------------------------------------------------------------------


def _history(
    url: str, tmp_path: Path, values: list[float], system: str = "lustre", transfer: int = 1048576
) -> None:
    d = tmp_path / f"hist-{system}-{transfer}"
    d.mkdir()
    for day, bw in enumerate(values, start=1):
        write_doc(
            d / f"{day:02d}.json",
            ior_document(bw, 2 * bw, started=f"2026-05-{day:02d}T02:00:00Z", transfer=transfer),
        )
    r = iolens("db", "import", str(d), "--db", url, "--system", system, env=iolens_env(home=tmp_path))
    assert r.returncode == 0, r.stderr


def test_regression_is_flagged_against_median_and_mad_of_like_for_like_runs(
    db_url: str, tmp_path: Path
) -> None:
    env = iolens_env(home=tmp_path)
    steady = [10.0, 10.4, 9.8, 10.1, 10.2, 9.9]
    _history(db_url, tmp_path, [v * GIB for v in steady])
    ok = iolens("db", "regressions", "--db", db_url, env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "no regression" in ok.stdout

    # Another transfer size is another configuration: its slow runs are not compared with the others.
    _history(db_url, tmp_path, [2.0 * GIB, 2.1 * GIB], transfer=4096)
    # The latest 1 MiB run writes 30% slower; its read is as usual.
    write_doc(tmp_path / "slow.json", ior_document(7.0 * GIB, 2 * 10.0 * GIB, started="2026-05-20T02:00:00Z"))
    r = iolens("db", "import", str(tmp_path / "slow.json"), "--db", db_url, "--system", "lustre", env=env)
    assert r.returncode == 0
    bad = iolens("db", "regressions", "--db", db_url, env=env)
    assert bad.returncode == 1
    lines = [line for line in bad.stdout.splitlines() if "REGRESSION" in line]
    assert len(lines) == 1 and " write " in lines[0] and "lustre" in lines[0]
    assert "-30.3%" in lines[0]  # 7.0 against the median 10.05
    assert "1 regression(s)" in bad.stdout
    # A threshold above the drop lets it pass; --json says the same.
    assert iolens("db", "regressions", "--threshold", "0.35", "--db", db_url, env=env).returncode == 0
    checks = json.loads(iolens("db", "regressions", "--json", "--db", db_url, env=env).stdout)
    flagged = [c for c in checks if c["regression"]]
    assert [(c["phase"], c["history"], round(c["median"] / GIB, 3)) for c in flagged] == [("write", 6, 10.05)]


def test_regressions_exit_status_tells_a_regression_from_an_error(db_url: str, tmp_path: Path) -> None:
    """0 no regression, 1 a regression, 2 trouble: a nightly job never takes "could not check" for a drop."""
    env = iolens_env(home=tmp_path)
    _history(db_url, tmp_path, [10 * GIB, 10.2 * GIB, 9.9 * GIB, 10.1 * GIB])
    assert iolens("db", "regressions", "--db", db_url, env=env).returncode == 0
    write_doc(tmp_path / "slow.json", ior_document(5 * GIB, 20 * GIB, started="2026-05-20T02:00:00Z"))
    imp = iolens("db", "import", str(tmp_path / "slow.json"), "--db", db_url, "--system", "lustre", env=env)
    assert imp.returncode == 0, imp.stderr
    assert iolens("db", "regressions", "--db", db_url, env=env).returncode == 1

    missing = iolens("db", "regressions", "--db", str(tmp_path / "nothing-here.db"), env=env)
    assert (missing.returncode, missing.stdout) == (2, "")
    assert "no database at" in missing.stderr
    usage = iolens("db", "regressions", "--threshold", "ten", "--db", db_url, env=env)
    assert usage.returncode == 2 and "--threshold: invalid float value: 'ten'" in usage.stderr
    with Store.open(db_url) as store:
        store.db.execute("UPDATE iolens_meta SET value = '99' WHERE key = 'schema_version'")
    newer = iolens("db", "regressions", "--db", db_url, env=env)
    assert newer.returncode == 2 and "Upgrade iolens" in newer.stderr
    # The other db commands keep status 1 for a database error.
    assert iolens("db", "runs", "--db", db_url, env=env).returncode == 1


def test_runs_trend_and_compare_answer_from_the_stored_runs(db_url: str, tmp_path: Path) -> None:
    env = iolens_env(home=tmp_path)
    _history(db_url, tmp_path, [g * GIB for g in (1, 2, 3, 4, 5, 6, 7, 8)])
    _history(db_url, tmp_path, [1.5 * GIB], system="other", transfer=4096)
    runs = json.loads(iolens("db", "runs", "--json", "--db", db_url, "--system", "lustre", env=env).stdout)
    assert len(runs) == 8 and runs[0]["id"] == 8  # newest first
    assert (
        len(
            json.loads(
                iolens("db", "runs", "--json", "--db", db_url, "--since", "2026-05-07", env=env).stdout
            )
        )
        == 2
    )
    assert (
        json.loads(iolens("db", "runs", "--json", "--db", db_url, "--tool", "mdtest", env=env).stdout) == []
    )

    t = iolens("db", "trend", "--system", "lustre", "--phase", "write", "--db", db_url, env=env)
    assert t.returncode == 0, t.stderr
    assert "▁▂▃▄▅▆▇█" in t.stdout
    assert "write on lustre: 8 run(s)" in t.stdout and "latest 8.000 GiB/s" in t.stdout
    missing = iolens("db", "trend", "--system", "lustre", "--phase", "nope", "--db", db_url, env=env)
    assert missing.returncode == 1 and "phases stored: read, write" in missing.stderr

    c = iolens("compare", "1", "8", "9", "--db", db_url, env=env)
    assert c.returncode == 0, c.stderr
    write = next(line for line in c.stdout.splitlines() if line.startswith("write"))
    assert "1.000 GiB/s" in write and "8.000 GiB/s" in write and "×8.000" in write and "×1.500" in write
    assert "p99" in c.stdout
    assert "config transfer-size" in c.stdout and "1048576" in c.stdout and "4096" in c.stdout
    assert "system" in c.stdout and "other" in c.stdout

    show = iolens("db", "show", "3", "--db", db_url, env=env)
    assert show.returncode == 0 and "run 3: ior" in show.stdout and "3.000 GiB/s" in show.stdout
    assert iolens("db", "show", "99", "--db", db_url, env=env).returncode == 1


def test_compare_marks_the_phases_that_were_not_valid_in_each_run(db_url: str, tmp_path: Path) -> None:
    # The reference run's ior-easy-write is INVALID; in a copy those lines are gone (another run: its
    # result.txt differs), so there the phase is valid.
    fixed = _copy_reference(tmp_path / "fixed")
    (fixed / "result_summary.txt").unlink()
    lines = (fixed / "result.txt").read_text().splitlines(keepends=True)
    start = lines.index("[ior-easy-write]\n")
    end = lines.index("[mdtest-easy-write]\n")
    kept = [ln for ln in lines[start:end] if not ln.startswith("; ERROR INVALID")]
    (fixed / "result.txt").write_text("".join(lines[:start] + kept + lines[end:]))
    env = iolens_env(home=tmp_path)
    r = iolens("db", "import", str(IO500_REFERENCE), str(fixed), "--db", db_url, env=env)
    assert r.returncode == 0, r.stderr
    c = iolens("compare", "1", "2", "--db", db_url, env=env)
    assert c.returncode == 0, c.stderr
    rows = {line.split()[0]: line for line in c.stdout.splitlines() if line.strip()}
    assert "1.810 GiB/s INVALID" in rows["ior-easy-write"]
    assert rows["ior-easy-write"].count("INVALID") == 1  # run 2's is valid
    assert rows["ior-hard-write"].count("INVALID") == 2  # invalid in both
    assert "INVALID" not in rows["ior-easy-read"]
    assert "INVALID: the phase was not valid in that run" in c.stdout
    out = json.loads(iolens("compare", "1", "2", "--json", "--db", db_url, env=env).stdout)
    assert [f["valid"] for f in out["phases"]["ior-easy-write"]] == [False, True]


def test_systems_record_what_an_io500_submission_says_about_them(db_url: str, tmp_path: Path) -> None:
    env = iolens_env(home=tmp_path)

    def db(*args: str) -> subprocess.CompletedProcess[str]:
        return iolens("db", *args, "--db", db_url, env=env)

    r = db(
        "system", "lustre-prod", "--site", "HLRS", "--fs-type", "lustre", "--fs-version", "2.15.4",
        "--servers", "8", "--clients", "64", "--description", "scratch, 2 MDS",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "system lustre-prod (id 1)"
    empty = db("systems")
    assert empty.returncode == 0, empty.stderr
    assert "lustre-prod" in empty.stdout and "HLRS" in empty.stdout

    # Runs tagged with it count towards it and leave what was recorded alone; a new name is a new system.
    docs = tmp_path / "docs"
    docs.mkdir()
    write_doc(docs / "a.json", ior_document(2 * GIB))
    write_doc(docs / "b.json", ior_document(3 * GIB, started="2026-05-02T10:00:00Z"))
    assert db("import", str(docs), "--system", "lustre-prod").returncode == 0
    write_doc(tmp_path / "c.json", ior_document(1 * GIB, started="2026-05-03T10:00:00Z"))
    assert db("import", str(tmp_path / "c.json"), "--system", "laptop").returncode == 0

    # Fields given again are changed, the others kept.
    r = db("system", "lustre-prod", "--clients", "128", "--fs-version", "2.16.0")
    assert r.returncode == 0 and r.stdout.strip() == "system lustre-prod (id 1)"
    assert db("system", "lustre-prod", "--servers", "many").returncode == 2  # not a number: a usage error

    with Store.open(db_url, create=False) as store:
        rows = queries.list_systems(store.db)
    assert rows == [
        {"id": 2, "name": "laptop", "site": None, "fs_type": None, "fs_version": None, "servers": None,
         "clients": None, "description": None, "runs": 1, "profiles": 0},
        {"id": 1, "name": "lustre-prod", "site": "HLRS", "fs_type": "lustre", "fs_version": "2.16.0",
         "servers": 8, "clients": 128, "description": "scratch, 2 MDS", "runs": 2, "profiles": 0},
    ]  # fmt: skip
    listed = db("systems")
    assert listed.returncode == 0, listed.stderr
    lines = {line.split()[0]: line.split() for line in listed.stdout.splitlines() if line.strip()}
    prod = ["HLRS", "lustre", "2.16.0", "8", "128", "2", "0", "scratch,", "2", "MDS"]
    assert lines["lustre-prod"][1:] == prod
    assert lines["laptop"][1:] == ["-", "-", "-", "-", "1", "0"]


def test_python_api_returns_data_frames(db_url: str, tmp_path: Path) -> None:
    import pandas as pd

    from iolens.store import api

    _history(db_url, tmp_path, [g * GIB for g in (4, 4.1, 3.9, 4.0, 2.0)])
    store = api.open_store(db_url)
    try:
        runs = api.runs(store, system="lustre")
        assert isinstance(runs, pd.DataFrame) and len(runs) == 5
        assert str(runs["started_at"].dtype).startswith("datetime64")
        trend = api.trend(store, "write", system="lustre")
        assert list(trend["value"] / GIB) == [4, 4.1, 3.9, 4.0, 2.0]
        reg = api.regressions(store)
        assert reg.loc[reg["phase"] == "write", "regression"].item() is True
        cmp = api.compare(store, [1, 5])
        assert cmp.loc[(cmp["phase"] == "write") & (cmp["run_id"] == 5), "ratio"].item() == pytest.approx(0.5)
        assert len(api.phases(store, [1, 2])) == 4
        assert api.samples(store, 0, 1e12).empty
    finally:
        store.close()


def test_python_api_says_what_differed_between_compared_runs(db_url: str, tmp_path: Path) -> None:
    from iolens.store import api

    _history(db_url, tmp_path, [1 * GIB, 2 * GIB])  # runs 1, 2: lustre, 1 MiB transfers
    _history(db_url, tmp_path, [1.5 * GIB], system="other", transfer=4096)  # run 3
    store = api.open_store(db_url)
    try:
        diff = api.compare_differences(store, [1, 3])
        assert list(diff.columns) == [1, 3]
        assert diff.loc[("run", "system")].tolist() == ["lustre", "other"]
        assert diff.loc[("config", "transfer-size")].tolist() == [1048576, 4096]
        assert set(diff.index.get_level_values("what")) == {"run", "config"}
        assert len(diff) == 2  # nothing else differed
        same = api.compare_differences(store, [1, 2])  # only the values differ, not fields nor config
        assert same.empty and list(same.columns) == [1, 2]
    finally:
        store.close()
