"""Staff dashboards: monitoring of nodes and file systems (/monitor) and the jobs that loaded the storage
most (/top), both over a chosen time window.

/monitor draws the samples of the chosen hosts, one panel per source and unit, rates by default (gauges or
counters when asked), downsampled by the database (web/panels.py). /top ranks jobs by bytes, read and write
calls, or metadata operations twice, side by side: as Lustre's job_stats counted them on the servers within
the window, and as the profiles of jobs that ran in the window recorded them.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from starlette.datastructures import QueryParams
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from iolens.render import human_bytes
from iolens.store import portal_monitor
from iolens.web import panels, params
from iolens.web.portal import Ctx, page

MAX_HOSTS = 64
DEFAULT_LINES = 8
TOP_LABELS = {"bytes": "bytes moved", "ops": "read and write calls", "meta": "metadata operations"}
KIND_LABELS = {"rates": "rates (per second)", "gauges": "levels (gauges)", "counters": "cumulative counters"}


def clock(t: float | None) -> str:
    """A time as the portal's dashboards show it: UTC, as their time picker."""
    if t is None:
        return "-"
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def picker_value(t: float) -> str:
    """A time as the picker's datetime-local field shows it (UTC)."""
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def host_names(q: QueryParams, known: list[str]) -> list[str]:
    """`?host=a&host=b` or `?host=a,b` (a value that is not a host's name is read as a list): hosts that
    have series; 400 naming `host` otherwise."""
    have = set(known)
    out: list[str] = []
    for raw in q.getlist("host"):
        for name in [raw] if raw in have else raw.split(","):
            if name.strip() and name not in out:
                out.append(name)
    if len(out) > MAX_HOSTS:
        raise params.bad("host", f"at most {MAX_HOSTS} hosts")
    if any(name not in have for name in out):
        raise params.bad("host", "no samples are stored for this host")
    return out


def _window(ctx: Ctx, default: str) -> tuple[float, float, dict[str, Any]]:
    """The window asked for, and what the page's time picker and heading show of it."""
    t0, t1 = params.window(ctx.query, default)
    shown = {
        "window": (clock(t0), clock(t1)),
        "t_from": picker_value(t0),
        "t_to": picker_value(t1),
        "raw": {"from": ctx.query.get("from") or default, "to": ctx.query.get("to") or "now"},
        "presets": params.PRESETS,
    }
    return t0, t1, shown


@page(staff=True)
def monitor(ctx: Ctx) -> Response:
    q = ctx.query
    t0, t1, picker = _window(ctx, "now-6h")
    db = ctx.store.db
    known = portal_monitor.hosts(db)
    chosen = host_names(q, known) or known[:1]
    sources = portal_monitor.sources(db, chosen)
    source = params.choice(q, "source", ("", *sources), "") or None
    kind = params.choice(q, "kind", portal_monitor.KINDS, "rates")
    match = params.text(q, "match", 100)
    lines = params.integer(q, "lines", DEFAULT_LINES, 1, 30)
    series = portal_monitor.find_series(db, chosen, kind, source, match, limit=panels.MAX_SERIES + 1)
    too_many = len(series) > panels.MAX_SERIES
    figs, hidden = panels.figures(db, series[: panels.MAX_SERIES], t0, t1, lines)
    keep: dict[str, Any] = {"host": ",".join(chosen), "source": source or "", "kind": kind,
                            "match": match or "", "lines": lines}  # fmt: skip
    return ctx.render(
        "monitor.html",
        figures=figs,
        hosts=known,
        chosen=chosen,
        sources=sources,
        source=source or "",
        kind=kind,
        kinds=KIND_LABELS,
        match=match or "",
        lines=lines,
        series_count=min(len(series), panels.MAX_SERIES),
        too_many=too_many,
        hidden_panels=hidden,
        keep={k: v for k, v in keep.items() if v != ""},
        **picker,
    )


def _rate(count: float, seconds: float | None) -> str:
    if not seconds or seconds <= 0:
        return "-"
    x = count / seconds
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}" if x >= 1 else f"{x:.2g}"


def _job_stats_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        ops = float(r["reads"] or 0) + float(r["writes"] or 0)
        span = float(r["t_last"]) - float(r["t_first"])
        out.append(
            {
                "job": r["job"],
                "read": human_bytes(int(r["bytes_read"] or 0)),
                "written": human_bytes(int(r["bytes_written"] or 0)),
                "ops": f"{int(ops):,}",
                "iops": _rate(ops, span),
                "meta": f"{int(r['meta_ops'] or 0):,}",
                "servers": r["servers"],
                "targets": r["targets"],
                "seen": f"{clock(r['t_first'])} – {clock(r['t_last'])}",
            }
        )
    return out


def _profile_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        ops = int(r["reads"]) + int(r["writes"])
        out.append(
            {
                "id": r["id"],
                "job_id": r["job_id"] or "-",
                "user": r["user_name"] or "-",
                "program": (r["exe"] or "-").rsplit("/", 1)[-1],
                "system": r["system"] or "-",
                "started": clock(r["started_at"]),
                "read": human_bytes(int(r["bytes_read"])),
                "written": human_bytes(int(r["bytes_written"])),
                "ops": f"{ops:,}",
                "iops": _rate(ops, r["runtime_s"]),
                "meta": f"{int(r['meta_ops']):,}",
            }
        )
    return out


@page(staff=True)
def top(ctx: Ctx) -> Response:
    q = ctx.query
    t0, t1, picker = _window(ctx, "now-24h")
    by = params.choice(q, "by", portal_monitor.TOP_SORTS, "bytes")
    limit = params.integer(q, "limit", 20, 1, 200)
    db = ctx.store.db
    lustre = _job_stats_rows(portal_monitor.job_stats_top(db, t0, t1, by, limit))
    profiled = _profile_rows(portal_monitor.profile_top(db, t0, t1, by, limit))
    return ctx.render(
        "top.html",
        lustre=lustre,
        profiled=profiled,
        by=by,
        by_labels=TOP_LABELS,
        limit=limit,
        keep={"by": by, "limit": limit},
        **picker,
    )


ROUTES: list[BaseRoute] = [
    Route("/monitor", monitor),
    Route("/top", top),
]
