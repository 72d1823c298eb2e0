"""A user's jobs (their profiles): the list, and each job's page.

A user sees only jobs whose profile names them as the user; staff see every job (and can filter by user).
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from iolens.render import human_bytes
from iolens.report import text as fmt
from iolens.store import portal_jobs
from iolens.web import params
from iolens.web.portal import Ctx, page

PAGE_SIZE = 50


def _owner(ctx: Ctx) -> str | None:
    """The user whose jobs the viewer may see: None (all) for staff."""
    return None if ctx.staff else ctx.user


def io_share(job: dict[str, object]) -> str:
    io = sum(float(job.get(k) or 0) for k in ("read_time_s", "write_time_s", "meta_time_s"))
    procs = int(job.get("processes") or 0)
    runtime = float(job.get("runtime_s") or 0)
    if not runtime or not procs:
        return "-"
    return f"{min(io / (runtime * procs), 1.0) * 100:.1f}%"


@page()
def job_list(ctx: Ctx) -> Response:
    q = ctx.query
    sort = params.choice(q, "sort", tuple(portal_jobs.JOB_SORTS), "time")
    number = params.integer(q, "page", 1, 1, 1_000_000)
    user = params.text(q, "user", 128) if ctx.staff else None
    rows, total = portal_jobs.job_list(
        ctx.store.db, _owner(ctx), user=user, sort=sort, limit=PAGE_SIZE, offset=(number - 1) * PAGE_SIZE
    )
    jobs = [
        {
            "id": r["id"],
            "job_id": r["job_id"] or "-",
            "user": r["user_name"] or "-",
            "program": (r["exe"] or "-").rsplit("/", 1)[-1],
            "system": r["system"] or "-",
            "started": fmt.when(r["started_at"]),
            "runtime": f"{r['runtime_s']:.1f} s" if r["runtime_s"] is not None else "-",
            "read": human_bytes(r["bytes_read"] or 0),
            "written": human_bytes(r["bytes_written"] or 0),
            "meta": f"{r['meta_ops'] or 0:,}",
            "io_share": io_share(r),
            "processes": r["processes"] or "-",
        }
        for r in rows
    ]
    pages = max(1, -(-total // PAGE_SIZE))
    return ctx.render(
        "jobs.html", jobs=jobs, total=total, page=number, pages=pages, sort=sort, user_filter=user or ""
    )


ROUTES: list[BaseRoute] = [
    Route("/jobs", job_list),
]
