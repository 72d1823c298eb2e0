"""A job seen three ways: the batch system's accounting record, the client-side profile(s), and the
server-side Lustre job_stats sampled under its job id; and where they disagree (docs/site.md, "What a user
sees").

Lustre names a job's I/O as its jobid_var or jobid_name says: `%j` the job id (jobid_var=SLURM_JOB_ID), `%u`
the uid, `%g` the gid, `%e` the program, `%h`/`%H` the host, `%p` the pid. The site setting lustre_jobid
(comma-separated forms) says which the center uses; the fields that vary within a job match anything.
"""

from __future__ import annotations

from typing import Any

from iolens.store import queries, sched_jobs
from iolens.store.db import Database

MiB = 1 << 20
# Below this many bytes on either side a difference is not worth a sentence.
MIN_BYTES = MiB
# The job_stats window: Lustre counts a job's dirty pages when they reach the servers, after the job's end.
BEFORE_S, AFTER_S = 60.0, 300.0
CLOCK_SLACK_S = 5.0


def jobid_patterns(forms: str, job: dict[str, Any]) -> list[str]:
    """The job_stats ids of the job ('*': any text) for each of the comma-separated jobid_name forms."""
    out = []
    for form in (f.strip() for f in forms.split(",")):
        if not form:
            continue
        text, i = "", 0
        while i < len(form):
            ch = form[i]
            if ch == "%" and i + 1 < len(form):
                code = form[i + 1]
                i += 2
                if code == "j":
                    text += str(job["job_id"])
                elif code == "u" and job.get("uid") is not None:
                    text += str(job["uid"])
                elif code == "%":
                    text += "%"
                else:
                    text += "*"
                continue
            text += ch
            i += 1
        out.append(text)
    return list(dict.fromkeys(out))


def lustre_bytes(profile: dict[str, Any]) -> tuple[int, int, bool]:
    """Bytes read and written on Lustre mounts by a stored profile (its report's mounts), and whether it
    had a Lustre mount at all."""
    doc = profile.get("document") or {}
    mounts = [m for m in doc.get("mounts") or [] if isinstance(m, dict) and m.get("fs_type") == "lustre"]
    return (
        sum(int(m.get("bytes_read") or 0) for m in mounts),
        sum(int(m.get("bytes_written") or 0) for m in mounts),
        bool(mounts),
    )


def _differs(a: int, b: int, tolerance: float) -> bool:
    return max(a, b) >= MIN_BYTES and abs(a - b) > tolerance * max(a, b)


def _mib(n: int) -> str:
    return f"{n / MiB:,.1f} MiB"


def overview(
    db: Database,
    job: dict[str, Any] | None,
    profile_ids: list[int],
    job_id: str | None = None,
    forms: str | None = None,
    tolerance: float | None = None,
) -> dict[str, Any]:
    """{"job": accounting row or None, "profiles": [...], "job_stats": totals or None, "lustre_profile":
    {bytes_read, bytes_written}, "disagreements": [sentences]}. `forms` and `tolerance`: the site's
    (`iolens site install` keeps them in the database) unless given."""
    settings = sched_jobs.view_settings(db)
    forms = forms if forms is not None else settings["lustre_jobid"]
    try:
        tolerance = tolerance if tolerance is not None else float(settings["tolerance"])
    except ValueError:
        tolerance = 0.10
    profiles = [queries.get_profile(db, pid) for pid in profile_ids]
    key = dict(job) if job else {"job_id": job_id or (profiles[0]["job_id"] if profiles else "")}
    starts = [t for t in [job and job.get("started_at"), *(p["started_at"] for p in profiles)] if t]
    ends = [t for t in [job and job.get("ended_at"), *(p["ended_at"] for p in profiles)] if t]
    stats = None
    if key.get("job_id") and starts:
        t1 = max(ends) if ends else max(starts) + 86400.0
        stats = sched_jobs.job_stats_totals(
            db, jobid_patterns(forms, key), min(starts) - BEFORE_S, t1 + AFTER_S
        )
    read = written = 0
    any_lustre = False
    for p in profiles:
        r, w, has = lustre_bytes(p)
        read, written, any_lustre = read + r, written + w, any_lustre or has
    says: list[str] = []
    if stats is not None:
        for what, mine, theirs, why in (
            ("written", written, stats["bytes_written"],
             "the servers see less when pages were rewritten in the client's cache before they were sent, "
             "more "
             "when another program of the job (not profiled) or another job with the same id wrote"),
            ("read", read, stats["bytes_read"],
             "the servers see less when reads were served from the client's cache, more with read-ahead"),
        ):  # fmt: skip
            if profiles and _differs(mine, theirs, tolerance):
                says.append(
                    f"bytes {what}: the profile counted {_mib(mine)} on Lustre, the servers' job_stats "
                    f"{_mib(theirs)} (beyond {tolerance:.0%}; {why})"
                )
        if not profiles and stats["bytes_read"] + stats["bytes_written"] >= MIN_BYTES:
            says.append(
                f"Lustre's job_stats counted {_mib(stats['bytes_read'] + stats['bytes_written'])} for this "
                "job, "
                "and no profile of it is stored (profiling was off, or its programs ignore LD_PRELOAD)"
            )
    elif profiles and read + written >= MIN_BYTES:
        says.append(
            f"the profile counted {_mib(read + written)} on Lustre, and no job_stats sample names the job "
            f"({', '.join(jobid_patterns(forms, key))}): no monitor sampled the servers then, or Lustre's "
            "jobid_var / jobid_name do not name jobs that way"
        )
    if job and profiles:
        hosts = max(int(p.get("hosts") or 0) for p in profiles)
        if job.get("nodes") and hosts and hosts < int(job["nodes"]):
            says.append(f"the profile saw processes on {hosts} of the job's {job['nodes']} nodes")
        if (
            job.get("started_at")
            and min(p["started_at"] or job["started_at"] for p in profiles)
            < float(job["started_at"]) - CLOCK_SLACK_S
        ):
            says.append("the profile starts before the job did: the nodes' clocks disagree")
        if (
            job.get("ended_at")
            and max(p["ended_at"] or 0 for p in profiles) > float(job["ended_at"]) + CLOCK_SLACK_S
        ):
            says.append("the profile ends after the job did: the nodes' clocks disagree")
    return {
        "job": job,
        "profiles": profiles,
        "job_stats": stats,
        "lustre_profile": {"bytes_read": read, "bytes_written": written, "mounts": any_lustre},
        "disagreements": says,
    }


