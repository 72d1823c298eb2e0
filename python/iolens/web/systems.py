"""The staff's benchmark pages: the systems, a system's history and IO500 list, runs, and run comparison.

/systems lists every system; /systems/NAME shows its main phases over time (one line per configuration and
page-cache mode, regressions in red) with the regression checks of `iolens db regressions`, and its IO500
runs; /runs lists runs, /runs/ID is a run's report (report/html.py's run page inside the portal);
/compare?runs=A,B is `iolens compare` as a page. System names come from users: they are shown through
printable() (control characters as escapes) and autoescaped, and put in links percent-encoded.
"""

from __future__ import annotations

import html
import re
import urllib.parse
from collections import defaultdict
from typing import Any

from markupsafe import Markup
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from iolens.render import latency
from iolens.report import html as report_html
from iolens.report import text as fmt
from iolens.report.printable import printable
from iolens.store import portal_bench, queries
from iolens.web import params
from iolens.web.portal import Ctx, page

PAGE_SIZE = 50
MAX_TREND_PLOTS = 12
MAX_TREND_POINTS = 2000  # per plot: the latest runs beyond it are left out (said under the plot)
MIN_HISTORY = 3  # as `iolens db regressions`
MIXED_MARK = fmt.MIXED_MARK.strip()
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def system_url(name: str) -> str:
    return "/systems/" + urllib.parse.quote(name, safe="")


def runs_url(**query: Any) -> str:
    return "/runs?" + urllib.parse.urlencode({k: v for k, v in query.items() if v not in (None, "")})


def validity_word(valid: bool | None, status: str = "ok") -> str:
    if status != "ok":
        return "failed"
    return "-" if valid is None else ("valid" if valid else "INVALID")


def attribute(value: str) -> Markup:
    """Text for an attribute value that the browser gives back unchanged (a form field's): escaped, with
    control characters as character references, so that none is sent raw."""
    return Markup(_CONTROL.sub(lambda m: f"&#{ord(m.group(0))};", html.escape(value, quote=True)))


