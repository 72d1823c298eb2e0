"""Benchmark commands store their result when a database is configured (--db, IOLENS_DB, the config file),
tagged with the system; --no-store skips it; a store that fails says so and fails the command."""

from __future__ import annotations

import json
from pathlib import Path

from iolens.store import Store, queries

from .db_helpers import iolens, iolens_env


def _env(tmp_path: Path, engine: Path, **extra: str) -> dict[str, str]:
    return iolens_env({"IOLENS_BENCH": str(engine), **extra}, home=tmp_path)


def test_ior_run_is_stored_when_a_database_is_configured(
    engine: Path, tmpfs_dir: Path, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    args = [
        "ior",
        "-F",
        "-t",
        "64k",
        "-b",
        "1m",
        "-w",
        "-r",
        "--np",
        "2",
        "-o",
        str(tmpfs_dir / "f"),
        "--no-live",
    ]
    r = iolens(*args, "--db", str(db), "--system", "laptop", env=_env(tmp_path, engine))
    assert r.returncode == 0, r.stderr
    assert f"stored as run 1 in {db}" in r.stderr
    assert "Summary of all tests" in r.stdout  # the run's own report is shown as usual

    skipped = iolens(*args, "--db", str(db), "--no-store", env=_env(tmp_path, engine))
    assert skipped.returncode == 0 and "stored" not in skipped.stderr
    by_env = iolens(*args, env=_env(tmp_path, engine, IOLENS_DB=str(db), IOLENS_SYSTEM="other"))
    assert by_env.returncode == 0 and "stored as run 2" in by_env.stderr

    with Store.open(str(db), create=False) as store:
        runs = queries.list_runs(store.db)
        first = queries.get_run(store.db, 1, document=True)
    assert [(r["id"], r["system"], r["tool"], r["ranks"]) for r in runs] == [
        (2, "other", "ior", 2),
        (1, "laptop", "ior", 2),
    ]
    doc = json.loads(first["document"])
    assert doc["workload"] == "ior" and "--db" not in doc["command"]
    phases = {p["name"]: p for p in first["phases"]}
    assert phases["write"]["bytes"] == 2 * 1024 * 1024 and phases["write"]["ops"] == 32
    assert phases["write"]["value"] == doc["phases"][0]["bw_bytes_per_s"]
    assert phases["read"]["p50_ns"] == doc["phases"][1]["latency_ns"]["p50"] > 0


def test_mdtest_run_without_a_database_stores_nothing(engine: Path, tmpfs_dir: Path, tmp_path: Path) -> None:
    r = iolens("mdtest", "-n", "20", "-F", "-d", str(tmpfs_dir), "--no-live", env=_env(tmp_path, engine))
    assert r.returncode == 0, r.stderr
    assert "stored" not in r.stderr
    assert not (tmp_path / ".local" / "share" / "iolens").exists()


def test_a_store_that_fails_is_said_and_fails_the_command(
    engine: Path, tmpfs_dir: Path, tmp_path: Path
) -> None:
    r = iolens(
        "find", str(tmpfs_dir), "--db", str(tmp_path), "--no-live", env=_env(tmp_path, engine)
    )  # a directory is no database
    assert r.returncode == 1
    assert "the result was not stored" in r.stderr and "is a directory" in r.stderr
    assert "scanned" in r.stdout.lower()


PROGRAM = """
import os, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from tests.profile_logs import FileSpec, LogSpec, MountSpec, write_log
write_log(Path(os.environ["IOLENS_PROFILE_DIR"]),
          LogSpec(pid=os.getpid(), job_id=os.environ["IOLENS_JOB_ID"], cmdline=sys.argv,
                  files=[FileSpec(1, "/lus/out", 1)], mounts=[MountSpec(1, "/lus", "lustre")],
                  file_recs=[(0, 1, {{"POSIX_WRITES": 3, "POSIX_BYTES_WRITTEN": 3 * 1048576}})]))
sys.exit(3)
"""


def test_profile_run_stores_its_job_and_keeps_the_programs_status(tmp_path: Path) -> None:
    """A stand-in program writes its log where the runtime would (the runtime itself is another test's)."""
    import sys

    from .conftest import REPO

    lib = tmp_path / "libiolens-profile.so"
    lib.write_text("a stand-in: the loader says it is not a library and goes on\n")
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.format(repo=str(REPO)))
    db = tmp_path / "p.db"
    env = iolens_env({"IOLENS_PROFILE_LIB": str(lib)}, home=tmp_path)
    env.pop("IOLENS_JOB_ID", None)
    args = ["profile", "--db", str(db), "--system", "hpc", "--out", str(tmp_path / "logs"), "--no-report"]
    r = iolens(*args, "--", sys.executable, str(prog), "--db", "the-programs-own", env=env)
    assert r.returncode == 3, r.stderr
    assert f"stored as profile:1 in {db}" in r.stderr
    with Store.open(str(db), create=False) as store:
        jobs = queries.jobs(store.db)
    assert [(j["system"], j["bytes_written"], j["files"]) for j in jobs] == [("hpc", 3 * 1048576, 1)]
    assert jobs[0]["command"].endswith("prog.py --db the-programs-own")  # the program's args untouched


def test_monitor_stores_its_samples(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    out = tmp_path / "m.jsonl"
    r = iolens(
        "monitor", "--interval", "0.1", "--duration", "0.5", "--sources", "loadavg,stat", "--out", str(out),
        "--db", str(db), env=iolens_env(home=tmp_path),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    samples = [rec for rec in records if rec.get("type") == "sample"]
    with Store.open(str(db), create=False) as store:
        load1 = queries.samples(store.db, 0, 1e12, metrics=["load1"])
        stored = queries.counts(store.db)["samples"]
    assert [row[5] for row in load1] == [rec["data"]["loadavg"]["load1"] for rec in samples]
    assert f"stored {stored} samples in {db}" in r.stderr
