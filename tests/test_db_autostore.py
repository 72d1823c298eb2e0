"""Benchmark commands store their result when a database is configured (--db, IOLENS_DB, the config file),
tagged with the system; --no-store skips it; a store that fails says so and fails the command. Every case
that stores runs on both backends (a SQLite file, the tests' PostgreSQL server): real runs of ior, fio,
mdtest, find and io500 (tiny sizes on a tmpfs), a profile, and the monitor's samples (PostgreSQL: COPY)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from iolens import results
from iolens.io500.results_files import read_result
from iolens.io500.spec import runnable_phases
from iolens.store import Store, queries

from .db_helpers import PgServer, iolens, iolens_env, tiny_io500


def _env(tmp_path: Path, engine: Path, **extra: str) -> dict[str, str]:
    return iolens_env({"IOLENS_BENCH": str(engine), **extra}, home=tmp_path)


def _runs(url: str) -> list[tuple[Any, ...]]:
    with Store.open(url, create=False) as store:
        return [(r["id"], r["system"], r["tool"], r["ranks"]) for r in queries.list_runs(store.db)]


def _run(url: str, run_id: int) -> tuple[dict[str, Any], results.Document]:
    """A stored run (with its phase rows) and its stored document, parsed."""
    with Store.open(url, create=False) as store:
        run = queries.get_run(store.db, run_id, document=True)
    return run, results.parse(json.loads(run["document"]))


def _stores_nothing_with_no_store(url: str, args: list[str], env: dict[str, str]) -> None:
    before = _runs(url)
    r = iolens(*args, "--db", url, "--no-store", env=env)
    assert r.returncode == 0, r.stderr
    assert "stored" not in r.stderr
    assert _runs(url) == before


def test_ior_run_is_stored_when_a_database_is_configured(
    engine: Path, tmpfs_dir: Path, tmp_path: Path, db_url: str
) -> None:
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
    r = iolens(*args, "--db", db_url, "--system", "laptop", env=_env(tmp_path, engine))
    assert r.returncode == 0, r.stderr
    assert f"stored as run 1 in {db_url}" in r.stderr
    assert "Summary of all tests" in r.stdout  # the run's own report is shown as usual

    _stores_nothing_with_no_store(db_url, args, _env(tmp_path, engine))
    by_env = iolens(*args, env=_env(tmp_path, engine, IOLENS_DB=db_url, IOLENS_SYSTEM="other"))
    assert by_env.returncode == 0 and "stored as run 2" in by_env.stderr

    assert _runs(db_url) == [(2, "other", "ior", 2), (1, "laptop", "ior", 2)]
    first, doc = _run(db_url, 1)
    assert doc.workload == "ior" and "--db" not in doc.raw["command"]
    phases = {p["name"]: p for p in first["phases"]}
    assert phases["write"]["bytes"] == 2 * 1024 * 1024 and phases["write"]["ops"] == 32
    assert phases["write"]["value"] == doc.raw["phases"][0]["bw_bytes_per_s"]
    assert phases["read"]["p50_ns"] == doc.raw["phases"][1]["latency_ns"]["p50"] > 0


FIO_JOBS = """\
[global]
bs=4k

[seq]
ioengine=psync
rw=write
size=256k
directory={directory}

