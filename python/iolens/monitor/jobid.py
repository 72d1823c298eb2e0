"""The batch job a process belongs to, for the per-command process series (proc_agg.py).

Looked for first in the process's cgroup path (/proc/PID/cgroup): Slurm's cgroup plugins put every step of a
job under a `job_NNN` directory (`/system.slice/slurmstepd.scope/job_42/step_0/...` with cgroup v2,
`/slurm/uid_1000/job_42/...` with v1). That path is set by the resource manager, readable by anyone, and also
covers processes that entered the job without its environment (ssh adopted by pam_slurm_adopt).

Then in its environment (/proc/PID/environ, readable by the process's owner and root only), with the
variables Lustre's jobid_var knows, in this order: SLURM_JOB_ID (Slurm), PBS_JOBID (PBS Pro, Torque),
LSB_JOBID (LSF), JOB_ID (Grid Engine), LOADL_STEP_ID (LoadLeveler), COBALT_JOBID (Cobalt), FLUX_JOB_ID (Flux).
A variable a process inherited from a job it has left (an sbatch started inside a job) names the outer job;
the cgroup, when there is one, wins for that reason.

"" when neither says anything or neither may be read (another user's process when not root).
"""

from __future__ import annotations

import re

ENV_VARS = (
    "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "JOB_ID", "LOADL_STEP_ID", "COBALT_JOBID", "FLUX_JOB_ID",
)  # fmt: skip
_CGROUP_JOB = re.compile(r"/job_([^/\s]+)")
# Environment blocks are small; a process that passed a huge one is read only this far.
_ENVIRON_LIMIT = 1 << 20


def from_cgroup(text: str) -> str:
    """The job id in a /proc/PID/cgroup text (`0::/path` lines; v1 has one line per hierarchy)."""
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        m = _CGROUP_JOB.search(path)
        if m:
            return m.group(1)
    return ""


def from_environ(raw: bytes) -> str | None:
    """The job id in a /proc/PID/environ block (NUL-separated NAME=value); None for an empty block (a zombie
    or a process between fork and exec may show none)."""
    if not raw:
        return None
    found: dict[str, str] = {}
    for item in raw.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep:
            key = name.decode("ascii", "replace")
            if key in ENV_VARS and key not in found:
                found[key] = value.decode("utf-8", "surrogateescape")
    for var in ENV_VARS:
        if found.get(var):
            return found[var]
    return ""


def job_id(pid: int, proc: str = "/proc") -> str | None:
    """The job id of a process, "" when it has none or may not be read, None when that cannot be told now."""
    try:
        with open(f"{proc}/{pid}/cgroup", encoding="utf-8", errors="surrogateescape") as f:
            job = from_cgroup(f.read())
        if job:
            return job
    except OSError:
        return None  # gone
    try:
        with open(f"{proc}/{pid}/environ", "rb") as f:
            return from_environ(f.read(_ENVIRON_LIMIT))
    except PermissionError:
        return ""
    except OSError:
        return None
