"""The Slurm site integration run as Slurm runs it: `iolens site install`, the TaskProlog before a real MPI
job's tasks, the Epilog after it, on SQLite and PostgreSQL; opting out; and the failures that must never
touch the job (a database that is down or hangs, a log directory that cannot be written)."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

from iolens.store import Store, queries, sched_jobs

from .db_helpers import db_url, pg_server  # noqa: F401 - fixtures
from .site_helpers import HOST, epilog, epilog_log, install, program, run_job, slurm_env, task_prolog


def test_install_writes_the_scripts_settings_and_spool_and_check_finds_them(
    iolens_bin: list[str], tmp_path: Path
) -> None:
    site = install(iolens_bin, tmp_path, str(tmp_path / "db.sqlite"), "--off-partitions", "debug,short")
    assert stat.S_IMODE(site.conf.stat().st_mode) == 0o600  # it may hold the database's password
    assert stat.S_IMODE(site.spool.stat().st_mode) == 0o1733
    for name in ("iolens-task-prolog.sh", "iolens-epilog.sh"):
        assert os.access(site.etc / name, os.X_OK)
    r = site.run("site", "check", "--config", str(site.conf))
    assert f"ok: {site.etc / 'iolens-epilog.sh'}" in r.stdout
    assert "ok: database opens, schema up to date" in r.stdout
    (site.etc / "iolens-epilog.sh").write_text("#!/bin/sh\nexit 1\n")
    r = site.run("site", "check", "--config", str(site.conf))
    assert r.returncode == 1 and "iolens-epilog.sh: differs" in r.stdout


def test_install_refuses_a_relative_log_dir_naming_the_option(iolens_bin: list[str], tmp_path: Path) -> None:
    r = subprocess.run([*iolens_bin, "site", "install", "--slurm", "--log-dir", "logs", "--db", "x.db",
                        "--dir", str(tmp_path / "etc")], capture_output=True, text=True, cwd=tmp_path,
                       check=False)  # fmt: skip
    assert r.returncode == 2 and "--log-dir logs" in r.stderr
    assert not (tmp_path / "etc").exists() and not (tmp_path / "x.db").exists()


def test_task_prolog_turns_profiling_on_and_every_way_off(iolens_bin: list[str], tmp_path: Path) -> None:
    site = install(iolens_bin, tmp_path, str(tmp_path / "db.sqlite"), "--off-partitions", "debug")
    base = {"PATH": os.environ["PATH"], **slurm_env("77")}
    sets, _ = task_prolog(site, {**base, "LD_PRELOAD": "/opt/other.so"})
    lib = sets["LD_PRELOAD"]
    assert lib is not None and lib.endswith("libiolens-profile.so:/opt/other.so")
    assert sets["IOLENS_PROFILE_DIR"] == str(site.spool / "77") and sets["IOLENS_LOG_DIR"] is None
    assert (site.spool / "77").is_dir()
    mine = lib.split(":")[0]
    # off for the job: nothing said, no directory; a step that inherited the runtime gets it taken out
    for env in ({**base, "SLURM_JOB_ID": "78", "IOLENS_PROFILE": "off"},
                {**base, "SLURM_JOB_ID": "78", "SLURM_JOB_PARTITION": "debug"}):  # fmt: skip
        assert task_prolog(site, env) == ({}, "")
        inherited = {**env, "LD_PRELOAD": f"/a.so:{mine}:/b.so"}
        assert task_prolog(site, inherited)[0] == {"LD_PRELOAD": "/a.so:/b.so"}
    assert not (site.spool / "78").exists()
    # a log directory that cannot be made: off, the task runs as it would
    site.spool.rmdir() if not any(site.spool.iterdir()) else None
    (site.spool / "77").rmdir()
    site.spool.rmdir()
    site.spool.write_text("not a directory")
    assert task_prolog(site, {**base, "SLURM_JOB_ID": "79"}) == ({}, "")


def test_a_profiled_job_is_stored_with_its_facts_and_its_raw_logs_removed(
    iolens_bin: list[str],
    mpi_env: dict[str, str],
    tmp_path: Path,
    db_url: str,  # noqa: F811
) -> None:
    site = install(iolens_bin, tmp_path, db_url, "--system", "lustre-prod")
    prog = program(tmp_path)
    env = slurm_env("5001")
    job = run_job(site, prog, mpi_env, env, tmp_path / "out", files=20, size=8192, status=3)
    assert job.returncode == 3, job.stderr  # the job's own status
    assert sorted(job.stdout.splitlines()) == ["rank 0 wrote 163840 bytes", "rank 1 wrote 163840 bytes"]
    assert any(p.suffix == ".iolj" for p in (site.spool / "5001").iterdir())
    seconds, status = epilog(site, env)
    assert status == 0 and seconds < 7, epilog_log(site)
    assert "job 5001: stored: profile:" in epilog_log(site)
    assert not (site.spool / "5001").exists()  # removed after the commit
    with Store.open(db_url, create=False) as store:
        row = sched_jobs.get_job(store.db, "testcluster:5001")
        assert (row["user_name"], row["uid"], row["account"], row["partition_name"], row["source"]) == (
            "root",
            os.getuid(),
            "proj1",
            "batch",
            "epilog",
        )
        assert (row["job_ref"], row["nodes"], row["tasks"], row["node_list"]) == ("5001", 1, 2, HOST)
        assert row["exit_code"] == 0 and row["ended_at"] is not None
        ids = sched_jobs.job_profile_ids(store.db, "testcluster", "5001", None)
        assert len(ids) == 1
        prof = queries.get_profile(store.db, ids[0])
        assert prof["job_id"] == "5001" and prof["system"] == "lustre-prod"
        files = queries.profile_files(store.db, ids[0], "path")
        mine = [f for f in files if f["path"].startswith(str(tmp_path / "out"))]
        assert len(mine) == 40 and sum(f["bytes_written"] for f in mine) == 2 * 20 * 8192
    r = site.run("db", "show", "job:5001", "--db", db_url)
    assert r.returncode == 0, r.stderr
    assert "job 5001 (id 5001) on cluster testcluster" in r.stdout and f"profile:{ids[0]}" in r.stdout


def test_only_the_first_node_stores_and_it_waits_for_the_others(
    iolens_bin: list[str], mpi_env: dict[str, str], tmp_path: Path
) -> None:
    site = install(iolens_bin, tmp_path, str(tmp_path / "db.sqlite"))
    prog = program(tmp_path)
    env = slurm_env("6001", nodes="nodea,nodeb", node="nodea")
    assert run_job(site, prog, mpi_env, env, tmp_path / "out").returncode == 0
    seconds, _ = epilog(site, {**env, "SLURMD_NODENAME": "nodeb"})
    assert "job 6001: not first node" in epilog_log(site)
    assert (site.spool / "6001" / ".iolens-ended.nodeb").exists()
    with Store.open(site.db, create=False) as store:
        assert queries.counts(store.db)["profiles"] == 0
    seconds, _ = epilog(site, env)
    assert seconds < 2.0  # nodeb has marked its end: no waiting
    assert "job 6001: stored: profile:1" in epilog_log(site)


def test_a_node_that_is_not_the_first_only_marks_its_end_without_python(
    iolens_bin: list[str], tmp_path: Path
) -> None:
    site = install(iolens_bin, tmp_path, str(tmp_path / "db.sqlite"))
    conf = tmp_path / "slurm.conf"  # what a node has: enough for scontrol to expand a node list
    conf.write_text("ClusterName=t\nSlurmctldHost=localhost\nNodeName=node[1-2]\n")
    (site.spool / "6101").mkdir()
    env = slurm_env("6101", nodes="node[1-2]", node="node2", SLURM_CONF=str(conf))
    if subprocess.run(["scontrol", "show", "hostnames", "n[1-2]"], env=env, capture_output=True,
                      check=False).returncode != 0:  # fmt: skip
        pytest.skip("scontrol cannot expand a node list here")
    seconds, status = epilog(site, env)
    assert status == 0 and (site.spool / "6101" / ".iolens-ended.node2").exists()
    assert epilog_log(site) == ""  # iolens was not run


def test_opting_out_records_nothing(iolens_bin: list[str], mpi_env: dict[str, str], tmp_path: Path) -> None:
    site = install(iolens_bin, tmp_path, str(tmp_path / "db.sqlite"))
    db_before = (tmp_path / "db.sqlite").stat()
    prog = program(tmp_path)
    env = slurm_env("7001", IOLENS_PROFILE="off")
    job = run_job(site, prog, mpi_env, env, tmp_path / "out")
    assert job.returncode == 0 and "rank 1 wrote" in job.stdout
    seconds, status = epilog(site, env)
    assert status == 0 and seconds < 1.0  # one directory test, no Python
    assert list(site.spool.iterdir()) == [] and epilog_log(site) == ""
    assert (tmp_path / "db.sqlite").stat().st_mtime == db_before.st_mtime
    with Store.open(str(tmp_path / "db.sqlite"), create=False) as store:
        assert queries.counts(store.db)["profiles"] == 0
        assert sched_jobs.find_jobs(store.db, "7001") == []


def _refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_database_that_is_down_leaves_the_job_alone_and_sync_stores_it_later(
    iolens_bin: list[str], mpi_env: dict[str, str], tmp_path: Path
) -> None:
    down = f"postgresql://iolens@127.0.0.1:{_refused_port()}/nothing"
    site = install(iolens_bin, tmp_path, str(tmp_path / "db.sqlite"))
    site.set("db", down)
    prog = program(tmp_path)
    env = slurm_env("8001")
    plain = run_job(site, prog, mpi_env, {**env, "IOLENS_PROFILE": "off"}, tmp_path / "plain", status=5)
    job = run_job(site, prog, mpi_env, env, tmp_path / "out", status=5)
    assert job.returncode == plain.returncode == 5
    assert sorted(job.stdout.splitlines()) == sorted(plain.stdout.splitlines())
    seconds, status = epilog(site, env)
    assert status == 0 and seconds < 7
    said = epilog_log(site)
    assert "job 8001: failed" in said or "job 8001: deferred" in said, said
    kept = sorted(p.name for p in (site.spool / "8001").iterdir())
    assert any(n.endswith(".iolj") for n in kept) and ".iolens-job.json" in kept  # nothing lost
    site.set("db", str(tmp_path / "db.sqlite"))
    r = site.run("site", "sync", "--config", str(site.conf), "--no-sacct", "--min-age", "0")
    assert r.returncode == 0 and "8001: stored: profile:1" in r.stdout, r.stdout + r.stderr
    assert not (site.spool / "8001").exists()
    with Store.open(str(tmp_path / "db.sqlite"), create=False) as store:
        assert sched_jobs.job_profile_ids(store.db, "testcluster", "8001", None) == [1]


def test_a_database_that_hangs_cannot_hold_the_epilog_past_its_limit(
    iolens_bin: list[str], mpi_env: dict[str, str], tmp_path: Path
) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        site = install(iolens_bin, tmp_path, str(tmp_path / "db.sqlite"), "--epilog-timeout", "2")
        site.set("db", f"postgresql://iolens@127.0.0.1:{silent.getsockname()[1]}/x")
        site.set("background_timeout_s", "3")
        prog = program(tmp_path)
        env = slurm_env("9001")
        assert run_job(site, prog, mpi_env, env, tmp_path / "out").returncode == 0
        seconds, status = epilog(site, env)
        assert status == 0 and seconds < 2 + 1.5, (seconds, epilog_log(site))
        assert "job 9001: background: still storing" in epilog_log(site)
        time.sleep(4)  # the background worker's own limit (3 s) ends it; the logs stay for sync
    assert any(p.suffix == ".iolj" for p in (site.spool / "9001").iterdir())


def test_a_store_that_outlasts_the_limit_finishes_in_the_background(
    iolens_bin: list[str], mpi_env: dict[str, str], tmp_path: Path
) -> None:
    import sqlite3

    site = install(iolens_bin, tmp_path, str(tmp_path / "db.sqlite"), "--epilog-timeout", "2")
    prog = program(tmp_path)
    env = slurm_env("9101")
    assert run_job(site, prog, mpi_env, env, tmp_path / "out").returncode == 0
    holder = sqlite3.connect(str(tmp_path / "db.sqlite"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the database for 4 s
    try:
        seconds, status = epilog(site, env)
        assert status == 0 and seconds < 3.5 and "job 9101: background" in epilog_log(site)
        time.sleep(2)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    deadline = time.monotonic() + 30
    while (site.spool / "9101").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "job 9101: stored in the background: profile:1" in epilog_log(site)
    assert not (site.spool / "9101").exists()


def test_a_log_dir_that_cannot_be_written_leaves_the_job_alone(
    iolens_bin: list[str], mpi_env: dict[str, str], tmp_path: Path
) -> None:
    site = install(iolens_bin, tmp_path, str(tmp_path / "db.sqlite"))
    prog = program(tmp_path)
    plain = run_job(
        site, prog, mpi_env, {**slurm_env("9201"), "IOLENS_PROFILE": "off"}, tmp_path / "p", status=4
    )
    site.spool.rmdir()
    site.spool.write_text("")  # the log directory's file system lost it (root writes through modes)
    env = slurm_env("9202")
    assert task_prolog(site, {"PATH": os.environ["PATH"], **env}) == ({}, "")
    job = run_job(site, prog, mpi_env, env, tmp_path / "out", status=4)
    assert job.returncode == plain.returncode == 4
    assert sorted(job.stdout.splitlines()) == sorted(plain.stdout.splitlines())
    seconds, status = epilog(site, env)
    assert status == 0 and seconds < 1.0 and epilog_log(site) == ""


def test_the_epilog_reads_only_the_jobs_own_regular_files(
    iolens_bin: list[str], mpi_env: dict[str, str], tmp_path: Path
) -> None:
    site = install(iolens_bin, tmp_path, str(tmp_path / "db.sqlite"))
    prog = program(tmp_path)
    env = slurm_env("9301")
    assert run_job(site, prog, mpi_env, env, tmp_path / "out").returncode == 0
    other = next(p for p in (site.spool / "9301").iterdir() if p.suffix == ".iolj")
    bait = tmp_path / "elsewhere.iolj"  # a log the job's user could point at (not in its directory)
    bait.write_bytes(other.read_bytes())
    (site.spool / "9301" / "pointer.iolj").symlink_to(bait)
    os.mkfifo(site.spool / "9301" / "stuck.iolp")  # reading it would block
    seconds, status = epilog(site, env)
    assert status == 0 and "job 9301: stored: profile:1" in epilog_log(site), epilog_log(site)
    assert bait.exists()
    left = sorted(p.name for p in (site.spool / "9301").iterdir())
    assert left == ["pointer.iolj", "stuck.iolp"]  # not read, not removed
