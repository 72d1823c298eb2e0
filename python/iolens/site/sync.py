"""`iolens site sync`: store what the epilog deferred or could not store, and bring in the accounting
records of all jobs (sacct), profiled or not. Run it periodically (cron, a systemd timer): every step is
idempotent (a profile is stored once, by the hash of its logs; a job is one row, updated)."""

from __future__ import annotations

import time
from pathlib import Path

from iolens.site.config import SiteConfig
from iolens.site.epilog import FACTS, LOCK, store_job_dir
from iolens.store import sched_jobs
from iolens.store.store import Store

# A directory the epilog may still be working on is left alone this long.
MIN_AGE_S = 60.0
LAST_SYNC = ".iolens-last-sync"  # in the log directory: when sacct was last asked, to start from there


def pending_dirs(cfg: SiteConfig, now: float, min_age_s: float = MIN_AGE_S) -> list[Path]:
    """The job directories whose epilog ran (facts written) at least min_age_s ago."""
    out = []
    try:
        entries = sorted(cfg.spool.iterdir())
    except OSError:
        return []
    for d in entries:
        try:
            if (d / FACTS).stat().st_mtime <= now - min_age_s:
                out.append(d)
        except OSError:
            continue
    return out


def store_pending(cfg: SiteConfig, now: float, min_age_s: float = MIN_AGE_S) -> list[str]:
    lines = []
    for d in pending_dirs(cfg, now, min_age_s):
        try:
            r = store_job_dir(cfg, d)
            lines.append(f"{d.name}: {r['what']}: {r['detail']}")
        except Exception as exc:  # noqa: BLE001 - one job's trouble does not stop the others
            (d / LOCK).unlink(missing_ok=True)
            lines.append(f"{d.name}: not stored (kept for the next sync): {exc}")
    return lines


def last_sync(cfg: SiteConfig) -> float | None:
    try:
        return float((cfg.log_dir / LAST_SYNC).read_text().strip())
    except (OSError, ValueError):
        return None


def import_accounting(cfg: SiteConfig, read: object, store: Store) -> str:
    from iolens.site.sacct import SacctRead

    assert isinstance(read, SacctRead)
    for job in read.jobs:
        job.cluster = cfg.cluster or job.cluster
    new, updated, same = sched_jobs.put_jobs(store.db, read.jobs)
    return f"{len(read.jobs)} jobs: {new} new, {updated} updated, {same} unchanged"


def sync_accounting(cfg: SiteConfig, since: float | None, now: float) -> str:
    from iolens.site import sacct

    start = since if since is not None else (last_sync(cfg) or now - 86400.0) - 600.0
    read = sacct.run_sacct(start)
    with Store.open(cfg.db, create=True) as store:
        said = import_accounting(cfg, read, store)
    try:
        (cfg.log_dir / LAST_SYNC).write_text(f"{now}\n")
    except OSError:
        pass
    return f"sacct since {time.strftime('%Y-%m-%d %H:%M', time.localtime(start))}: {said}"
