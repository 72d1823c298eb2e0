"""The MPI-IO layer under mpi4py (Debian's python3-mpi4py, on /usr/bin/python3): a Python program's
File.Write_at_all, Write_at, Read_at_all and Sync reach the same MPI_File_* entry points the runtime wraps
for C programs. Each rank's MPIIO counters must equal what the program says it did (its TALLY line), with
per-process logs and, reduced over the ranks, in the job log."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from iolens.profile.job import load_job
from iolens.profile.joblog import read_job_log
from iolens.profile.reader import ProcessLog

from .conftest import ProfileBuild
from .test_profile_runtime import logs_in, profiled_env, run

PROG = Path(__file__).parent / "data" / "mpi4py" / "write_at_all.py"
PYTHON = "/usr/bin/python3"
NP = 2


@pytest.fixture(scope="module")
def has_mpi4py() -> None:
    r = subprocess.run([PYTHON, "-c", "import mpi4py"], capture_output=True, check=False)
    if r.returncode != 0:
        pytest.skip(
            "mpi4py is not installed for /usr/bin/python3 (Debian's python3-mpi4py; .ci/run installs it)"
        )


def _run(build: ProfileBuild, mpi_env: dict[str, str], root: Path, job_log: str) -> tuple[Path, Path, dict]:
    work, logs, out = root / "work", root / "logs", root / "out"
    work.mkdir(parents=True)
    logs.mkdir()
    env = {**mpi_env, **profiled_env(build, logs, IOLENS_JOB_ID="py-job", IOLENS_JOB_LOG=job_log)}
    path = work / "data.bin"
    r = run(["mpirun", "-np", str(NP), "--output-filename", str(out), PYTHON, str(PROG), str(path)], env,
            timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr.decode()
    tallies = {}
    for f in out.glob("*/rank.*/stdout"):
        for line in f.read_text().splitlines():
            if line.startswith("TALLY "):
                _, rank, doc = line.split(" ", 2)
                tallies[int(rank)] = json.loads(doc)
    assert sorted(tallies) == list(range(NP))
    return path, logs, tallies


def _mpiio(log: ProcessLog, path: Path) -> dict[str, int]:
    mod = log.modules["MPIIO"]
    return mod.counters(mod.row_of[str(path)])


def _want(t: dict[str, int]) -> dict[str, int]:
    return {
        "MPIIO_COLL_OPENS": 1,
        "MPIIO_COLL_WRITES": t["coll_writes"],
        "MPIIO_INDEP_WRITES": t["indep_writes"],
        "MPIIO_COLL_READS": t["coll_reads"],
        "MPIIO_BYTES_WRITTEN": t["bytes_written"],
        "MPIIO_BYTES_READ": t["bytes_read"],
        "MPIIO_SYNCS": t["syncs"],
    }


@pytest.mark.mpi
def test_each_rank_counts_what_the_python_program_did(
    has_mpi4py: None, profile_build: ProfileBuild, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    path, logs, tallies = _run(profile_build, mpi_env, tmp_path, "0")
    ranked = {log.header.rank: log for log in logs_in(logs) if log.header.rank >= 0}
    assert sorted(ranked) == list(range(NP))
    for rank, log in ranked.items():
        got = _mpiio(log, path)
        want = _want(tallies[rank])
        assert {k: got[k] for k in want} == want, rank
        # beneath: the POSIX layer wrote the rank's bytes (ROMIO or OMPIO may aggregate: the job's sum)
    job = load_job(logs)
    (f,) = [m for m in job.mpiio if m.path == str(path)]
    assert f.kind_ranks["collective"] == tuple(range(NP)) and f.kind_ranks["independent"] == tuple(range(NP))
    assert sum(int(log.table.column("POSIX_BYTES_WRITTEN")[log.table.row_of[str(path)]])
               for log in ranked.values() if str(path) in log.table.row_of) == sum(
        t["bytes_written"] for t in tallies.values())  # fmt: skip


@pytest.mark.mpi
def test_the_job_log_sums_the_ranks(
    has_mpi4py: None, profile_build: ProfileBuild, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    path, logs, tallies = _run(profile_build, mpi_env, tmp_path, "1")
    (job_log,) = sorted(logs.glob("*.iolj"))
    jl = read_job_log(job_log)
    # every rank made the same kinds of calls on the file: one record, rank 0's, the ranks' sums
    holders = [log for log in jl.logs if "MPIIO" in log.modules and str(path) in log.modules["MPIIO"].row_of]
    assert [log.header.rank for log in holders] == [0]
    got = _mpiio(holders[0], path)
    want = {k: sum(_want(t)[k] for t in tallies.values()) for k in _want(tallies[0])}
    assert {k: got[k] for k in want} == want
    job = load_job(job_log)
    (f,) = [m for m in job.mpiio if m.path == str(path)]
    assert f.ranks == tuple(range(NP)) and f.kind_ranks["collective"] == tuple(range(NP))
