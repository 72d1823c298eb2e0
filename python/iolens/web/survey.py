"""The application I/O survey (staff): every job's I/O figures in one table, and the same per user or per
program; filtered, sorted and paged in SQL (store.portal_survey), and exported as CSV.

/survey       the page: filters (user, program, system, from/to, min_bytes), sort/dir, page, per (the second
              table: none, user or program)
/survey.csv   the same jobs (or groups, with per=user|program) as CSV, streamed batch by batch
"""

from __future__ import annotations

import csv
import io
import re
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from iolens.render import human_bytes
from iolens.report import text as fmt
from iolens.store import portal_survey as ps
from iolens.web import params
from iolens.web.pool import StorePool
from iolens.web.portal import Ctx, page

PAGE_SIZE = 50
GROUPS_SHOWN = 50
CSV_BATCH = 1000
_SIZE = re.compile(r"^(\d{1,16})\s*([kmgtp]?)(?:i?b)?$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
# A spreadsheet takes a cell starting with one of these as a formula (OWASP, "CSV Injection").
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


# --- parameters -------------------------------------------------------------------------------------------


def size(q: Any, name: str) -> int | None:
    """A byte count: digits with an optional k/m/g/t/p (powers of 1024), e.g. 1g or 1048576."""
    text = (q.get(name) or "").strip()
    if not text:
        return None
    m = _SIZE.match(text)
    if not m:
        raise params.bad(name, "expected a size in bytes, e.g. 1048576 or 1g")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def survey_filter(q: Any) -> ps.SurveyFilter:
    now = time.time()
    since = params.when(q["from"], "from", now) if q.get("from") else None
    until = params.when(q["to"], "to", now) if q.get("to") else None
    if since is not None and until is not None and until <= since:
        raise params.bad("from", "must be before to")
    return ps.SurveyFilter(
        user=params.text(q, "user", 128),
        program=params.text(q, "program", 200),
        system=_system(q),
        since=since,
        until=until,
        min_bytes=size(q, "min_bytes"),
    )


def _system(q: Any) -> str | None:
    """A system's name as the form's list gives it: any text (a name may hold control characters, and is only
    ever compared in SQL as a bound value), at most 200 characters."""
    value = q.get("system")
    if value is not None and len(value) > 200:
        raise params.bad("system", "expected a system's name of at most 200 characters")
    return value or None


def _sort(q: Any) -> tuple[str, bool]:
    sort = params.choice(q, "sort", tuple(ps.JOB_SORTS), "time")
    return sort, params.choice(q, "dir", ("desc", "asc"), "desc") == "desc"


def _per(q: Any) -> str:
    """The second table: per user, per program, or (none: the default) not shown. It adds up every job the
    filters select, so it is worked out only when asked for."""
    return params.choice(q, "per", ("none", *ps.GROUP_KEYS), "none")


# --- the page ---------------------------------------------------------------------------------------------


def program(exe: str | None) -> str:
    return (exe or "-").rsplit("/", 1)[-1] or "-"


def percent(share: float | None) -> str:
    return "-" if share is None else f"{share * 100:.1f}%"


def rate(bytes_per_s: float | None) -> str:
    return "-" if bytes_per_s is None else human_bytes(bytes_per_s) + "/s"


def seconds(s: float | None) -> str:
    return "-" if s is None else f"{s:,.1f} s"


def count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _figures(r: dict[str, Any]) -> dict[str, str]:
    """The figures both tables show, formatted."""
    return {
        "total": human_bytes(r["total_bytes"] or 0),
        "runtime": seconds(r["runtime_s"]),
        "io_share": percent(r["io_share"]),
        "io_speed": rate(r["io_bytes_per_s"]),
        "files": count(r["files"]),
        "meta_ops": count(r["meta_ops"]),
        "meta_share": percent(r["meta_share"]),
    }


def _job_cells(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": r["id"],
        "job_id": r["job_id"] or "-",
        "user": r["user_name"] or "-",
        "account": r["account"] if r["account"] is not None else "",
        "program": program(r["exe"]),
        "exe": r["exe"] or "",
        "system": r["system"] or "-",
        "started": fmt.when(r["started_at"]),
        "processes": count(r["processes"]),
        **_figures(r),
    }


def _group_cells(r: dict[str, Any], per: str) -> dict[str, Any]:
    name = str(r["grp"])
    return {
        "name": (program(name) if per == "program" else name) if name else "-",
        "full": name,
        "jobs": count(r["jobs"]),
        **_figures(r),
    }


def _kept(q: Any) -> dict[str, str]:
    """The filters as given, for links that change only the sort, the page or the format."""
    return {k: q[k] for k in ("user", "program", "system", "from", "to", "min_bytes") if q.get(k)}


@page(staff=True)
def survey_page(ctx: Ctx) -> Response:
    q = ctx.query
    f = survey_filter(q)
    sort, descending = _sort(q)
    per = _per(q)
    number = params.integer(q, "page", 1, 1, 1_000_000)
    db = ctx.store.db
    total = ps.job_count(db, f)
    rows = ps.job_page(db, f, sort, descending, PAGE_SIZE, (number - 1) * PAGE_SIZE)
    groups, group_total = (
        ps.group_page(db, f, per, sort, descending, GROUPS_SHOWN) if per != "none" else ([], 0)
    )
    kept = _kept(q)
    return ctx.render(
        "survey.html",
        jobs=[_job_cells(r) for r in rows],
        groups=[_group_cells(r, per) for r in groups],
        group_total=group_total,
        per=per,
        total=total,
        page=number,
        pages=max(1, -(-total // PAGE_SIZE)),
        sort=sort,
        dir="desc" if descending else "asc",
        kept=kept,
        values={k: q.get(k) or "" for k in ("user", "program", "system", "from", "to", "min_bytes")},
        systems=ps.system_names(db),
    )


# --- the CSV export ---------------------------------------------------------------------------------------

JOB_CSV = (
    ("profile_id", "id"), ("job_id", "job_id"), ("user", "user_name"), ("account", "account"),
    ("program", None), ("exe", "exe"), ("system", "system"), ("started_utc", None),
    ("processes", "processes"), ("run_time_s", "runtime_s"), ("bytes_read", "bytes_read"),
    ("bytes_written", "bytes_written"), ("total_bytes", "total_bytes"), ("io_time_s", "io_time_s"),
    ("io_time_share", "io_share"), ("io_bytes_per_s", "io_bytes_per_s"), ("files", "files"),
    ("meta_ops", "meta_ops"), ("meta_time_s", "meta_time_s"), ("meta_share_of_io_time", "meta_share"),
)  # fmt: skip
GROUP_CSV = (
    ("jobs", "jobs"), ("processes", "processes"), ("run_time_s", "runtime_s"), ("bytes_read", "bytes_read"),
    ("bytes_written", "bytes_written"), ("total_bytes", "total_bytes"), ("io_time_s", "io_time_s"),
    ("io_time_share", "io_share"), ("io_bytes_per_s", "io_bytes_per_s"), ("files", "files"),
    ("meta_ops", "meta_ops"), ("meta_time_s", "meta_time_s"), ("meta_share_of_io_time", "meta_share"),
)  # fmt: skip


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell that no spreadsheet runs: text starting with = + - @ tab or CR gets a leading '
    (OWASP); numbers stay numbers, unknown is empty."""
    if value is None:
        return ""
    if isinstance(value, str):
        return "'" + value if value.startswith(FORMULA_START) else value
    return value


def _utc(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _job_line(r: dict[str, Any]) -> list[Any]:
    extra = {"program": program(r["exe"]) if r["exe"] else None, "started_utc": _utc(r["started_at"])}
    return [csv_cell(r[key] if key else extra[name]) for name, key in JOB_CSV]


def _group_line(r: dict[str, Any]) -> list[Any]:
    return [csv_cell(r["grp"]), *(csv_cell(r[key]) for _, key in GROUP_CSV)]


def _stream(pool: StorePool, f: ps.SurveyFilter, per: str | None) -> Iterator[str]:
    """The CSV text, a batch at a time; each batch borrows a connection only while it is read (a slow
    client holds none)."""
    buf = io.StringIO()
    out = csv.writer(buf, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\r\n")
    if per is None:
        out.writerow([name for name, _ in JOB_CSV])
    else:
        out.writerow([per] + [name for name, _ in GROUP_CSV])
    after_id, after_key = 0, None
    while True:
        with pool.store() as store:
            if per is None:
                rows = ps.job_batch(store.db, f, after_id, CSV_BATCH)
            else:
                rows = ps.group_batch(store.db, f, per, after_key, CSV_BATCH)
        for r in rows:
            out.writerow(_job_line(r) if per is None else _group_line(r))
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()
        if len(rows) < CSV_BATCH:
            return
        after_id, after_key = int(rows[-1].get("id") or 0), str(rows[-1].get("grp"))


@page(staff=True)
def survey_csv(ctx: Ctx) -> Response:
    q = ctx.query
    f = survey_filter(q)
    per = params.choice(q, "per", ("job", *ps.GROUP_KEYS), "job")
    name = "iolens-survey" + ("" if per == "job" else f"-per-{per}") + ".csv"
    return StreamingResponse(
        _stream(ctx.portal.pool, f, None if per == "job" else per),
        media_type="text/csv; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{name}"'},
    )


ROUTES: list[BaseRoute] = [
    Route("/survey", survey_page),
    Route("/survey.csv", survey_csv),
]
