"""A job seen three ways: its accounting record (sacct), its profile (the client's counters) and Lustre's
job_stats (the servers' counters, sampled by the monitor's Lustre collector from job_stats files), in
`iolens db show job:ID` and on the portal's job page, with what disagrees said; on SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from .db_helpers import db_url, iolens, iolens_env, pg_server  # noqa: F401 - fixtures
from .profile_logs import FileSpec, LogSpec, MountSpec, write_log
from .site_helpers import DATA
from .web_helpers import fetch, job_stats_samples, portal, token

MiB = 1 << 20
S = 10**9
# Lustre's job_stats in tests/data/lustre count 25 MiB written for this job id (here: the job's).
OST_JOB = "cluster-testjob1"


def _job(root: Path, url: str, job_id: str, written: int, start: float) -> int:
    """A profiled job that wrote `written` bytes to one file on a Lustre mount, stored; its profile id."""
    logs = root / f"logs-{job_id}"
    logs.mkdir()
    counters = {"POSIX_OPENS": 1, "POSIX_WRITES": written // MiB, "POSIX_BYTES_WRITTEN": written,
                "POSIX_F_WRITE_TIME": 200_000_000}  # fmt: skip
    write_log(logs, LogSpec(
        job_id=job_id, exe="/usr/bin/climate", files=[FileSpec(1, f"/lus/out.{job_id}", 1)],
        mounts=[MountSpec(1, "/lus", "lustre")], file_recs=[(0, 1, counters)], proc_recs=[(0, {})],
        start_wall_ns=int(start * S), start_mono_ns=5 * S, end_ns=5 * S + 20 * S,
    ))  # fmt: skip
    r = iolens("db", "import", str(logs), "--db", url)
    assert r.returncode == 0, r.stderr
    return int(r.stdout.split("profile:")[1].split()[0])


def _accounting(root: Path, url: str, job_id: str, start: float) -> None:
    """The job's sacct line (the real output's header and form, this job's values)."""
    header, line = (DATA / "sacct-done.txt").read_text().splitlines()[:2]
    cells = line.split("|")
    values = dict(zip(header.split("|"), cells, strict=True))
    values.update(JobIDRaw=job_id, JobID=job_id, NNodes="2", NodeList="n[1-2]",
                  Start=str(int(start)), End=str(int(start + 20)), Submit=str(int(start - 5)))  # fmt: skip
    path = root / f"sacct-{job_id}.txt"
    path.write_text(f"{header}\n{'|'.join(values.values())}\n")
    r = iolens("db", "import", "--sacct", str(path), "--db", url)
    assert r.returncode == 0, r.stderr


def test_profile_accounting_and_job_stats_side_by_side_with_what_disagrees(
    tmp_path: Path,
    db_url: str,  # noqa: F811
) -> None:
    start = time.time() - 600
    # job 501 wrote 64 MiB by its profile; Lustre's servers counted 50 MiB for it (25 MiB, then doubled)
    profile_id = _job(tmp_path, db_url, "501", 64 * MiB, start)
    agree_id = _job(tmp_path, db_url, "502", 50 * MiB, start)
    _accounting(tmp_path, db_url, "501", start)
    _accounting(tmp_path, db_url, "502", start)
    for job in ("501", "502"):
        job_stats_samples(db_url, tmp_path / job, "oss1", [(start + 5, {}), (start + 15, {job: 2})],
                          rename={OST_JOB: job})  # fmt: skip
    r = iolens("db", "show", "job:501", "--db", db_url, env=iolens_env())
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "job 501 (id 501) on cluster sitetest" in out and f"profile:{profile_id}:" in out
    assert "on Lustre: read 0.0 MiB, written 64.0 MiB" in out
    assert "Lustre job_stats (501; 1 servers, 2 targets): read 0.0 MiB in 2 RPCs, written 50.0 MiB" in out
    assert (
        "disagree: bytes written: the profile counted 64.0 MiB on Lustre, the servers' job_stats 50.0 MiB"
        in out
    )
    assert "disagree: the profile saw processes on 1 of the job's 2 nodes" in out
    out = iolens("db", "show", "job:502", "--db", db_url).stdout
    assert "written 50.0 MiB" in out and "bytes written" not in out
    # the portal's job page says the same
    staff = token(db_url, "root", staff=True)
    with portal(db_url, log_dir=tmp_path) as srv:
        status, _, body = fetch(f"{srv.base}/jobs/{profile_id}", staff)
        assert status == 200
        assert (
            'id="batch-facts"' in body
            and "501 on sitetest (slurm)" in body
            and "COMPLETED (exit 0:0)" in body
        )
        assert "64.0 MiB" in body and "50.0 MiB" in body and 'class="bad disagree"' in body
        _, _, body = fetch(f"{srv.base}/jobs/{agree_id}", staff)
        assert 'id="lustre-compare"' in body and "bytes written: the profile counted" not in body


def test_the_sites_jobid_name_finds_the_jobs_job_stats(iolens_bin: list[str], tmp_path: Path) -> None:
    url = str(tmp_path / "db.sqlite")
    r = subprocess.run([*iolens_bin, "site", "install", "--slurm", "--log-dir", str(tmp_path / "logs"),
                        "--db", url, "--dir", str(tmp_path / "etc"), "--lustre-jobid", "%e.%j"],
                       capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    start = time.time() - 600
    _job(tmp_path, url, "503", 50 * MiB, start)
    _accounting(tmp_path, url, "503", start)
    # Lustre named the job's I/O PROGRAM.JOBID; a job id alone (another job's form) does not match
    job_stats_samples(url, tmp_path / "a", "oss1", [(start + 5, {}), (start + 15, {"climate.503": 2})],
                      rename={OST_JOB: "climate.503", "testjob2": "503"})  # fmt: skip
    out = iolens("db", "show", "job:503", "--db", url).stdout
    assert "Lustre job_stats (climate.503; 1 servers, 2 targets)" in out and "written 50.0 MiB" in out, out
    assert "disagree: bytes" not in out
