"""What the batch system says about a job, turned into a SchedJob (store/sched_jobs.py): Slurm's epilog
environment, `scontrol show job -o`, and the host lists and times they are written in.

Slurm writes times in the local time zone of the machine that prints them ("2026-11-27T18:30:01"), or in
SLURM_TIME_FORMAT's form: `iolens site sync` asks for seconds since the epoch (SLURM_TIME_FORMAT=%s), and
both are read here. "Unknown", "None" and "" are no time.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Mapping

from iolens.store.sched_jobs import SchedJob

# `scontrol show job` answers from the controller's memory: it is quick, or the controller is busy and the
# epilog must not wait for it.
SCONTROL_TIMEOUT_S = 2.0
_NO_VALUE = ("", "unknown", "none", "n/a", "(null)", "none assigned")


class FactError(ValueError):
    """A value the batch system would not write; the message names it."""


def no_value(text: str | None) -> bool:
    return text is None or text.strip().lower() in _NO_VALUE


def _value(text: str | None) -> str | None:
    """The text stripped, None when it says there is no value."""
    return None if no_value(text) else str(text).strip()


def parse_time(text: str | None) -> float | None:
    """Seconds since the epoch of a Slurm time (local ISO form, or digits: SLURM_TIME_FORMAT=%s)."""
    t = _value(text)
    if t is None or t.isdigit():
        return None if t is None else float(t)
    try:
        return time.mktime(time.strptime(t, "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        raise FactError(f"time {t!r}: expected YYYY-MM-DDTHH:MM:SS or seconds since the epoch") from None


def parse_elapsed(text: str | None) -> float | None:
    """Seconds of a Slurm duration: [D-]HH:MM:SS, MM:SS, or digits (ElapsedRaw)."""
    t = _value(text)
    if t is None or t.isdigit():
        return None if t is None else float(t)
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)", t)
    if m is None:
        raise FactError(f"duration {t!r}: expected [D-]HH:MM:SS")
    days, hours, minutes, seconds = m.groups()
    return int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)


def parse_exit(text: str | None) -> tuple[int | None, int | None]:
    """Slurm's ExitCode "CODE:SIGNAL" as (code, signal)."""
    t = _value(text)
    if t is None:
        return None, None
    m = re.fullmatch(r"(\d+):(\d+)", t)
    if m is None:
        raise FactError(f"exit code {t!r}: expected CODE:SIGNAL")
    return int(m.group(1)), int(m.group(2))


def parse_int(text: str | None, what: str) -> int | None:
    t = _value(text)
    if t is not None and not t.isdigit():
        raise FactError(f"{what} {t!r}: expected a whole number")
    return None if t is None else int(t)


def _split_top(text: str) -> list[str]:
    """Split at the commas that are not inside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p for p in (*parts, cur) if p]


def _expand_one(name: str, out: list[str], limit: int, text: str) -> None:
    m = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", name)
    if m is None:
        out.append(name)
        return
    prefix, ranges, suffix = m.groups()
    for r in ranges.split(","):
        lo, _, hi = r.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise FactError(f"host list {text!r}: {r!r} is not a range")
        for n in range(int(lo), int(hi or lo) + 1):
            if len(out) >= limit:
                return
            _expand_one(f"{prefix}{n:0{len(lo)}d}{suffix}", out, limit, text)


def expand_hostlist(text: str, limit: int = 100_000) -> list[str]:
    """Slurm's compressed host list ("n[01-03,7],gpu5") as names, in order (at most `limit`)."""
    out: list[str] = []
    for part in _split_top(text.strip()):
        _expand_one(part, out, limit, text)
    return out[:limit]


def slurm_env_job(env: Mapping[str, str]) -> SchedJob:
    """The job as its Slurm Epilog (or TaskProlog) environment describes it (docs: "Prolog and Epilog
    Guide"): id, array ids, user, uid, account, partition, node list, name, cluster."""
    job_id = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID") or ""
    if not job_id:
        raise FactError("SLURM_JOB_ID is not set: not run by Slurm")
    array_job, array_task = env.get("SLURM_ARRAY_JOB_ID"), env.get("SLURM_ARRAY_TASK_ID")
    # Slurm 22.05's slurmd gives an Epilog SLURM_NODELIST (tests/data/site/epilog-env.txt); a TaskProlog and
    # the Prolog guide name SLURM_JOB_NODELIST. The array ids are not there for an Epilog: scontrol has them.
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or None
    code, signal = (
        parse_exit(env.get("SLURM_JOB_EXIT_CODE2")) if env.get("SLURM_JOB_EXIT_CODE2") else (None, None)
    )
    return SchedJob(
        scheduler="slurm",
        cluster=env.get("SLURM_CLUSTER_NAME") or "",
        job_id=job_id,
        source="epilog",
        job_ref=f"{array_job}_{array_task}" if array_job and array_task else job_id,
        array_job_id=array_job or None,
        array_task_id=array_task or None,
        job_name=env.get("SLURM_JOB_NAME") or None,
        user_name=env.get("SLURM_JOB_USER") or None,
        uid=parse_int(env.get("SLURM_JOB_UID"), "SLURM_JOB_UID"),
        account=env.get("SLURM_JOB_ACCOUNT") or None,
        partition_name=env.get("SLURM_JOB_PARTITION") or None,
        nodes=parse_int(env.get("SLURM_JOB_NUM_NODES"), "SLURM_JOB_NUM_NODES")
        or (len(expand_hostlist(nodelist)) if nodelist else None),
        tasks=parse_int(env.get("SLURM_JOB_NTASKS"), "SLURM_JOB_NTASKS"),
        cpus=cpus_per_node_total(env.get("SLURM_JOB_CPUS_PER_NODE")),
        node_list=nodelist,
        exit_code=code,
        exit_signal=signal,
    )