[nul]
ioengine=null
rw=randrw
size=1m
"""


def test_fio_run_is_stored_with_a_row_per_job_and_direction(
    engine: Path, tmpfs_dir: Path, tmp_path: Path, db_url: str
) -> None:
    jobs = tmp_path / "jobs.fio"
    jobs.write_text(FIO_JOBS.format(directory=tmpfs_dir))
    args = ["fio", str(jobs), "--no-live"]
    r = iolens(*args, "--db", db_url, "--system", "nvme", env=_env(tmp_path, engine))
    assert r.returncode == 0, r.stderr
    assert f"stored as run 1 in {db_url}" in r.stderr

    assert _runs(db_url) == [(1, "nvme", "fio", 1)]
    run, doc = _run(db_url, 1)
    assert isinstance(doc, results.FioDocument) and run["status"] == "ok" and run["valid"]
    rows = {p["name"]: p for p in run["phases"]}
    assert sorted(rows) == ["nul:read", "nul:write", "seq:write"]  # no row for a direction that moved nothing
    seq = rows["seq:write"]
    assert (seq["bytes"], seq["ops"], seq["unit"]) == (256 * 1024, 64, "B/s")
    nul_bytes = rows["nul:read"]["bytes"] + rows["nul:write"]["bytes"]
    assert nul_bytes == 1024 * 1024 and rows["nul:read"]["ops"] + rows["nul:write"]["ops"] == 256
    for job in doc.jobs:
        for direction in job.directions:
            d = job.direction(direction)
            row = rows[f"{job.name}:{direction}"]
            assert row["value"] == d.bw_bytes_per_s > 0 and row["p50_ns"] == d.lat_ns.p50
    assert run["file_system"] == "tmpfs"

    _stores_nothing_with_no_store(db_url, args, _env(tmp_path, engine))


def test_mdtest_run_is_stored_with_a_row_per_phase(
    engine: Path, tmpfs_dir: Path, tmp_path: Path, db_url: str
) -> None:
    args = ["mdtest", "-n", "10", "-F", "--np", "2", "-d", str(tmpfs_dir / "md"), "--no-live"]
    r = iolens(*args, "--db", db_url, env=_env(tmp_path, engine, IOLENS_SYSTEM="meta"))
    assert r.returncode == 0, r.stderr
    assert f"stored as run 1 in {db_url}" in r.stderr

    assert _runs(db_url) == [(1, "meta", "mdtest", 2)]
    run, doc = _run(db_url, 1)
    assert isinstance(doc, results.MdtestDocument)
    names = [p["name"] for p in run["phases"]]
    assert names == ["tree-create", "file-create", "file-stat", "file-read", "file-remove", "tree-remove"]
    for row, phase in zip(run["phases"], doc.phases, strict=True):
        assert row["value"] == phase.rate_per_s > 0 and row["unit"] == "items/s"
        assert row["ops"] == phase.items
    assert {p["name"]: p["ops"] for p in run["phases"]}["file-create"] == 2 * 10  # both ranks' files

    _stores_nothing_with_no_store(db_url, args, _env(tmp_path, engine))


def test_find_run_is_stored_with_its_entries_scanned(
    engine: Path, tmpfs_dir: Path, tmp_path: Path, db_url: str
) -> None:
    root = tmpfs_dir / "tree"
    for d in range(3):
        (root / f"d{d}").mkdir(parents=True)
        for f in range(10):
            (root / f"d{d}" / f"f{f:02d}").write_bytes(b"x" * f)
    args = ["find", str(root), "-name", "*1*", "--no-live"]
    r = iolens(*args, "--db", db_url, "--system", "scratch", env=_env(tmp_path, engine))
    assert r.returncode == 0, r.stderr
    assert f"stored as run 1 in {db_url}" in r.stderr

    assert [row[:3] for row in _runs(db_url)] == [(1, "scratch", "find")]
    run, doc = _run(db_url, 1)
    assert isinstance(doc, results.FindDocument) and doc.find is not None
    (row,) = run["phases"]
    scanned = 1 + 3 + 30  # the root, its directories, their files
    assert (doc.find.scanned, doc.find.matched) == (scanned, 3 + 1)  # f01 in each directory, and d1
    assert (row["name"], row["ops"], row["unit"], row["valid"]) == ("find", scanned, "entries/s", True)
    assert row["value"] == doc.find.rate_per_s > 0
    assert run["file_system"] == "tmpfs" and run["valid"]

    _stores_nothing_with_no_store(db_url, args, _env(tmp_path, engine))


def test_io500_run_is_stored_as_one_run_with_every_phase_and_the_scores(
    engine: Path, tmpfs_dir: Path, tmp_path: Path, db_url: str
) -> None:
    env = _env(tmp_path, engine)
    r, result_dir = tiny_io500(tmpfs_dir, "--db", db_url, "--system", "lustre", env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"stored as run 1 in {db_url}" in r.stderr

    assert _runs(db_url) == [(1, "lustre", "io500", 2)]
    run, doc = _run(db_url, 1)
    assert isinstance(doc, results.Io500Document) and doc.io500 is not None
    assert doc.raw == json.loads((result_dir / "iolens-io500.json").read_text())
    standard = [p.name for p in runnable_phases("standard")]
    phases = [p for p in run["phases"] if p["kind"] == "phase"]
    assert [p["name"] for p in phases] == standard
    app = read_result(result_dir / "result.txt")
    printed = app.phase_scores()
    for row in phases:
        if row["name"] != "timestamp":
            assert row["value"] == pytest.approx(printed[row["name"]], abs=1e-6), row["name"]
            assert row["value"] > 0 and row["unit"] in ("GiB/s", "kIOPS")
    by_name = {p["name"]: p for p in phases}
    assert by_name["ior-easy-write"]["bytes"] == 2 * 1024 * 1024  # 1 MiB per rank, both ranks
    scores = {p["name"]: p["value"] for p in run["phases"] if p["kind"] == "score"}
    stated = app.score_values()
    assert stated is not None
    assert scores == {
        "bw": pytest.approx(stated[0].bw, abs=1e-6),
        "md": pytest.approx(stated[0].md, abs=1e-6),
        "score": pytest.approx(stated[0].score, abs=1e-6),
    }
    assert run["score"] == scores["score"] and run["valid"] is False  # a 1 s stonewall is no valid run
    assert run["config_hash"] == doc.config["config_hash"]

    # The result directory is the same run: importing it stores nothing new.
    again = iolens("db", "import", str(result_dir), "--db", db_url, env=env)
    assert again.returncode == 0 and "already stored as run 1" in again.stdout + again.stderr
    r2, _ = tiny_io500(tmpfs_dir, "--db", db_url, "--no-store", env=env)
    assert r2.returncode == 0 and "stored" not in r2.stderr
    assert len(_runs(db_url)) == 1


def test_mdtest_run_without_a_database_stores_nothing(engine: Path, tmpfs_dir: Path, tmp_path: Path) -> None:
    r = iolens("mdtest", "-n", "20", "-F", "-d", str(tmpfs_dir), "--no-live", env=_env(tmp_path, engine))
    assert r.returncode == 0, r.stderr
    assert "stored" not in r.stderr
    assert not (tmp_path / ".local" / "share" / "iolens").exists()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_database_that_cannot_take_the_result_is_refused_before_the_run(
    engine: Path, tmpfs_dir: Path, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "sqlite":
        url, why = str(tmp_path), "is a directory"  # a directory is no database
    else:
        server: PgServer = request.getfixturevalue("pg_server")
        url, why = server.url("no_such_database"), 'database "no_such_database" does not exist'
    r = iolens("find", str(tmpfs_dir), "--db", url, "--no-live", env=_env(tmp_path, engine))
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("iolens: error: --db")
    assert why in r.stderr and "nothing was run" in r.stderr


def test_config_file_names_database_and_system_and_store_no_turns_automatic_storing_off(
    engine: Path, tmpfs_dir: Path, tmp_path: Path, db_url: str
) -> None:
    tree = tmpfs_dir / "tree"
    (tree / "d").mkdir(parents=True)
    (tree / "d" / "f").write_bytes(b"x")
    args = ["find", str(tree), "--no-live"]
    ini = tmp_path / ".config" / "iolens" / "iolens.ini"
    ini.parent.mkdir(parents=True)
    ini.write_text(f"[store]\ndb = {db_url}\nsystem = from-config\n")
    env = _env(tmp_path, engine)

    r = iolens(*args, env=env)  # no option: the config file's database and system
    assert r.returncode == 0, r.stderr
    assert f"stored as run 1 in {db_url}" in r.stderr
    r = iolens(*args, env=_env(tmp_path, engine, IOLENS_SYSTEM="from-env"))  # the environment beats it
    assert f"stored as run 2 in {db_url}" in r.stderr
    r = iolens(*args, "--system", "from-option", env=_env(tmp_path, engine, IOLENS_SYSTEM="from-env"))
    assert f"stored as run 3 in {db_url}" in r.stderr
    assert sorted((run[0], run[1]) for run in _runs(db_url)) == [
        (1, "from-config"),
        (2, "from-env"),
        (3, "from-option"),
    ]

    # store = no: nothing is stored automatically, though the file names a database...
    ini.write_text(f"[store]\ndb = {db_url}\nsystem = from-config\nstore = no\n")
    r = iolens(*args, env=env)
    assert r.returncode == 0, r.stderr
    assert "stored" not in r.stderr and "scanned" in r.stdout.lower()
    assert len(_runs(db_url)) == 3
    # ... unless the command line names one; the file's system still tags it.
    r = iolens(*args, "--db", db_url, env=env)
    assert f"stored as run 4 in {db_url}" in r.stderr
    assert _runs(db_url)[0][:2] == (4, "from-config")

    # A value the file cannot mean is a usage error, said before the command runs.
    ini.write_text(f"[store]\ndb = {db_url}\nstore = sometimes\n")
    r = iolens(*args, env=env)
    assert r.returncode == 2
    assert f"{ini}: [store] store = 'sometimes': expected yes or no" in r.stderr
    assert r.stdout == ""  # nothing ran
    assert len(_runs(db_url)) == 4


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


def test_profile_run_stores_its_job_and_keeps_the_programs_status(tmp_path: Path, db_url: str) -> None:
    """A stand-in program writes its log where the runtime would (the runtime itself is another test's)."""
    import sys

    from .conftest import REPO

    lib = tmp_path / "libiolens-profile.so"
    lib.write_text("a stand-in: the loader says it is not a library and goes on\n")
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM.format(repo=str(REPO)))
    env = iolens_env({"IOLENS_PROFILE_LIB": str(lib)}, home=tmp_path)
    env.pop("IOLENS_JOB_ID", None)
    args = ["profile", "--db", db_url, "--system", "hpc", "--out", str(tmp_path / "logs"), "--no-report"]
    r = iolens(*args, "--", sys.executable, str(prog), "--db", "the-programs-own", env=env)
    assert r.returncode == 3, r.stderr
    assert f"stored as profile:1 in {db_url}" in r.stderr
    with Store.open(db_url, create=False) as store:
        jobs = queries.jobs(store.db)
    assert [(j["system"], j["bytes_written"], j["files"]) for j in jobs] == [("hpc", 3 * 1048576, 1)]
    assert jobs[0]["command"].endswith("prog.py --db the-programs-own")  # the program's args untouched