def _pages(total: int) -> int:
    return max(1, -(-total // PAGE_SIZE))


def _name_param(ctx: Ctx, name: str) -> str | None:
    """A system name filter: any text a system may be named (control characters included), bounded."""
    value = ctx.query.get(name)
    if value is None or value == "":
        return None
    if len(value) > 1000 or "\x00" in value:
        raise params.bad(name, "expected a system name")
    return value


# --- /systems -----------------------------------------------------------------------------------------


@page(staff=True)
def systems_list(ctx: Ctx) -> Response:
    rows = [
        {
            "name": printable(r["name"]),
            "url": system_url(r["name"]),
            "site": printable(r["site"] or "-"),
            "fs": printable(r["fs_type"] or "-"),
            "runs": r["runs"],
            "runs_url": runs_url(system=r["name"]),
            "profiles": r["profiles"],
            "last_run": fmt.when(r["last_run"]),
            "score": f"{r['io500_score']:.3f}" if r["io500_score"] is not None else "-",
            "score_run": r["io500_run"],
            "score_valid": validity_word(r["io500_valid"]) if r["io500_run"] is not None else "",
        }
        for r in portal_bench.systems_overview(ctx.store.db)
    ]
    return ctx.render("systems.html", systems=rows)


# --- /systems/NAME ------------------------------------------------------------------------------------


def _main_phases(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The phases to plot: a tool's scores where it has them (IO500's score, BW and MD), else its phases."""
    with_scores = {p["tool"] for p in found if p["kind"] == "score"}
    order = {"score": 0, "bw": 1, "md": 2}
    chosen = [p for p in found if (p["kind"] == "score") == (p["tool"] in with_scores)]
    return sorted(chosen, key=lambda p: (p["tool"], order.get(p["name"], 9), p["seq"]))


def _history(
    ctx: Ctx, name: str, system_id: int, checks: list[queries.RegressionCheck]
) -> tuple[list[Any], list[Any], int]:
    """One plot per main phase (its regressions marked), as (element id, figure) pairs and their labels."""
    phases = _main_phases(portal_bench.main_phases(ctx.store.db, system_id))
    flagged: dict[tuple[str, str], set[int]] = defaultdict(set)
    for c in checks:
        if c.regression:
            flagged[(c.tool, c.phase)].add(c.run_id)
    figures, plots = [], []
    for i, p in enumerate(phases[:MAX_TREND_PLOTS]):
        rows = queries.trend(ctx.store.db, p["name"], name, p["tool"], limit=MAX_TREND_POINTS)
        marks = flagged.get((p["tool"], p["name"]), set())
        fig = report_html.trend_figure(rows, p["name"], None, by_cache_mode=True, regressions=marks)
        fig["layout"]["title"]["text"] = f"{p['tool']} {p['name']}: {len(rows)} run(s)" + (
            f", {len(marks)} regression(s) in red" if marks else ""
        )
        report_html.axis_titles(fig["layout"])
        fid = f"trend{i}"
        figures.append((fid, fig))
        plots.append({"id": fid, "tool": p["tool"], "phase": p["name"], "regressions": len(marks),
                      "capped": p["runs"] > MAX_TREND_POINTS})  # fmt: skip
    return figures, plots, max(0, len(phases) - MAX_TREND_PLOTS)


def _check_row(c: queries.RegressionCheck) -> dict[str, Any]:
    if c.regression:
        verdict = "REGRESSION"
    elif c.history < MIN_HISTORY:
        verdict = f"too few earlier runs ({c.history})"
    else:
        verdict = "ok"
    return {
        "tool": c.tool,
        "phase": c.phase,
        "config": (c.config_hash or "-")[:12] + (f" {c.cache_mode}" if c.cache_mode else ""),
        "run": c.run_id,
        "when": fmt.when(c.started_at),
        "value": fmt.value(c.value, c.unit),
        "median": f"{fmt.value(c.median, c.unit)} ({c.history})"
        if c.median is not None
        else f"- ({c.history})",
        "change": f"{0.0 - c.drop * 100:+.1f}%" if c.drop is not None else "-",  # no "-0.0%"
        "verdict": verdict,
        "regression": c.regression,
    }


@page(staff=True)
def system_page(ctx: Ctx) -> Response:
    name = ctx.request.path_params["name"]
    sys_row = portal_bench.system(ctx.store.db, name)
    number = params.integer(ctx.query, "page", 1, 1, 1_000_000)
    checks = queries.regressions(ctx.store.db, min_history=MIN_HISTORY, system=name)
    figures, plots, more_plots = _history(ctx, name, sys_row["id"], checks)
    runs, total = portal_bench.io500_runs(ctx.store.db, sys_row["id"], PAGE_SIZE, (number - 1) * PAGE_SIZE)
    io500 = [
        {
            "id": r["id"],
            "when": fmt.when(r["started_at"]),
            "score": f"{r['score']:.3f}" if r["score"] is not None else "-",
            "bw": f"{r['bw']:.3f}" if r["bw"] is not None else "-",
            "md": f"{r['md']:.3f}" if r["md"] is not None else "-",
            "validity": validity_word(r["valid"], r["status"]),
            "origin": "IO500 app" if r["origin"] == "io500-app" else r["origin"],
            "ranks": r["ranks"] or "-",
            "cache_mode": r["cache_mode"] or "-",
        }
        for r in runs
    ]
    pages = _pages(total)
    base = system_url(name)
    return ctx.render(
        "system.html",
        figures=figures,
        system=sys_row,
        name=printable(name),
        site=printable(sys_row["site"] or "-"),
        fs=printable(" ".join(x for x in (sys_row["fs_type"], sys_row["fs_version"]) if x) or "-"),
        description=printable(sys_row["description"] or ""),
        runs_url=runs_url(system=name),
        plots=plots,
        more_plots=more_plots,
        checks=[_check_row(c) for c in checks],
        flagged=sum(1 for c in checks if c.regression),
        io500=io500,
        io500_total=total,
        page=number,
        pages=pages,
        prev_url=f"{base}?page={number - 1}" if number > 1 else None,
        next_url=f"{base}?page={number + 1}" if number < pages else None,
    )


# --- /runs, /runs/ID ----------------------------------------------------------------------------------


@page(staff=True)
def run_list(ctx: Ctx) -> Response:
    q = ctx.query
    number = params.integer(q, "page", 1, 1, 1_000_000)
    system = _name_param(ctx, "system")
    tools = portal_bench.tools(ctx.store.db)
    tool = q.get("tool") or None
    if tool is not None and tool not in tools:
        raise params.bad("tool", f"no runs of that tool (there are runs of {', '.join(tools) or 'none'})")
    rows, total = portal_bench.run_list(ctx.store.db, system, tool, PAGE_SIZE, (number - 1) * PAGE_SIZE)
    phases: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for p in queries.phases_of(ctx.store.db, [r["id"] for r in rows]):
        phases[p["run_id"]].append(p)
    runs = [
        {
            "id": r["id"],
            "when": fmt.when(r["started_at"]),
            "system": printable(r["system"] or "-"),
            "system_url": system_url(r["system"]) if r["system"] else None,
            "tool": r["tool"] + (" (app)" if r["origin"] == "io500-app" else ""),
            "ranks": r["ranks"] or "-",
            "host": printable(r["hostname"] or "-"),
            "validity": validity_word(r["valid"], r["status"]),
            "cache_mode": r["cache_mode"] or "-",
            "result": printable(fmt.headline(r, phases.get(r["id"], []))),
        }
        for r in rows
    ]
    pages = _pages(total)
    return ctx.render(
        "runs.html",
        runs=runs,
        total=total,
        tools=tools,
        tool=tool or "",
        system=printable(system) if system else "",
        system_field=attribute(system) if system else "",
        page=number,
        pages=pages,
        prev_url=runs_url(system=system, tool=tool, page=number - 1) if number > 1 else None,
        next_url=runs_url(system=system, tool=tool, page=number + 1) if number < pages else None,
    )


@page(staff=True)
def run_detail(ctx: Ctx) -> Response:
    run_id = ctx.request.path_params["id"]
    if not 0 < run_id <= portal_bench.MAX_ID:
        raise queries.NotFound("no such run")
    report = report_html.run_page(ctx.store, run_id)
    run = queries.get_run(ctx.store.db, run_id)
    return ctx.render(
        "run.html",
        figures=report.figures,
        title=printable(report.title),
        subtitle=report.subtitle,
        parts=[printable(part) for part in report.parts],  # control characters as escapes, as text
        run_id=run_id,
        system_url=system_url(run["system"]) if run["system"] else None,
        system=printable(run["system"] or ""),
    )


# --- /compare -----------------------------------------------------------------------------------------


def _short(v: Any, width: int = 80) -> str:
    s = "-" if v is None else (v if isinstance(v, str) else repr(v))
    s = printable(s)
    return s if len(s) <= width else s[: width - 1] + "…"


def _cell(f: queries.PhaseFigure | None) -> str:
    if f is None:
        return "-"
    return fmt.value(f.value, f.unit) + (" INVALID" if f.valid is False else "")


def _comparison_rows(c: queries.Comparison) -> list[dict[str, Any]]:
    """Per phase (then its percentiles): the first run's figure, and each other run's with its ratio."""
    out = []
    for name, figs in c.phases.items():
        base = figs[0]
        others = [
            (_cell(f), fmt.ratio(f.value if f else None, base.value if base else None)) for f in figs[1:]
        ]
        out.append({"label": name, "first": _cell(base), "others": others, "sub": False,
                    "invalid": any(f is not None and f.valid is False for f in figs)})  # fmt: skip
        for key, label in (("p50_ns", "p50"), ("p99_ns", "p99"), ("max_ns", "max")):
            if not any(f is not None and key in f.percentiles for f in figs):
                continue
            b = base.percentiles.get(key) if base else None
            cells = []
            for f in figs[1:]:
                x = f.percentiles.get(key) if f else None
                cells.append((latency(x) if x is not None else "-", fmt.ratio(x, b)))
            out.append({"label": label, "first": latency(b) if b is not None else "-", "others": cells,
                        "sub": True, "invalid": False})  # fmt: skip
    return out


def _ratio_figure(c: queries.Comparison) -> dict[str, Any] | None:
    """Each later run's phases as a ratio to the first run's (1 = the same)."""
    data = []
    for n, run in enumerate(c.runs[1:], 1):
        xs, ys = [], []
        for name, figs in c.phases.items():
            a, b = figs[0], figs[n]
            if a and b and a.value and b.value is not None:
                xs.append(name)
                ys.append(b.value / a.value)
        if xs:
            mixed = c.mixed_cache[n]
            color = "#d62728" if mixed else report_html.COLORS[n % len(report_html.COLORS)]
            data.append({
                "type": "bar", "name": f"run {run['id']}" + (f" {MIXED_MARK}" if mixed else ""), "x": xs,
                "y": ys, "marker": {"color": color}, "hovertemplate": "%{x}: ×%{y:.3f}<extra></extra>",
            })  # fmt: skip
    if not data:
        return None
    layout = report_html.plot_layout(
        f"phases of each run as a ratio to run {c.runs[0]['id']}'s", barmode="group",
        yaxis={"title": "ratio", "gridcolor": "#eee", "rangemode": "tozero"},
        shapes=[{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": 1, "y1": 1,
                 "line": {"color": "#888", "dash": "dot", "width": 1}}],
    )  # fmt: skip
    report_html.axis_titles(layout)
    return {"data": data, "layout": layout}


@page(staff=True)
def compare_page(ctx: Ctx) -> Response:
    q = ctx.query
    if "runs" not in q:
        return ctx.render("compare_form.html")
    ids = params.ids(q, "runs")
    if len(ids) < 2:
        raise params.bad("runs", "expected at least two run ids, separated by commas")
    allow_mixed = params.choice(q, "allow_mixed_cache", ("0", "1"), "0") == "1"
    joined = ",".join(map(str, ids))
    try:
        c = queries.compare(ctx.store.db, ids, allow_mixed_cache=allow_mixed)
    except queries.MixedCacheModes as exc:
        return ctx.render(
            "compare_refused.html",
            status=409,
            modes=exc.modes,
            message=str(exc),
            anyway_url="/compare?" + urllib.parse.urlencode({"runs": joined, "allow_mixed_cache": "1"}),
        )
    fig = _ratio_figure(c)
    runs = [
        {
            "id": r["id"],
            "tool": r["tool"],
            "system": printable(r["system"] or "-"),
            "system_url": system_url(r["system"]) if r["system"] else None,
            "when": fmt.when(r["started_at"]),
            "cache_mode": r["cache_mode"] or "-",
            "validity": validity_word(r["valid"], r["status"]),
            "mixed": mixed,
        }
        for r, mixed in zip(c.runs, c.mixed_cache, strict=True)
    ]
    differences = [(k, [_short(v) for v in vals]) for k, vals in c.run_differences.items()]
    differences += [
        (f"config {printable(k)}", [_short(v) for v in vals]) for k, vals in c.config_differences.items()
    ]
    return ctx.render(
        "compare.html",
        figures=[("ratios", fig)] if fig else [],
        runs=runs,
        rows=_comparison_rows(c),
        differences=differences,
        reference_mode=c.reference_cache_mode,
        any_mixed=any(c.mixed_cache),
        mark=MIXED_MARK,
        joined=joined,
    )


ROUTES: list[BaseRoute] = [
    Route("/systems", systems_list),
    Route("/systems/{name:path}", system_page),
    Route("/runs", run_list),
    Route("/runs/{id:int}", run_detail),
    Route("/compare", compare_page),
]
