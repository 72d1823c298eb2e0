"""The batch system's jobs (accounting records) and what the database knows of each: its profiles and
the Lustre job_stats the monitor sampled under its job id (docs/site.md).

A job is (cluster, job_id), job_id the raw id (Slurm's JobIDRaw: an array task's own id, the id the
profiler and Lustre's jobid_var=SLURM_JOB_ID record). put_jobs() inserts or updates: the same job imported
again is the same row, its facts replaced by the newer ones, except that a record from the epilog (the job's
environment, before the controller has the final state) never replaces one from sacct.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from iolens.store.db import Database
from iolens.store.queries import NotFound

# Where a record came from; a later record replaces an earlier one unless it ranks lower.
SOURCES = {"epilog": 0, "pbs-hook": 0, "sacct": 1}


@dataclass
class SchedJob:
    """One job as the batch system accounts for it. Times are seconds since the epoch."""

    scheduler: str  # "slurm", "pbs"
    cluster: str
    job_id: str
    source: str  # SOURCES
    job_ref: str | None = None  # as the scheduler shows it: "1234_7" for an array task, "1234+1" het job
    array_job_id: str | None = None
    array_task_id: str | None = None
    job_name: str | None = None
    user_name: str | None = None
    uid: int | None = None
    account: str | None = None
    partition_name: str | None = None
    nodes: int | None = None
    tasks: int | None = None
    cpus: int | None = None
    node_list: str | None = None
    submitted_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    elapsed_s: float | None = None
    state: str | None = None
    exit_code: int | None = None
    exit_signal: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


COLUMNS = tuple(f.name for f in fields(SchedJob))
_KEY = ("cluster", "job_id")


# Stored rows are looked up this many job ids at a time (a day's sacct of a big center is 100,000 jobs).
LOOKUP_BATCH = 500


def _stored(db: Database, jobs: Sequence[SchedJob]) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    by_cluster: dict[str, list[str]] = {}
    for job in jobs:
        by_cluster.setdefault(job.cluster, []).append(job.job_id)
    for cluster, ids in by_cluster.items():
        for at in range(0, len(ids), LOOKUP_BATCH):
            chunk = ids[at : at + LOOKUP_BATCH]
            rows = db.query_dicts(
                f"SELECT id, {', '.join(COLUMNS)} FROM sched_jobs WHERE cluster = ?"
                f" AND job_id IN ({', '.join('?' for _ in chunk)})",
                [cluster, *chunk],
            )
            out.update({(r["cluster"], r["job_id"]): r for r in rows})
    return out


def put_jobs(db: Database, jobs: Iterable[SchedJob]) -> tuple[int, int, int]:
    """Insert or update jobs in one transaction: (new, updated, unchanged). A field the newer record does not
    know (None) keeps the stored value; a record of a lower-ranked source than the stored row's only fills
    the fields the row lacks. The same job twice in `jobs`: the later one wins."""
    latest = {(j.cluster, j.job_id): j for j in jobs}
    new = updated = same = 0
    with db.transaction():
        stored = _stored(db, list(latest.values()))
        now = time.time()
        for key, job in latest.items():
            values = job.as_dict()
            old = stored.get(key)
            if old is None:
                cols = (*COLUMNS, "updated_at")
                db.execute(
                    f"INSERT INTO sched_jobs ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                    (*values.values(), now),
                )
                new += 1
                continue
            lower = SOURCES.get(job.source, 0) < SOURCES.get(str(old["source"]), 0)
            merged = {
                k: (old[k] if (v is None or (lower and old[k] is not None)) else v)
                for k, v in values.items()
                if k not in _KEY
            }
            if lower:
                merged["source"] = old["source"]
            if all(merged[k] == old[k] for k in merged):
                same += 1
                continue
            sets = ", ".join(f"{k} = ?" for k in merged)
            db.execute(
                f"UPDATE sched_jobs SET {sets}, updated_at = ? WHERE id = ?",
                (*merged.values(), now, old["id"]),
            )
            updated += 1
    return new, updated, same


def link_profile(db: Database, profile_id: int, cluster: str, job_id: str) -> None:
    """Say that a profile is the given job's (the site epilog stored it for that job)."""
    with db.transaction():
        db.execute(
            "INSERT INTO sched_job_profiles (profile_id, cluster, job_id) VALUES (?, ?, ?)"
            " ON CONFLICT (profile_id) DO UPDATE SET cluster = excluded.cluster, job_id = excluded.job_id",
            (profile_id, cluster, job_id),
        )