def _when(t: float | None) -> str:
    import time

    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(t)))


def text_lines(view: dict[str, Any]) -> list[str]:
    """`iolens db show job:ID`'s lines."""
    lines: list[str] = []
    job = view["job"]
    if job:
        exit_ = "-" if job["exit_code"] is None else f"{job['exit_code']}:{job['exit_signal'] or 0}"
        lines += [
            f"job {job['job_ref'] or job['job_id']} (id {job['job_id']}) on cluster {job['cluster'] or '-'} "
            f"({job['scheduler']}; record from {job['source']})",
            f"  user {job['user_name'] or '-'} (uid {job['uid'] if job['uid'] is not None else '-'}), "
            f"account {job['account'] or '-'}, partition {job['partition_name'] or '-'}, "
            f"name {job['job_name'] or '-'}",
            f"  nodes {job['nodes'] or '-'} ({job['node_list'] or '-'}), tasks {job['tasks'] or '-'}, "
            f"cpus {job['cpus'] or '-'}",
            f"  submitted {_when(job['submitted_at'])}, started {_when(job['started_at'])}, "
            f"ended {_when(job['ended_at'])}, state {job['state'] or '-'}, exit {exit_}",
        ]
        if job["array_job_id"]:
            lines.append(f"  array job {job['array_job_id']}, task {job['array_task_id']}")
    else:
        lines.append("no accounting record of the job is stored")
    for p in view["profiles"]:
        lines.append(
            f"profile:{p['id']}: {p['exe'] or '-'}, {p['processes'] or 0} processes on "
            f"{p['hosts'] or 0} hosts, "
            f"read {_mib(int(p['bytes_read'] or 0))}, written {_mib(int(p['bytes_written'] or 0))}, "
            f"run time {float(p['runtime_s'] or 0):.1f} s"
        )
    if not view["profiles"]:
        lines.append("no profile of the job is stored")
    lp = view["lustre_profile"]
    if view["profiles"]:
        lines.append(f"  on Lustre: read {_mib(lp['bytes_read'])}, written {_mib(lp['bytes_written'])}")
    js = view["job_stats"]
    if js:
        lines.append(
            f"Lustre job_stats ({', '.join(js['job_ids'])}; {js['servers']} servers, "
            f"{js['targets']} targets): "
            f"read {_mib(js['bytes_read'])} in {js['reads']:,} RPCs, written {_mib(js['bytes_written'])} in "
            f"{js['writes']:,} RPCs, metadata {sum(js['ops'].values()):,} operations"
        )
    else:
        lines.append("no Lustre job_stats samples of the job")
    for s in view["disagreements"]:
        lines.append(f"disagree: {s}")
    if not view["disagreements"] and (view["profiles"] or js):
        lines.append("no disagreement beyond the tolerance")
    return lines
