"""Slurm's accounting records: `sacct --parsable2` output read into SchedJobs, and sacct run for a time
window (`iolens site sync`, `iolens db import --sacct`).

The first line names the fields (sacct prints it unless --noheader); fields are separated by `|`. Only job
allocations are kept: a step's line (JobID `12.batch`, `12.0`, `12.extern`) is counted and skipped, and so
is a pending array's remainder (`12_[4-9]`: no task of it has run). A line that does not parse is refused
with its number, and then nothing of the file is stored.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass

from iolens.site.facts import FactError, no_value, parse_elapsed, parse_exit, parse_int, parse_time
from iolens.store.sched_jobs import SchedJob

# What `iolens site sync` asks sacct for (any subset, in any order, is read from a file; JobIDRaw or JobID
# must be there).
FIELDS = (
    "JobIDRaw", "JobID", "Cluster", "JobName", "User", "UID", "Account", "Partition", "NNodes", "NTasks",
    "AllocCPUS", "NodeList", "Submit", "Start", "End", "ElapsedRaw", "State", "ExitCode",
)  # fmt: skip
SACCT_TIMEOUT_S = 120.0


class SacctError(ValueError):
    """Accounting text that cannot be read; the message names the line."""


@dataclass
class SacctRead:
    jobs: list[SchedJob]
    steps: int  # step lines skipped
    pending_arrays: int  # pending array remainders skipped


def _job(values: dict[str, str], cluster: str) -> SchedJob | None:
    ref = values.get("JobID") or values.get("JobIDRaw") or ""
    raw = values.get("JobIDRaw") or ref
    if not raw:
        raise FactError("no JobIDRaw or JobID")
    if "." in ref or "." in raw:
        return None
    array_job = array_task = None
    if "_" in ref:
        array_job, _, array_task = ref.partition("_")
        if not array_task.isdigit():
            raise FactError(f"JobID {ref!r}: expected ARRAYJOB_TASK")
    if not raw.replace("+", "").isdigit():
        raise FactError(f"JobIDRaw {raw!r}: expected a job id")
    code, signal = parse_exit(values.get("ExitCode"))
    state = values.get("State")
    return SchedJob(
        scheduler="slurm",
        cluster=values.get("Cluster") or cluster,
        job_id=raw,
        source="sacct",
        job_ref=ref,
        array_job_id=array_job,
        array_task_id=array_task,
        job_name=None if no_value(values.get("JobName")) else values.get("JobName"),
        user_name=None if no_value(values.get("User")) else values.get("User"),
        uid=parse_int(values.get("UID"), "UID"),
        account=None if no_value(values.get("Account")) else values.get("Account"),
        partition_name=None if no_value(values.get("Partition")) else values.get("Partition"),
        nodes=parse_int(values.get("NNodes"), "NNodes"),
        tasks=parse_int(values.get("NTasks"), "NTasks"),
        cpus=parse_int(values.get("AllocCPUS") or values.get("NCPUS"), "AllocCPUS"),
        node_list=None if no_value(values.get("NodeList")) else values.get("NodeList"),
        submitted_at=parse_time(values.get("Submit")),
        started_at=parse_time(values.get("Start")),
        ended_at=parse_time(values.get("End")),
        elapsed_s=parse_elapsed(values.get("ElapsedRaw") or values.get("Elapsed")),
        state=state.split()[0] if state and state.split() else None,
        exit_code=code,
        exit_signal=signal,
    )


def parse(lines: Iterable[str], cluster: str = "", where: str = "sacct output") -> SacctRead:
    """The jobs of `sacct --parsable2` output (header first). SacctError names the first bad line."""
    header: list[str] | None = None
    out = SacctRead([], 0, 0)
    for n, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        cells = line.split("|")
        if header is None:
            if "JobIDRaw" not in cells and "JobID" not in cells:
                raise SacctError(
                    f"{where}: line {n}: not a header of `sacct --parsable2` (no JobIDRaw or JobID field): "
                    "run sacct without --noheader"
                )
            header = cells
            continue
        if len(cells) != len(header):
            raise SacctError(f"{where}: line {n}: {len(cells)} fields, the header has {len(header)}")
        values = dict(zip(header, cells, strict=True))
        if "[" in (values.get("JobID") or ""):
            out.pending_arrays += 1
            continue
        try:
            job = _job(values, cluster)
        except FactError as exc:
            raise SacctError(f"{where}: line {n}: {exc}") from None
        if job is None:
            out.steps += 1
        else:
            out.jobs.append(job)
    if header is None:
        raise SacctError(f"{where}: empty (no header line)")
    return out


def read_file(path: str) -> SacctRead:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return parse(f, where=path)
    except OSError as exc:
        raise SacctError(f"{path}: cannot read: {exc.strerror}") from None


def run_sacct(since: float, until: float | None = None, timeout_s: float = SACCT_TIMEOUT_S) -> SacctRead:
    """Run sacct for the jobs that ran in [since, until] on this machine's cluster (all users: root or an
    operator may see them all) and read its output."""
    fmt = "%Y-%m-%dT%H:%M:%S"
    cmd = [
        "sacct", "--parsable2", "--allusers", "--allocations", "--format", ",".join(FIELDS),
        "--starttime", time.strftime(fmt, time.localtime(since)),
        "--endtime", time.strftime(fmt, time.localtime(until)) if until else "now",
    ]  # fmt: skip
    try:
        r = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout_s, check=False,
            env={**os.environ, "SLURM_TIME_FORMAT": "%s"},
        )  # fmt: skip
    except FileNotFoundError:
        raise SacctError("sacct: not found on PATH") from None
    except subprocess.TimeoutExpired:
        raise SacctError(f"sacct: no answer within {timeout_s:.0f} s") from None
    if r.returncode != 0:
        msg = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
        raise SacctError(f"sacct: {msg}")
    return parse(r.stdout.splitlines(), where="sacct")