def test_monitor_stores_its_samples(tmp_path: Path, db_url: str) -> None:
    out = tmp_path / "m.jsonl"
    r = iolens(
        "monitor", "--interval", "0.1", "--duration", "0.5", "--sources", "loadavg,stat", "--out", str(out),
        "--db", db_url, env=iolens_env(home=tmp_path),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    samples = [rec for rec in records if rec.get("type") == "sample"]
    assert len(samples) >= 3
    with Store.open(db_url, create=False) as store:
        load1 = queries.samples(store.db, 0, 1e12, metrics=["load1"])
        stored = queries.counts(store.db)["samples"]
    assert [row[0] for row in load1] == pytest.approx([rec["time"] for rec in samples])
    assert [row[5] for row in load1] == [rec["data"]["loadavg"]["load1"] for rec in samples]
    assert stored > len(samples)  # the stat source's counters and rates too
    assert f"stored {stored} samples in {db_url}" in r.stderr


def test_profile_report_takes_the_store_options_and_stores_the_jobs_it_reports(
    tmp_path: Path, db_url: str
) -> None:
    from .test_db_imports import profile_job

    logs = profile_job(tmp_path / "logs")
    env = iolens_env(home=tmp_path)
    r = iolens("profile", "report", str(logs), "--db", db_url, "--system", "hpc", env=env)
    assert r.returncode == 0, r.stderr
    assert "iolens profile: job job-77" in r.stdout  # the report, as without a database
    assert f"stored as profile:1 in {db_url}" in r.stderr
    # The options before `report` too; --json keeps standard output JSON.
    again = iolens("profile", "--db", db_url, "report", str(logs), "--json", env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["jobs"][0]["job_id"] == "job-77"
    assert f"already stored as profile:1 in {db_url}" in again.stderr
    skipped = iolens("profile", "report", str(logs), "--db", db_url, "--no-store", env=env)
    assert skipped.returncode == 0 and "stored" not in skipped.stderr
    with Store.open(db_url, create=False) as store:
        jobs = queries.jobs(store.db)
    assert [(j["job_id"], j["system"]) for j in jobs] == [("job-77", "hpc")]


@pytest.mark.parametrize("command", ["ior", "mdtest", "find", "fio", "io500", "profile", "monitor"])
def test_every_storing_command_help_names_the_store_options(command: str, tmp_path: Path) -> None:
    r = iolens(command, "--help", env=iolens_env(home=tmp_path))
    assert r.returncode == 0, r.stderr
    head = r.stdout.split(f"{command} options (from", 1)[0]  # ours, not the engine's
    for option in ("--db PATH_OR_URL", "--system NAME", "--no-store"):
        assert option in head


def test_monitor_parse_refuses_the_store_options_it_cannot_honour(tmp_path: Path) -> None:
    stats = tmp_path / "stats"
    stats.write_text("snapshot_time 1700000000.000000000 secs.nsecs\n")
    r = iolens("monitor", "parse", str(stats), "--db", str(tmp_path / "x.db"), env=iolens_env(home=tmp_path))
    assert r.returncode == 2
    assert "monitor parse: stores nothing" in r.stderr and "iolens db import FILE" in r.stderr
    assert not (tmp_path / "x.db").exists()


def test_config_file_that_cannot_be_read_is_refused_when_named_and_passed_over_at_the_default_place(
    engine: Path,
) -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux) to run iolens as another user")
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    root = Path(tempfile.mkdtemp(prefix="iolens-setpriv-"))
    try:
        root.chmod(0o755)
        tree = root / "tree"
        tree.mkdir(mode=0o755)
        home = root / "home"  # root's, 0700: nobody may not look inside
        ini = home / ".config" / "iolens" / "iolens.ini"
        ini.parent.mkdir(parents=True)
        ini.write_text("[store]\nstore = sometimes\n")  # a value that would be refused, were it read
        home.chmod(0o700)
        env = iolens_env({"IOLENS_BENCH": str(engine), "HOME": str(home), "XDG_CONFIG_HOME": ""})
        cmd = [*as_nobody, sys.executable, "-m", "iolens", "find", str(tree), "--no-live"]
        # The default file under a home this user may not enter: as if there were none, no traceback.
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr and "scanned" in r.stdout.lower()
        # A file $IOLENS_CONFIG names must be readable: a usage error naming it, before anything runs.
        named = {**env, "IOLENS_CONFIG": str(ini)}
        r = subprocess.run(cmd, env=named, capture_output=True, text=True, timeout=120, check=False)
        assert r.returncode == 2 and r.stdout == "", r.stderr
        assert f"IOLENS_CONFIG={ini}: permission denied" in r.stderr
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_config_file_that_is_not_utf8_is_refused_naming_it(engine: Path, tmp_path: Path) -> None:
    """Bytes that are not UTF-8: refused with the file's name, not a traceback (needs no other user)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    ini = tmp_path / "iolens.ini"
    ini.write_bytes(b"[store]\nsystem = caf\xe9\n")
    env = iolens_env({"IOLENS_BENCH": str(engine), "IOLENS_CONFIG": str(ini)}, home=tmp_path)
    r = iolens("find", str(tree), "--no-live", env=env)
    assert r.returncode == 2 and f"{ini}: not UTF-8 text" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "command",
    [["ior", "--help"], ["mdtest", "-h"], ["find", "--help"], ["fio", "--help"], ["io500", "--help"],
     ["profile", "--help"], ["profile", "report", "--help"], ["monitor", "--help"], ["db", "--help"]],
    ids=lambda c: " ".join(c),
)  # fmt: skip
def test_help_is_shown_even_with_a_broken_config_file(tmp_path: Path, command: list[str]) -> None:
    """Asking a command for its help reads no config file: a broken one is said when something would be
    stored, not in the way of the usage text."""
    ini = tmp_path / "iolens.ini"
    ini.write_text("[store\nsystem = x\n")
    env = iolens_env({"IOLENS_CONFIG": str(ini)}, home=tmp_path)
    r = iolens(*command, env=env)
    assert r.returncode == 0, r.stderr
    assert "usage" in r.stdout.lower() and "Traceback" not in r.stderr
    run = iolens("ior", "-t", "4k", "-b", "4k", "-w", "-o", str(tmp_path / "f"), env=env)
    assert run.returncode == 2 and str(ini) in run.stderr and not (tmp_path / "f").exists()
