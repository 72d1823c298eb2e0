"""`iolens site` on the real two-node Slurm cluster (tests/cluster): installed as a center installs it (its
TaskProlog and Epilog in slurm.conf, the log directory and a SQLite database where every node sees them),
then MPI jobs across both nodes under sbatch, with mpirun and with srun: each job stored once with its
profile and the facts its Epilog had, then completed by `iolens site sync` from sacct; a job that opts
out, one that fails, and one whose database does not answer."""

from __future__ import annotations

import fcntl
import pwd
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from iolens.store import Store, queries, sched_jobs
from tests.cluster.jobs import BatchJob, batch, cluster_env
from tests.cluster.slurm import CLUSTER_NAME, PARTITION, SlurmCluster
from tests.site_helpers import DATA, Site, epilog_log

TWO_BY_TWO = ["-N", "2", "--ntasks-per-node=2"]
FILES = 20  # per rank
FILE_BYTES = 4096
RANK_LINES = [f"rank {r} wrote {FILES * FILE_BYTES} bytes" for r in range(4)]


@dataclass
class ClusterSite(Site):
    """An installation (tests/site_helpers.Site) in the cluster's work directory, and the MPI program."""

    cluster: SlurmCluster
    program: Path

    def iolens_run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """iolens on the login host, with the cluster's SLURM_CONF (sync runs sacct)."""
        return self.cluster.run([*self.iolens, *args], timeout=timeout)

    def job(self, env: dict[str, str], launch: str, name: str, status: int = 0) -> BatchJob:
        """A batch job of 2 nodes x 2 ranks running the site's MPI program (under `mpirun` or `srun`)."""
        out = self.log_dir.parent / name
        out.mkdir()
        script = f"{launch} {self.program} {out} {FILES} {FILE_BYTES} {status}\n"
        return batch(self.cluster, script, TWO_BY_TWO, env, self.log_dir.parent / f"{name}.out")


@pytest.fixture(scope="module")
def site(slurm_cluster: SlurmCluster, iolens_bin: list[str]) -> Iterator[ClusterSite]:
    """iolens site installed into the cluster: settings, scripts, log directory and database in its work
    directory (every host sees it, as a parallel file system), slurm.conf's TaskProlog and Epilog set."""
    root = slurm_cluster.workdir / "site"
    root.mkdir()
    program = root / "site_ranks"
    r = subprocess.run(["mpicc", "-O1", "-o", str(program), str(DATA / "site_ranks.c")],
                       capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    s = ClusterSite(root / "etc", root / "logs", str(root / "iolens.db"), iolens_bin, slurm_cluster, program)
    r = s.iolens_run("site", "install", "--slurm", "--log-dir", str(s.log_dir), "--db", s.db,
                     "--dir", str(s.etc), "--system", "clusterfs")  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("TaskProlog=", "Epilog="))]
    assert len(lines) == 2, r.stdout
    slurm_cluster.reconfigure(lines)
    try:
        check = s.iolens_run("site", "check", "--config", str(s.conf))
        assert check.returncode == 0, check.stdout + check.stderr  # slurm.conf's lines found by scontrol
        yield s
    finally:
        slurm_cluster.reconfigure()


def stored(site: ClusterSite, job_id: str) -> tuple[dict[str, Any], list[int]]:
    """The job's row ({} if none) and the ids of the profiles linked to it."""
    with Store.open(site.db, create=False) as store:
        rows = sched_jobs.find_jobs(store.db, job_id, CLUSTER_NAME)
        assert len(rows) <= 1, rows  # one row per job, whoever wrote it
        return (rows or [{}])[0], sched_jobs.job_profile_ids(store.db, CLUSTER_NAME, job_id, None)


def profile_document(site: ClusterSite, profile_id: int) -> dict[str, Any]:
    with Store.open(site.db, create=False) as store:
        return queries.get_profile(store.db, profile_id)["document"]


def check_profile(site: ClusterSite, profile_id: int, job_id: str) -> None:
    """The profile of the whole job: its 4 ranks, 2 on each node, every file they wrote."""
    doc = profile_document(site, profile_id)
    assert doc["job_id"] == job_id
    assert (doc["summary"]["ranks"], doc["summary"]["hosts"]) == (4, 2)
    ranks = sorted((p["rank"], p["hostname"]) for p in doc["processes"] if p["exe"] == str(site.program))
    assert ranks == [(0, "node1"), (1, "node1"), (2, "node2"), (3, "node2")]
    assert sum(r["bytes_written"] for r in doc["ranks"]) >= 4 * FILES * FILE_BYTES