# --- reading ------------------------------------------------------------------------------------------


def find_jobs(db: Database, job_id: str, cluster: str | None = None) -> list[dict[str, Any]]:
    """The accounting rows of a job id (one per cluster that has it), by raw id or as shown ("1234_7")."""
    clauses = ["(job_id = ? OR job_ref = ?)"]
    params: list[Any] = [job_id, job_id]
    if cluster is not None:
        clauses.append("cluster = ?")
        params.append(cluster)
    return db.query_dicts(
        f"SELECT id, {', '.join(COLUMNS)}, updated_at FROM sched_jobs WHERE {' AND '.join(clauses)}"
        " ORDER BY cluster",
        params,
    )


def job_profile_ids(
    db: Database, cluster: str | None, job_id: str, owner_names: Sequence[str] | None
) -> list[int]:
    """The profiles of a job: those the epilog linked to (cluster, job_id), and the profiles with that job id
    that no link puts in another cluster (a profile imported from its logs knows its job id, not its
    cluster). `owner_names`: only profiles stored under one of these users (None: any)."""
    owner = ""
    params: list[Any] = []
    if owner_names is not None:
        owner = f" AND p.user_name IN ({', '.join('?' for _ in owner_names)})"
    linked = db.query(
        "SELECT l.profile_id FROM sched_job_profiles l JOIN profiles p ON p.id = l.profile_id"
        f" WHERE l.job_id = ? AND l.cluster = ?{owner}",
        [job_id, cluster or "", *(owner_names or [])],
    )
    params = [job_id, *(owner_names or [])]
    loose = db.query(
        "SELECT p.id FROM profiles p LEFT JOIN sched_job_profiles l ON l.profile_id = p.id"
        f" WHERE p.job_id = ? AND l.profile_id IS NULL{owner}",
        params,
    )
    return sorted({int(r[0]) for r in linked} | {int(r[0]) for r in loose})


def profile_job(db: Database, profile_id: int, job_id: str | None) -> dict[str, Any] | None:
    """The accounting row of a profile's job: the one the epilog linked it to, else the only row with its job
    id (None when there is none, or several clusters have that id)."""
    row = db.query_one("SELECT cluster, job_id FROM sched_job_profiles WHERE profile_id = ?", (profile_id,))
    if row is not None:
        rows = find_jobs(db, str(row[1]), str(row[0]))
    elif job_id:
        rows = [r for r in find_jobs(db, job_id) if r["job_id"] == job_id]
    else:
        rows = []
    return rows[0] if len(rows) == 1 else None


def get_job(db: Database, ref: str) -> dict[str, Any]:
    """The accounting row of `ref`: JOBID or CLUSTER:JOBID (NotFound when none; when several clusters have
    the id, NotFound says which to name)."""
    cluster, sep, job_id = ref.rpartition(":")
    rows = find_jobs(db, job_id, cluster if sep else None)
    if not rows:
        raise NotFound(
            f"no job {ref} in the database (import its accounting record: iolens db import --sacct)"
        )
    if len(rows) > 1:
        names = ", ".join(f"{r['cluster']}:{job_id}" for r in rows)
        raise NotFound(f"job {ref} is in several clusters: name one of {names}")
    return rows[0]


# --- Lustre job_stats of a job ------------------------------------------------------------------------------

# The job_stats operations whose `sum` is bytes; every other operation's `samples` is a count of calls.
_BYTES_OPS = ("read_bytes", "write_bytes")
_TIME_OPS = ("read", "write")  # Lustre 2.15+: time in reads and writes (usecs), not calls


