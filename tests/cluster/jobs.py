"""Running things on the test cluster: the environment MPI programs need there, batch jobs waited for with a
bound, `iolens` from the login host, and a small MPI program that says where each rank ran."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.cluster.slurm import SlurmCluster

# Test-environment needs (root, 2 cores), never the product's defaults: the mpi_env fixture's variables.
MPI_TEST_VARS = ("OMPI_", "PRTE_")

HELLO_C = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, size, len, sum = 0;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d on %s sum %d\n", rank, size, host, sum);
    MPI_Finalize();
    return 0;
}
"""


def cluster_env(cluster: SlurmCluster, mpi_env: dict[str, str], **extra: str) -> dict[str, str]:
    """The cluster's client environment with the MPI test variables and `extra`."""
    mpi = {k: v for k, v in mpi_env.items() if k.startswith(MPI_TEST_VARS)}
    return cluster.env({**mpi, **extra})


def iolens_cmd() -> list[str]:
    """The installed `iolens` by its full path (a batch script on a node has no virtualenv's PATH)."""
    script = Path(sys.executable).parent / "iolens"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "iolens"]


def iolens_on_two_nodes(workload: str, launcher: str, json_path: Path, *rest: str) -> list[str]:
    """`iolens WORKLOAD --launcher L --np 4 --nodes 2 --monitor --no-live --json FILE REST...`"""
    spread = ["--launcher", launcher, "--np", "4", "--nodes", "2", "--monitor", "--no-live"]
    return [*iolens_cmd(), workload, *spread, "--json", str(json_path), *rest]


def hello_program(cluster: SlurmCluster) -> Path:
    """The MPI program, built once into the cluster's work directory."""
    exe = cluster.workdir / "hello"
    if not exe.exists():
        if shutil.which("mpicc") is None:
            raise RuntimeError("mpicc not found")
        src = cluster.workdir / "hello.c"
        src.write_text(HELLO_C, encoding="utf-8")
        subprocess.run(["mpicc", "-o", str(exe), str(src)], check=True, capture_output=True, timeout=120)
    return exe


@dataclass
class BatchJob:
    job_id: str
    state: str
    exit_code: str
    output: str
    seconds: float


def batch(
    cluster: SlurmCluster, script: str, args: list[str], env: dict[str, str], out: Path, timeout: float = 180
) -> BatchJob:
    """sbatch the script, wait (polling twice a second: `sbatch --wait` sleeps ever longer) for the job to
    leave the queue within the timeout (else it is cancelled and AssertionError), and its accounting."""
    path = out.with_suffix(".sh")
    path.write_text("#!/bin/bash\n" + script, encoding="utf-8")
    t0 = time.monotonic()
    r = cluster.run(["sbatch", "--parsable", f"--output={out}", *args, str(path)], env=env, timeout=30)
    assert r.returncode == 0, r.stderr
    job_id = r.stdout.strip().split(";")[0]
    while cluster.run(["squeue", "-h", "-j", job_id, "-o", "%i"], timeout=30).stdout.strip():
        if time.monotonic() - t0 > timeout:
            cluster.run(["scancel", job_id], timeout=30)
            raise AssertionError(f"batch job {job_id} still queued or running after {timeout:.0f} s")
        time.sleep(0.5)
    seconds = time.monotonic() - t0
    state, exit_code = accounting(cluster, job_id)
    text = out.read_text(encoding="utf-8", errors="replace") if out.exists() else ""
    return BatchJob(job_id, state, exit_code, text, seconds)


def accounting(cluster: SlurmCluster, job_id: str, timeout: float = 30) -> tuple[str, str]:
    """The job's (state, exit code) from slurmdbd (sacct), once it has recorded the end (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        r = cluster.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State,ExitCode"], timeout=30)
        fields = r.stdout.strip().split("|")
        if len(fields) == 2 and fields[0] not in ("RUNNING", "PENDING", "COMPLETING"):
            return fields[0], fields[1]
        if time.monotonic() > deadline:
            raise AssertionError(f"sacct has no end for job {job_id}: {r.stdout}{r.stderr}")
        time.sleep(0.5)


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))