def wait_unlocked(lock: Path, timeout: float) -> None:
    """Until no worker holds the job directory's lock (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(lock) as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except FileNotFoundError:
            return
        except BlockingIOError:
            assert time.monotonic() < deadline, f"{lock} still held after {timeout:.0f} s"
            time.sleep(0.2)


def sync(site: ClusterSite, job_id: str, *extra: str) -> tuple[str, dict[str, Any]]:
    """`iolens site sync` until it has the job's sacct record (all it said, and the job's row). slurmdbd
    lists a job in a time window (what sync asks for) about a second after `sacct -j` shows its end (what
    batch() waited for): a periodic sync gets it on its next run, this one tries again (bounded)."""
    deadline = time.monotonic() + 20
    said = ""
    while True:
        r = site.iolens_run("site", "sync", "--config", str(site.conf), "--since", "1d", *extra)
        assert r.returncode == 0, r.stdout + r.stderr
        said += r.stdout
        row, _ = stored(site, job_id)
        if row.get("source") == "sacct":
            return said, row
        assert time.monotonic() < deadline, f"sacct's record of job {job_id} not stored: {said}"
        time.sleep(1)


def test_an_mpi_job_on_both_nodes_is_stored_once_with_its_facts_and_sync_completes_it(
    site: ClusterSite, mpi_env: dict[str, str]
) -> None:
    env = cluster_env(site.cluster, mpi_env)
    job = site.job(env, "mpirun", "mpirun-job")
    assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output + epilog_log(site)
    assert sorted(job.output.splitlines()) == RANK_LINES  # the job's output as without iolens
    # Only the first node stores; the other's Epilog marks its end and runs no Python (no line of its own).
    said = [ln for ln in epilog_log(site).splitlines() if f" job {job.job_id}: " in ln]
    assert len(said) == 1 and f"job {job.job_id}: stored: profile:" in said[0], epilog_log(site)
    assert not (site.spool / job.job_id).exists()  # raw logs removed once stored
    row, profiles = stored(site, job.job_id)
    assert (row["source"], row["user_name"], row["uid"], row["account"], row["partition_name"]) == (
        "epilog", "root", 0, "root", PARTITION,
    )  # fmt: skip
    assert (row["nodes"], row["tasks"], row["cpus"], row["node_list"]) == (2, 4, 4, "node[1-2]")
    assert (row["state"], row["exit_code"], row["exit_signal"]) == ("COMPLETED", 0, 0)
    assert row["started_at"] is not None and row["ended_at"] >= row["started_at"]
    assert len(profiles) == 1  # one profile for the job: the batch script, mpirun, orted and the ranks
    check_profile(site, profiles[0], job.job_id)

    said, row = sync(site, job.job_id)
    assert re.search(r"sacct since .*: \d+ jobs", said), said
    assert stored(site, job.job_id) == (row, profiles)  # the same row and profile, updated
    assert (row["source"], row["state"], row["exit_code"], row["nodes"]) == ("sacct", "COMPLETED", 0, 2)
    assert row["elapsed_s"] is not None and row["elapsed_s"] >= 0

    show = site.iolens_run("db", "show", f"job:{job.job_id}", "--db", site.db)
    assert show.returncode == 0, show.stderr
    assert f"job {job.job_id} (id {job.job_id}) on cluster {CLUSTER_NAME} (slurm; record from sacct)" in (
        show.stdout
    )
    assert "nodes 2 (node[1-2]), tasks 4" in show.stdout and "state COMPLETED, exit 0:0" in show.stdout
    assert f"profile:{profiles[0]}: " in show.stdout and "on 2 hosts" in show.stdout


def test_a_failing_job_under_srun_keeps_its_state_and_exit_code_and_its_profile(
    site: ClusterSite, mpi_env: dict[str, str]
) -> None:
    env = cluster_env(site.cluster, mpi_env)
    job = site.job(env, "srun", "failing-job", status=3)
    assert (job.state, job.exit_code) == ("FAILED", "3:0"), job.output
    assert sorted(ln for ln in job.output.splitlines() if ln.startswith("rank ")) == RANK_LINES
    row, profiles = stored(site, job.job_id)
    # The Epilog's record (before any sync): what the controller said of the job's end.
    assert (row["source"], row["state"], row["exit_code"], row["nodes"], row["tasks"]) == (
        "epilog", "FAILED", 3, 2, 4,
    )  # fmt: skip
    assert len(profiles) == 1
    check_profile(site, profiles[0], job.job_id)
    _, row = sync(site, job.job_id)
    assert (row["source"], row["state"], row["exit_code"]) == ("sacct", "FAILED", 3)


def test_a_job_that_opts_out_runs_unchanged_and_only_its_accounting_record_is_kept(
    site: ClusterSite, mpi_env: dict[str, str]
) -> None:
    env = cluster_env(site.cluster, mpi_env, IOLENS_PROFILE="off")  # sbatch passes it to the job
    job = site.job(env, "mpirun", "opted-out", status=4)
    assert (job.state, job.exit_code) == ("FAILED", "4:0"), job.output
    assert sorted(ln for ln in job.output.splitlines() if ln.startswith("rank ")) == RANK_LINES
    assert not (site.spool / job.job_id).exists()
    assert f" job {job.job_id}: " not in epilog_log(site)  # the Epilog did not start Python
    with Store.open(site.db, create=False) as store:
        assert sched_jobs.find_jobs(store.db, job.job_id, CLUSTER_NAME) == []
        ids = [p["id"] for p in queries.jobs(store.db, limit=None) if p["job_id"] == job.job_id]
        assert ids == []
    _, row = sync(site, job.job_id)
    assert row["state"] == "FAILED" and stored(site, job.job_id)[1] == []


def test_a_database_that_does_not_answer_never_holds_the_job_and_sync_stores_it_later(
    site: ClusterSite, mpi_env: dict[str, str]
) -> None:
    env = cluster_env(site.cluster, mpi_env)
    login = site.cluster.host("login").address
    with socket.socket() as silent:  # takes connections (the kernel's backlog) and never answers
        silent.bind((login, 0))
        silent.listen(8)
        site.set("db", f"postgresql://iolens@{login}:{silent.getsockname()[1]}/iolens")
        site.set("background_timeout_s", "8")  # past the Epilog's 5 s: the worker gives up after 8 s
        try:
            t0 = time.monotonic()
            job = site.job(env, "mpirun", "db-silent")
            took = time.monotonic() - t0
        finally:
            site.set("db", site.db)
            site.set("background_timeout_s", "600")
        assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output
        assert sorted(job.output.splitlines()) == RANK_LINES
        line = next(ln for ln in epilog_log(site).splitlines() if f" job {job.job_id}: " in ln)
        assert "background: still storing after the time limit" in line, line
        seconds = float(re.search(r"\(([\d.]+) s\)$", line).group(1))  # type: ignore[union-attr]
        assert seconds < 5.0 + 0.5, line  # epilog_timeout_s
        assert took < 60, took
        wait_unlocked(site.spool / job.job_id / ".iolens-lock", 30)  # the worker's own limit ends it
    kept = sorted(p.name for p in (site.spool / job.job_id).iterdir())
    assert ".iolens-job.json" in kept and any(n.endswith((".iolj", ".iolp", ".iolpz")) for n in kept), kept
    said, row = sync(site, job.job_id, "--min-age", "0")
    assert f"{job.job_id}: stored: profile:" in said, said
    assert not (site.spool / job.job_id).exists()
    assert (row["state"], row["nodes"]) == ("COMPLETED", 2)
    _, profiles = stored(site, job.job_id)
    assert len(profiles) == 1
    check_profile(site, profiles[0], job.job_id)


def test_a_job_of_an_unprivileged_user_is_stored_under_that_user(
    site: ClusterSite, mpi_env: dict[str, str]
) -> None:
    # The TaskProlog runs as the job's user (it makes the job's directory in the spool, mode 1733), the Epilog
    # as root reads that user's logs only. Root submits for "nobody" (sbatch --uid) into a directory it may
    # write.
    nobody = pwd.getpwnam("nobody")
    work = site.log_dir.parent / "nobody"
    (work / "out").mkdir(parents=True)
    for d in (work, work / "out"):
        d.chmod(0o777)
    script = f"{site.program} {work / 'out'} {FILES} {FILE_BYTES}\n"
    args = [f"--uid={nobody.pw_uid}", f"--gid={nobody.pw_gid}", f"--chdir={work}", *TWO_BY_TWO]
    job = batch(site.cluster, f"mpirun {script}", args, cluster_env(site.cluster, mpi_env), work / "job.out")
    assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job.output
    assert sorted(job.output.splitlines()) == RANK_LINES
    assert not (site.spool / job.job_id).exists()
    row, profiles = stored(site, job.job_id)
    assert (row["user_name"], row["uid"], row["nodes"]) == ("nobody", nobody.pw_uid, 2)
    assert len(profiles) == 1
    check_profile(site, profiles[0], job.job_id)
    with Store.open(site.db, create=False) as store:
        assert queries.get_profile(store.db, profiles[0], document=False)["user_name"] == "nobody"