def _like(pattern: str) -> str:
    """A job_stats id pattern ('*' any text) as the LIKE pattern of its series' targets."""
    from iolens.store.portal_monitor import like_escape

    return r"%.job\_stats/jobs/" + like_escape(pattern).replace("*", "%") + r"/counters/%"


def job_stats_totals(db: Database, patterns: Sequence[str], t0: float, t1: float) -> dict[str, Any] | None:
    """What Lustre's servers counted for the job ids matching `patterns` ('*': any text) within [t0, t1],
    added up over every server and target: bytes_read, bytes_written, reads, writes, ops (other operations by
    name: their call counts), servers, targets, job_ids (the ids that matched), t_first, t_last. None when no
    sample matched.

    A counter's growth within the window: its first sample's value (a job's entry starts from zero when Lustre
    first sees the job id, so a job sampled from its start counts everything; an entry left from an earlier
    job with the same id would count too: docs/site.md), plus each rise, plus the value after a fall (Lustre
    dropped the idle job and counted it anew)."""
    if not patterns:
        return None
    likes = [_like(p) for p in patterns]
    ors = " OR ".join("target LIKE ? ESCAPE '\\'" for _ in likes)
    rows = db.query(
        "WITH js AS (SELECT id, host, target, metric FROM series WHERE source = 'lustre'"
        f" AND metric IN ('sum', 'samples') AND ({ors})),"
        " d AS (SELECT s.series_id AS series_id, s.t AS t, s.value AS v,"
        " s.value - LAG(s.value) OVER (PARTITION BY s.series_id ORDER BY s.t) AS dv"
        " FROM samples s WHERE s.series_id IN (SELECT id FROM js) AND s.t >= ? AND s.t <= ?)"
        " SELECT js.host, js.target, js.metric, MIN(d.t), MAX(d.t),"
        " SUM(CASE WHEN d.dv IS NULL OR d.dv < 0 THEN d.v ELSE d.dv END)"
        " FROM d JOIN js ON js.id = d.series_id GROUP BY js.id, js.host, js.target, js.metric",
        [*likes, t0, t1],
    )
    if not rows:
        return None
    out: dict[str, Any] = {"bytes_read": 0, "bytes_written": 0, "reads": 0, "writes": 0, "ops": {}}
    servers, targets, ids = set(), set(), set()
    t_first, t_last = float("inf"), float("-inf")
    for host, target, metric, first, last, grown in rows:
        head, _, rest = str(target).partition(".job_stats/jobs/")
        job, _, op = rest.rpartition("/counters/")
        if not op or "/" in op:
            continue
        value = int(round(float(grown or 0)))
        servers.add(host)
        targets.add(head)
        ids.add(job)
        t_first, t_last = min(t_first, float(first)), max(t_last, float(last))
        if op in _BYTES_OPS:
            key = "bytes_read" if op == "read_bytes" else "bytes_written"
            if metric == "sum":
                out[key] += value
            else:
                out["reads" if op == "read_bytes" else "writes"] += value
        elif metric == "samples" and op not in _TIME_OPS:
            out["ops"][op] = out["ops"].get(op, 0) + value
    out.update(
        servers=len(servers), targets=len(targets), job_ids=sorted(ids), t_first=t_first, t_last=t_last
    )
    return out


# --- the site's settings the views need -------------------------------------------------------------------

# Kept in iolens_meta by `iolens site install`, read by the job views (portal, `iolens db show job:ID`),
# which do not see the site's settings file.
VIEW_SETTINGS = {"lustre_jobid": "%j", "tolerance": "0.10"}


def set_view_settings(db: Database, values: dict[str, str]) -> None:
    with db.transaction():
        for key, value in values.items():
            db.execute(
                "INSERT INTO iolens_meta (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (f"site.{key}", value),
            )


def view_settings(db: Database) -> dict[str, str]:
    rows = db.query("SELECT key, value FROM iolens_meta WHERE key LIKE 'site.%'")
    out = dict(VIEW_SETTINGS)
    out.update({str(k)[5:]: str(v) for k, v in rows if str(k)[5:] in VIEW_SETTINGS})
    return out
