"""The site integration's tests: an installation in a temporary directory, and jobs run as Slurm runs them.

A job here is what slurmstepd and slurmd do around it: the TaskProlog run with the job's SLURM_* variables
(as the user, before the task; its `export`/`unset` lines applied to the task's environment), the MPI
program under mpirun with that environment, then the Epilog script run with the variables Slurm gives an
Epilog (docs: "Prolog and Epilog Guide").
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "site"
HOST = socket.gethostname()
TASK_VARS = ("SLURM_JOB_ID", "SLURM_JOB_PARTITION", "IOLENS_PROFILE", "LD_PRELOAD")


@dataclass
class Site:
    etc: Path
    log_dir: Path
    db: str
    iolens: list[str]

    @property
    def conf(self) -> Path:
        return self.etc / "iolens-site.conf"

    @property
    def spool(self) -> Path:
        return self.log_dir / "spool"

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.iolens, *args], capture_output=True, text=True, timeout=timeout, check=False
        )

    def set(self, key: str, value: str) -> None:
        """Change one setting of the installed settings file."""
        lines = [
            f"{key} = {value}" if ln.split("=")[0].strip() == key else ln
            for ln in self.conf.read_text().splitlines()
        ]
        self.conf.write_text("\n".join(lines) + "\n")


def install(iolens_bin: list[str], root: Path, db: str, *extra: str) -> Site:
    site = Site(root / "etc", root / "logs", db, iolens_bin)
    r = site.run("site", "install", "--slurm", "--log-dir", str(site.log_dir), "--db", db,
                 "--dir", str(site.etc), "--cluster", "", *extra)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return site


def program(root: Path) -> Path:
    if shutil.which("mpicc") is None:
        pytest.skip("mpicc not found")
    out = root / "site_ranks"
    r = subprocess.run(["mpicc", "-O1", "-o", str(out), str(DATA / "site_ranks.c")],
                       capture_output=True, text=True, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return out


def slurm_env(job_id: str, nodes: str = HOST, node: str = HOST, **extra: str) -> dict[str, str]:
    """The variables Slurm 22.05's slurmd gave a real Epilog (tests/data/site/epilog-env.txt, captured from
    a one-node cluster with slurmdbd), for this job: the same names, the job's values."""
    env = dict(
        line.split("=", 1) for line in (DATA / "epilog-env.txt").read_text().splitlines() if "=" in line
    )
    env.pop("SLURM_CONF", None)
    env.update(
        SLURM_JOB_ID=job_id, SLURM_JOBID=job_id, SLURM_NODELIST=nodes, SLURMD_NODENAME=node,
        SLURM_JOB_NUM_NODES=str(len(nodes.split(","))), SLURM_JOB_UID=str(os.getuid()),
        SLURM_UID=str(os.getuid()), SLURM_JOB_ACCOUNT="proj1", SLURM_CLUSTER_NAME="testcluster",
        SLURM_JOB_NTASKS="2",
    )  # fmt: skip
    env.update(extra)
    return env


def task_prolog(site: Site, env: dict[str, str]) -> tuple[dict[str, str | None], str]:
    """Run the TaskProlog as slurmstepd does: what it sets (None: unset), and its raw output."""
    # In the site's directory: a TaskProlog run with the runtime already preloaded (a later step's) is itself
    # profiled, and without IOLENS_PROFILE_DIR its processes log to the working directory.
    r = subprocess.run(["sh", str(site.etc / "iolens-task-prolog.sh")], env=env, capture_output=True,
                       text=True, timeout=30, check=False, cwd=site.etc)  # fmt: skip
    assert r.returncode == 0, r.stderr
    out: dict[str, str | None] = {}
    for line in r.stdout.splitlines():
        if line.startswith("export "):
            k, _, v = line[7:].partition("=")
            out[k] = v
        elif line.startswith("unset "):
            out[line[6:].strip()] = None
        else:
            raise AssertionError(f"TaskProlog printed {line!r}")
    return out, r.stdout


@dataclass
class JobRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def run_job(
    site: Site, prog: Path, mpi_env: dict[str, str], job_env: dict[str, str], out_dir: Path,
    files: int = 20, size: int = 4096, status: int = 0, ranks: int = 2,
) -> JobRun:  # fmt: skip
    """The job's step: the TaskProlog, then the program under mpirun with what it set."""
    # What the TaskProlog reads of a task's environment (a task has more, but mpirun run here must not
    # believe it is inside a Slurm allocation: it would look for SLURM_TASKS_PER_NODE and more).
    base = {**mpi_env, **{k: v for k, v in job_env.items() if k in TASK_VARS}}
    sets, _ = task_prolog(site, base)
    env = dict(base)
    for k, v in sets.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    out_dir.mkdir(parents=True, exist_ok=True)
    forward = [a for k in sets if sets[k] is not None for a in ("-x", k)]
    t0 = time.monotonic()
    r = subprocess.run(
        ["mpirun", "-np", str(ranks), *forward, str(prog), str(out_dir), str(files), str(size), str(status)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return JobRun(r.returncode, r.stdout, r.stderr, time.monotonic() - t0)


def epilog(site: Site, job_env: dict[str, str], timeout: float = 60) -> tuple[float, int]:
    """Run the Epilog script as slurmd does (root, the job's variables, no terminal): its time and status."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **job_env}
    t0 = time.monotonic()
    r = subprocess.run(["sh", str(site.etc / "iolens-epilog.sh")], env=env, capture_output=True,
                       text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)  # fmt: skip
    return time.monotonic() - t0, r.returncode


def epilog_log(site: Site) -> str:
    path = site.log_dir / "iolens-epilog.log"
    return path.read_text() if path.exists() else ""
