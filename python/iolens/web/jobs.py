"""A user's jobs (their profiles): the list, and each job's page.

A user sees only jobs whose profile names them as the user; staff see every job (and can filter by user).
A job's page: its survey row (the I/O summary), the job against its system's latest benchmarks
(job_storage.py), its layers, timeline, advice, access sizes and top files (report/html.py's parts, as the
static report shows them), and the user's earlier runs of the same program (job_parts.py).
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from iolens.render import human_bytes
from iolens.report import html as report_html
from iolens.report import text as fmt
from iolens.report.printable import printable
from iolens.site import compare as site_compare
from iolens.store import portal_jobs, sched_jobs
from iolens.web import job_parts, job_storage, params
from iolens.web.portal import Ctx, page

PAGE_SIZE = 50
EARLIER_RUNS = 50


def _owner(ctx: Ctx) -> str | None:
    """The user whose jobs the viewer may see: None (all) for staff."""
    return None if ctx.staff else ctx.user


def io_share(job: dict[str, object]) -> str:
    io = sum(float(job.get(k) or 0) for k in ("read_time_s", "write_time_s", "meta_time_s"))
    procs = int(job.get("processes") or 0)
    runtime = float(job.get("runtime_s") or 0)
    if not runtime or not procs:
        return "-"
    # Not capped: threads of a process can do I/O at once (as the survey and the job page count it).
    return f"{io / (runtime * procs) * 100:.1f}%"


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


@page()
def job_page(ctx: Ctx) -> Response:
    """One job: ownership first (another user's job is the same 404 as none), then its parts."""
    profile_id = int(ctx.request.path_params["id"])
    job = portal_jobs.job(ctx.store.db, profile_id, _owner(ctx))
    db = ctx.store.db
    survey = portal_jobs.survey_row(db, profile_id)
    doc = portal_jobs.job_document(db, profile_id)
    figs = job_storage.figures(portal_jobs.latest_benchmarks(db, job["system_id"]))
    report = report_html.Page("", "")  # collects the figures of the report's parts
    parts = [
        (title, printable(body))  # control characters in paths shown as escapes (the parts are one line)
        for title, body in (
            ("Layers stacked, per file", report_html.stacks_body(doc)),
            ("Timeline", report_html.timeline_body(report, doc)),
            ("Advice", report_html.advice_body(doc)),
            ("Access size histogram", report_html.access_sizes_body(report, doc)),
            ("Top files", report_html.top_files_body(report, ctx.store, profile_id, doc)),
        )
        if body is not None
    ]
    earlier = portal_jobs.earlier_runs(db, job["user_name"], job["exe"], job["started_at"], EARLIER_RUNS)
    sched = sched_jobs.profile_job(db, profile_id, job["job_id"])
    batch = batch_view(site_compare.overview(db, sched, [profile_id], job["job_id"]))
    figures = list(report.figures)
    if len(earlier) > 1:
        figures.append(("earlier-plot", job_parts.earlier_figure(earlier, profile_id)))
    return ctx.render(
        "job.html",
        figures=figures,
        job={k: printable(v) if isinstance(v, str) else v for k, v in job.items()},
        started=fmt.when(job["started_at"]),
        ended=fmt.when(job["ended_at"]),
        survey=job_parts.survey_table(survey),
        layers=job_parts.layer_rows(doc.get("layers") or {}),
        layer_headers=job_parts.LAYER_HEADERS,
        storage=job_storage.compare(survey, figs),
        bench=figs,
        parts=parts,
        earlier=job_parts.earlier_table(earlier, profile_id),
        earlier_most=EARLIER_RUNS,
        batch=batch,
    )


def batch_view(view: dict[str, object]) -> dict[str, object]:
    """The job's batch-system record and Lustre job_stats as rows, and the sentences where they disagree with
    the profile (site/compare.py)."""
    sched = view["job"]
    facts: list[tuple[str, str]] = []
    if isinstance(sched, dict):
        exit_ = "-" if sched["exit_code"] is None else f"{sched['exit_code']}:{sched['exit_signal'] or 0}"
        facts = [
            (
                "job",
                f"{sched['job_ref'] or sched['job_id']} on {sched['cluster'] or '-'} ({sched['scheduler']})",
            ),
            ("state", f"{sched['state'] or '-'} (exit {exit_})"),
            ("account", sched["account"] or "-"),
            ("partition", sched["partition_name"] or "-"),
            ("nodes", f"{sched['nodes'] or '-'} ({sched['node_list'] or '-'})"),
            ("tasks", str(sched["tasks"] or "-")),
            ("started", fmt.when(sched["started_at"])),
            ("ended", fmt.when(sched["ended_at"])),
            ("record from", str(sched["source"])),
        ]
    stats = view["job_stats"]
    lustre: list[tuple[str, str, str]] = []
    mine = view["lustre_profile"]
    if isinstance(stats, dict) and isinstance(mine, dict):
        lustre = [
            ("bytes read", human_bytes(mine["bytes_read"]), human_bytes(stats["bytes_read"])),
            ("bytes written", human_bytes(mine["bytes_written"]), human_bytes(stats["bytes_written"])),
        ]
    return {"facts": facts, "lustre": lustre, "job_stats": stats, "disagree": view["disagreements"]}


ROUTES: list[BaseRoute] = [
    Route("/jobs", job_list),
    Route("/jobs/{id:int}", job_page),
]
