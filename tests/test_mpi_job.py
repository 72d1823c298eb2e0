"""`mpirun -np 2 iolens ior ...`, as job scripts written for IOR launch it: every `iolens` is one rank of the
MPI job, the engine runs as that rank, and rank 0 alone shows, keeps and stores the result."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi


def _mpirun(iolens_bin: list[str], args: list[str], _env: dict[str, str]) -> list[str]:
    return ["mpirun", "-np", "2", *iolens_bin, *args]


def test_ior_started_by_mpirun_runs_as_the_jobs_ranks(
    iolens_bin: list[str], mpi_env: dict[str, str], tmpfs_dir: Path, tmp_path: Path
) -> None:
    doc = tmp_path / "doc.json"
    args = ["ior", "-F", "-t", "1m", "-b", "16m", "-w", "-r", "-o", f"{tmpfs_dir}/f", "--json", str(doc)]
    proc = subprocess.run(
        _mpirun(iolens_bin, [*args, "--no-live"], mpi_env),
        capture_output=True,
        text=True,
        timeout=120,
        env=mpi_env,
    )
    assert proc.returncode == 0, proc.stderr
    # One report (rank 0's), not one per rank.
    assert proc.stdout.count("Summary of all tests") == 1, proc.stdout
    document = json.loads(doc.read_text())
    assert document["status"] == "ok"
    assert document["comm"]["kind"] == "mpi" and document["comm"]["ranks"] == 2
    assert document["command"] == ["iolens", *args, "--no-live"]
    assert [p.name for p in tmpfs_dir.iterdir()] == []


def test_mdtest_started_by_mpirun_runs_as_the_jobs_ranks(
    iolens_bin: list[str], mpi_env: dict[str, str], tmpfs_dir: Path, tmp_path: Path
) -> None:
    doc = tmp_path / "doc.json"
    args = ["mdtest", "-n", "500", "-u", "-F", "-d", str(tmpfs_dir), "--json", str(doc), "--no-live"]
    proc = subprocess.run(
        _mpirun(iolens_bin, args, mpi_env), capture_output=True, text=True, timeout=120, env=mpi_env
    )
    assert proc.returncode == 0, proc.stderr
    document = json.loads(doc.read_text())
    assert document["status"] == "ok" and document["comm"]["ranks"] == 2
    assert [p.name for p in tmpfs_dir.iterdir()] == []


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--np", "3"], "--np 3: the MPI job that started this process has 2 ranks"),
        (["--launcher", "mpirun"], "--launcher mpirun: this process is already rank"),
    ],
)
def test_options_that_contradict_the_mpi_job_are_refused(
    iolens_bin: list[str], mpi_env: dict[str, str], tmpfs_dir: Path, extra: list[str], says: str
) -> None:
    args = ["ior", "-F", "-t", "1m", "-b", "16m", "-w", "-o", f"{tmpfs_dir}/f", "--no-live", *extra]
    proc = subprocess.run(
        _mpirun(iolens_bin, args, mpi_env), capture_output=True, text=True, timeout=120, env=mpi_env
    )
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr
    assert list(tmpfs_dir.iterdir()) == []


def test_sigterm_to_every_rank_of_an_mpirun_job_stops_it_cleanly(
    iolens_bin: list[str], mpi_env: dict[str, str], disk_dir: Path, tmp_path: Path
) -> None:
    """What Slurm does at a time limit to the job's processes (here: the two `iolens` ranks)."""
    doc = tmp_path / "doc.json"
    args = ["ior", "-F", "-t", "16k", "-b", "4g", "-w", "-D", "20", "-o", f"{disk_dir}/f", "--json", str(doc)]
    proc = subprocess.Popen(
        _mpirun(iolens_bin, [*args, "--no-live"], mpi_env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=mpi_env,
    )
    # Wait until both ranks' engines write, then signal the two iolens processes (mpirun's children).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(p.name.startswith("f.") for p in disk_dir.iterdir()):
        time.sleep(0.1)
    time.sleep(0.5)
    ranks = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert len(ranks) == 2, ranks
    t0 = time.monotonic()
    for pid in ranks:
        os.kill(int(pid), signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - t0 < 10, err
    assert proc.returncode == 128 + signal.SIGTERM, err
    document = json.loads(doc.read_text())
    assert document["status"] == "failed" and document["interrupted"]["signal"] == "SIGTERM"
    assert [p.name for p in disk_dir.iterdir()] == []