def cpus_per_node_total(text: str | None) -> int | None:
    """The CPUs of a job from SLURM_JOB_CPUS_PER_NODE ("2(x2),4": 2 on each of 2 nodes, 4 on one); None when
    it is missing or not in that form."""
    total = 0
    for part in (text or "").split(","):
        m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if m is None:
            return None
        total += int(m.group(1)) * int(m.group(2) or 1)
    return total or None


_PAIR = re.compile(r"([A-Za-z][\w:/]*)=(.*?)(?=\s+[A-Za-z][\w:/]*=|\s*$)")


def parse_scontrol(text: str) -> dict[str, str]:
    """`scontrol show job -o ID`'s one line as {Key: value} (values may hold spaces: Command, WorkDir)."""
    return {m.group(1): m.group(2) for m in _PAIR.finditer(text.strip())}


def merge_scontrol(job: SchedJob, fields: Mapping[str, str]) -> SchedJob:
    """The job with what `scontrol show job` adds: times, state, exit code, counts."""

    def num(key: str) -> int | None:
        try:
            return parse_int(fields.get(key), key)
        except FactError:
            return None

    code, signal = (
        parse_exit(fields.get("ExitCode"))
        if re.fullmatch(r"\d+:\d+", fields.get("ExitCode", ""))
        else (None, None)
    )
    user = fields.get("UserId", "")
    m = re.fullmatch(r"(.*)\((\d+)\)", user)
    job.user_name = job.user_name or (m.group(1) if m else None)
    job.uid = job.uid if job.uid is not None else (int(m.group(2)) if m else None)
    job.account = job.account or (None if no_value(fields.get("Account")) else fields.get("Account"))
    job.partition_name = job.partition_name or fields.get("Partition") or None
    job.job_name = job.job_name or fields.get("JobName") or None
    # The Epilog's own counts first: while a job is COMPLETING the controller takes each node that has
    # finished its Epilog out of NumNodes (on a real 2-node job, node1's Epilog saw NumNodes=1 when node2's
    # had ended first).
    job.nodes = job.nodes or num("NumNodes")
    job.tasks = job.tasks or num("NumTasks")
    job.cpus = job.cpus or num("NumCPUs")
    for key, attr in (("SubmitTime", "submitted_at"), ("StartTime", "started_at"), ("EndTime", "ended_at")):
        try:
            value = parse_time(fields.get(key))
        except FactError:
            value = None
        if value is not None:
            setattr(job, attr, value)
    array_job, array_task = fields.get("ArrayJobId"), fields.get("ArrayTaskId")
    if array_job and array_task and array_task.isdigit():
        job.array_job_id, job.array_task_id = array_job, array_task
        job.job_ref = f"{array_job}_{array_task}"
    state = fields.get("JobState")
    job.state = state.split()[0] if state else job.state
    if code is not None:
        job.exit_code, job.exit_signal = code, signal
    if job.state == "COMPLETING":
        job.state = ended_state(fields.get("Reason", ""), job.exit_code, job.exit_signal)
    if job.started_at is not None and job.ended_at is not None:
        job.elapsed_s = max(0.0, job.ended_at - job.started_at)
    return job


# While its Epilogs run, `scontrol show job` says JobState=COMPLETING (a flag that hides the state the job
# ended in); the Reason the controller set at the end says which it was (Slurm's job_completion: the
# reasons of failed, timed-out, node-failed and out-of-memory jobs).
_ENDED_BY_REASON = {
    "NonZeroExitCode": "FAILED",
    "RaisedSignal": "FAILED",
    "TimeLimit": "TIMEOUT",
    "NodeDown": "NODE_FAIL",
    "OutOfMemory": "OUT_OF_MEMORY",
}


def ended_state(reason: str, code: int | None, signal: int | None) -> str | None:
    """The state a COMPLETING job ended in, from its Reason and exit code; None when they do not say (a job
    cancelled, preempted...: sacct's record, stored by `iolens site sync`, has it)."""
    state = _ENDED_BY_REASON.get(reason.split(":")[0])
    if state is None and no_value(reason) and (code, signal) == (0, 0):
        state = "COMPLETED"
    return state


def scontrol_job(job_id: str, timeout_s: float = SCONTROL_TIMEOUT_S) -> dict[str, str]:
    """`scontrol show job -o JOB_ID` ({} when scontrol is missing, slow or says nothing of the job)."""
    try:
        r = subprocess.run(
            ["scontrol", "show", "job", "-o", job_id],
            capture_output=True, text=True, timeout=timeout_s, env={**os.environ, "SLURM_TIME_FORMAT": "%s"},
            check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if r.returncode != 0:
        return {}
    return parse_scontrol(r.stdout.splitlines()[0] if r.stdout.strip() else "")
