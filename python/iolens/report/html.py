"""Self-contained HTML reports of a run, a profile or a trend: one file that opens offline.

The plots are drawn by plotly.js, taken from the `plotly` package (its package_data/plotly.min.js) and
embedded in the file: no CDN, no network. Each figure is a plotly figure as JSON (data + layout), built here
from what the store answers; the page's only script draws them.

A run's report: the run's facts and phase table, its phases as bars (IO500: the phase scores by unit, and
BW, MD and the score), latency percentiles, the monitoring of the run's own time (report/monitor_window.py
prepares it: the run's own samples, the other runs that overlapped it, its own and others' disk I/O) with the
phase windows shaded, and the trend of its main phases over the system's earlier runs. A profile's report:
the job summary, operation counts, the access size histogram, the top files, the timeline (when traced) and
the advice.
"""

from __future__ import annotations

import html
import importlib.util
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Collection, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from iolens import __version__, atomic
from iolens.profile.stack import Stack, stacks
from iolens.render import human_bytes, latency
from iolens.report import monitor_window, own_io
from iolens.report import text as fmt
from iolens.store import queries
from iolens.store.profiles import SMALL_IOS_LABEL, document_top_files
from iolens.store.store import Store

GIB = 1024**3
MIB = 1024**2
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]
MAX_TREND_PLOTS = 4
PERCENTILE_LABELS = (
    ("p50_ns", "p50"),
    ("p90_ns", "p90"),
    ("p99_ns", "p99"),
    ("p99_9_ns", "p99.9"),
    ("max_ns", "max"),
)


class ReportError(Exception):
    pass


def plotly_js_path() -> Path:
    """Where the installed plotly package keeps plotly.min.js (found without importing plotly's Python side):
    the static reports embed it, the portal serves it."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise ReportError("HTML reports need the plotly package (pip install plotly)")
    return Path(next(iter(spec.submodule_search_locations))) / "package_data" / "plotly.min.js"


def plotly_js() -> str:
    """plotly.min.js from the installed plotly package."""
    path = plotly_js_path()
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"cannot read plotly.js from the plotly package: {exc}") from None


# --- the page -------------------------------------------------------------------------------------------

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #222;
       background: #fafafa; }
header { background: #23395d; color: #fff; padding: 16px 28px; }
header h1 { margin: 0 0 4px 0; font-size: 22px; }
header .sub { opacity: .85; font-size: 14px; }
main { padding: 8px 28px 40px; max-width: 1280px; }
section { background: #fff; border: 1px solid #e3e3e3; border-radius: 6px; padding: 12px 18px;
          margin: 16px 0; }
h2 { font-size: 17px; margin: 4px 0 10px; color: #23395d; }
table { border-collapse: collapse; font-size: 13px; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.facts td:first-child { color: #666; white-space: nowrap; }
.bad { color: #b00020; font-weight: 600; }
.good { color: #1b7f3b; }
.note { color: #666; font-size: 13px; }
.plot { width: 100%; height: 380px; }
.score { font-size: 28px; font-weight: 700; margin-right: 28px; }
.advice li { margin-bottom: 6px; }
.stack { margin-bottom: 14px; }
.stack-sentence { margin: 6px 0 0; font-size: 14px; }
code { font-size: 12px; word-break: break-all; }
footer { color: #888; font-size: 12px; padding: 0 28px 24px; }
"""

SCRIPT = """
(function () {
  // No logo, and no "send to cloud"/"edit in Chart Studio": nothing leaves the report.
  var config = {displaylogo: false, responsive: true, showSendToCloud: false, showEditInChartStudio: false,
                modeBarButtonsToRemove: ["sendDataToCloud", "editInChartStudio"]};
  document.querySelectorAll("div[data-figure]").forEach(function (el) {
    var fig = JSON.parse(document.getElementById(el.getAttribute("data-figure")).textContent);
    Plotly.newPlot(el, fig.data, fig.layout, config);
  });
})();
"""


class Page:
    """A report being built: sections of HTML and the figures they hold."""

    def __init__(self, title: str, subtitle: str) -> None:
        self.title = title
        self.subtitle = subtitle
        self.parts: list[str] = []
        self.figures: list[tuple[str, dict[str, Any]]] = []

    def section(self, title: str, body: str) -> None:
        self.parts.append(f"<section><h2>{html.escape(title)}</h2>{body}</section>")

    def figure(self, fig: dict[str, Any], height: int = 380) -> str:
        """A placeholder div for a figure; the page's script draws it."""
        fid = f"fig{len(self.figures)}"
        axis_titles(fig.get("layout") or {})
        self.figures.append((fid, fig))
        return f'<div class="plot" style="height:{height}px" data-figure="{fid}-data" id="{fid}"></div>'

    def render(self) -> str:
        data = "".join(
            f'<script type="application/json" id="{fid}-data">{_json(fig)}</script>'
            for fid, fig in self.figures
        )
        generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        return (
            "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(self.title)}</title><style>{CSS}</style>"
            f"<script>{plotly_js()}</script></head><body>"
            f"<header><h1>{html.escape(self.title)}</h1>"
            f"<div class='sub'>{html.escape(self.subtitle)}</div></header>"
            f"<main>{''.join(self.parts)}</main>"
            f"<footer>iolens {__version__} · generated {generated} · "
            "plots drawn by plotly.js, embedded</footer>"
            f"{data}<script>{SCRIPT}</script></body></html>\n"
        )


def axis_titles(layout: dict[str, Any]) -> None:
    """An axis title given as a string becomes {"text": ...}: plotly.js 3 draws no string title (the axis
    would show no unit)."""
    for key, axis in layout.items():
        if (
            key.startswith(("xaxis", "yaxis"))
            and isinstance(axis, dict)
            and isinstance(axis.get("title"), str)
        ):
            axis["title"] = {"text": axis["title"]}


def _json(obj: Any) -> str:
    # Inside <script>: "</" would end the element, so it is escaped.
    return json.dumps(obj, separators=(",", ":"), allow_nan=False, default=str).replace("</", "<\\/")


def _write(path: Path, text: str) -> None:
    """Write the report whole or not at all: a temporary file beside it, renamed over it when complete.
    Whatever fails (a full disk, a directory where the file should be, an interrupt) removes the
    temporary file; the OSError goes up naming the report."""
    try:
        atomic.write_text(path, text)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[int] = ()) -> str:
    head = "".join(
        f"<th class='{'num' if i in numeric else ''}'>{html.escape(h)}</th>" for i, h in enumerate(headers)
    )
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            cls = "num" if i in numeric else ""
            content = cell if isinstance(cell, _Raw) else html.escape(str(cell))
            cells.append(f"<td class='{cls}'>{content}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


class _Raw(str):
    """Trusted HTML for a table cell."""


def _validity(v: bool | None) -> _Raw:
    if v is None:
        return _Raw("-")
    return _Raw("<span class='good'>yes</span>" if v else "<span class='bad'>NO</span>")


def _facts(pairs: Sequence[tuple[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{v if isinstance(v, _Raw) else html.escape(str(v))}</td></tr>"
        for k, v in pairs
    )
    return f"<table class='facts'>{rows}</table>"


def plot_layout(title: str = "", **kw: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "title": {"text": title, "font": {"size": 14}},
        "margin": {"l": 70, "r": 20, "t": 40 if title else 20, "b": 60},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "legend": {"orientation": "h", "y": -0.2},
        "xaxis": {"gridcolor": "#eee"},
        "yaxis": {"gridcolor": "#eee", "rangemode": "tozero"},
    }
    layout.update(kw)
    return layout


def _iso_ms(t: float) -> str:
    """An epoch time as the local time plotly reads as a date."""
    return datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def scale_unit(unit: str | None, values: Sequence[float]) -> tuple[float, str]:
    """Divisor and unit to plot values in: B/s as GiB/s or MiB/s."""
    if unit in ("B/s", "B"):
        big = max((abs(v) for v in values if v is not None), default=0)
        return (GIB, "Gi" + unit) if big >= GIB else (MIB, "Mi" + unit)
    return 1.0, unit or ""


# --- a run ----------------------------------------------------------------------------------------------


def run_page(store: Store, run_id: int) -> Page:
    run = queries.get_run(store.db, run_id)
    title = f"iolens run {run_id}: {run['tool']}" + (f" on {run['system']}" if run["system"] else "")
    page = Page(title, f"{fmt.when(run['started_at'])} → {fmt.when(run['ended_at'])}")
    figs = queries.fold_phases(run["phases"])
    phases = [f for f in figs if f.kind == "phase"]
    scores = {f.name: f for f in figs if f.kind == "score"}

    facts = [
        (
            "tool",
            run["tool"] + (" (official IO500 result directory)" if run["origin"] == "io500-app" else ""),
        ),
        ("system", run["system"] or "-"),
        ("version", run["version"] or "-"),
        ("host", run["hostname"] or "-"),
        ("ranks / nodes", f"{run['ranks'] or '-'} / {run['nodes'] or '-'}"),
        ("file system", run["file_system"] or "-"),
        ("status", run["status"]),
        ("valid", _validity(run["valid"])),
        ("config hash", run["config_hash"] or "-"),
        ("cache mode", fmt.cache_mode_words(run.get("cache_mode"))),
        ("command", _Raw(f"<code>{html.escape(run['command'] or '-')}</code>")),
        ("source", run["source_path"] or "-"),
    ]
    body = _facts(facts)
    if "score" in scores:
        s = scores
        body = (
            "<p><span class='score'>score "
            + f"{s['score'].value:.3f}</span>"
            + (f"<span class='score'>BW {s['bw'].value:.3f} GiB/s</span>" if "bw" in s else "")
            + (f"<span class='score'>MD {s['md'].value:.3f} kIOPS</span>" if "md" in s else "")
            + "</p>"
            + body
        )
    page.section("Run", body)

    rows = []
    for p in run["phases"]:
        rows.append(
            [
                p["name"] + (" (score)" if p["kind"] == "score" else ""),
                p["iteration"],
                fmt.value(p["value"], p["unit"]),
                f"{p['time_s']:.3f}" if p["time_s"] is not None else "-",
                *(latency(p[k]) if p[k] is not None else "-" for k, _ in PERCENTILE_LABELS),
                _validity(p["valid"]),
            ]
        )
    page.section(
        "Phases",
        _table(
            ["phase", "iter", "value", "time s", *(label for _, label in PERCENTILE_LABELS), "valid"],
            rows,
            numeric=(1, 2, 3, 4, 5, 6, 7, 8),
        ),
    )

    if phases:
        page.section("Phase results", _phase_bars(page, phases, scores))
    with_pct = [f for f in phases if f.percentiles]
    if with_pct:
        page.section("Latency percentiles", page.figure(_percentile_figure(with_pct)))
    page.section("Monitoring during the run", _monitoring(page, store, run, phases))
    page.section("Trend over earlier runs", _trends(page, store, run, phases, scores))
    return page


def _phase_bars(page: Page, phases: list[queries.PhaseFigure], scores: dict[str, queries.PhaseFigure]) -> str:
    by_unit: dict[str, list[queries.PhaseFigure]] = defaultdict(list)
    for f in phases:
        if f.value is not None:
            by_unit[f.unit or ""].append(f)
    out = []
    for unit, group in by_unit.items():
        div, shown = scale_unit(unit, [f.value or 0 for f in group])
        colors = [COLORS[0] if f.valid is not False else "#d62728" for f in group]
        fig = {
            "data": [
                {
                    "type": "bar",
                    "x": [f.name for f in group],
                    "y": [(f.value or 0) / div for f in group],
                    "marker": {"color": colors},
                    "text": [f"{(f.value or 0) / div:.3f}" for f in group],
                    "textposition": "auto",
                    "name": shown,
                    "hovertemplate": "%{x}: %{y:.4f} " + shown + "<extra></extra>",
                }
            ],
            "layout": plot_layout(
                f"phases in {shown}" + (" (red: not valid)" if "#d62728" in colors else ""),
                yaxis={"title": shown, "gridcolor": "#eee"},
            ),
        }
        out.append(page.figure(fig, 340))
    if scores:
        names = [n for n in ("bw", "md", "score", "bw-x", "md-x", "score-x") if n in scores]
        fig = {
            "data": [
                {
                    "type": "bar",
                    "x": [f"{n} ({scores[n].unit})" for n in names],
                    "y": [scores[n].value for n in names],
                    "text": [f"{scores[n].value:.3f}" for n in names],
                    "textposition": "auto",
                    "marker": {"color": COLORS[2]},
                    "name": "IO500",
                }
            ],
            "layout": plot_layout(
                "IO500 score: BW (GiB/s), MD (kIOPS) and their geometric mean (log scale)",
                yaxis={"type": "log", "gridcolor": "#eee"},
            ),
        }
        out.append(page.figure(fig, 300))
    return "".join(out)


def _percentile_figure(phases: list[queries.PhaseFigure]) -> dict[str, Any]:
    data = []
    for i, (key, label) in enumerate(PERCENTILE_LABELS):
        xs = [f.name for f in phases if key in f.percentiles]
        if not xs:
            continue
        data.append(
            {
                "type": "bar",
                "name": label,
                "x": xs,
                "y": [f.percentiles[key] / 1e3 for f in phases if key in f.percentiles],
                "marker": {"color": COLORS[i]},
                "hovertemplate": "%{x} " + label + ": %{y:.1f} µs<extra></extra>",
            }
        )
    return {
        "data": data,
        "layout": plot_layout(
            "latency per operation (µs, log scale)",
            barmode="group",
            yaxis={"type": "log", "title": "µs", "gridcolor": "#eee"},
        ),
    }


def phase_windows(
    run: dict[str, Any], phases: list[queries.PhaseFigure]
) -> tuple[list[tuple[str, float, float]], bool]:
    """(name, start, end) of each phase; estimated (laid end to end from the run's start) when the run's
    document has no per-phase times."""
    exact = [
        (f.name, f.started_at, f.ended_at)
        for f in phases
        if f.started_at is not None and f.ended_at is not None
    ]
    if exact:
        return [(n, float(a), float(b)) for n, a, b in exact], False
    t = run.get("started_at")
    if t is None:
        return [], False
    out = []
    for f in phases:
        d = (f.time_s or 0.0) * max(f.iterations, 1)
        if d <= 0:
            continue
        out.append((f.name, t, t + d))
        t += d
    return out, True


def _monitoring(page: Page, store: Store, run: dict[str, Any], phases: list[queries.PhaseFigure]) -> str:
    windows, estimated = phase_windows(run, phases)
    mw = monitor_window.build(store.db, run, windows)
    if mw is None:
        return "<p class='note'>The run has no start and end time: no monitoring window.</p>"
    lo, hi = mw.shown
    out = [
        "<p class='note'>Shown: the run's own time, "
        f"{html.escape(_clock(mw.run_start))} – {html.escape(_clock(mw.run_end))}, and {mw.margin_s:.1f} s "
        "on each side (shaded grey, outside the run: one sampling interval, where the samples that close the "
        "run's first and last intervals lie). "
        + (
            "The samples are the run's own (its <code>--monitor</code>): its sampler and its processes."
            if mw.origin == "run"
            else ""
        )
        + "</p>"
    ]
    out += [f"<p class='note'>{html.escape(n)}</p>" for n in mw.notes]
    if mw.overlaps:
        out.append(
            "<p class='bad'>Other runs were stored for this host while this one ran (shaded orange in the "
            "plots): their I/O is in the node's figures.</p>"
            + _table(
                ["run", "workload", "host", "started", "ended", "overlap s", "command"],
                [
                    [
                        o.run_id,
                        o.tool,
                        o.host or "-",
                        _clock(o.started_at),
                        _clock(o.ended_at),
                        f"{max(0.0, min(o.ended_at, mw.run_end) - max(o.started_at, mw.run_start)):.1f}",
                        _Raw(f"<code>{html.escape(o.command or '-')}</code>"),
                    ]
                    for o in mw.overlaps
                ],
                numeric=(0, 5),
            )
        )
    if not mw.panels:
        out.append(
            "<p class='note'>No monitoring samples are stored for this run's time window "
            f"({fmt.when(lo)} – {fmt.when(hi)}): run <code>iolens monitor</code> with the "
            "database configured while benchmarks run, or import its stream with "
            "<code>iolens db import</code>, or run the benchmark with <code>--monitor</code>.</p>"
        )
        return "".join(out)
    if mw.phases:
        out.append(_split_table(mw))
    if estimated:
        out.append(
            "<p class='note'>Phase windows are estimated: the run's document has each phase's duration, "
            "not its start, so the phases are laid end to end from the run's start.</p>"
        )
    shapes, annotations = _phase_shapes(windows)
    extra_shapes, extra_notes = _window_shapes(mw)
    for panel in mw.panels:
        div, unit = scale_unit(panel.unit, [v for line in panel.lines for v in line.y if v is not None])
        data = [
            {
                "type": "scatter",
                "mode": "lines+markers" if len(line.x) < 3 else "lines",
                "connectgaps": False,
                "name": line.name,
                "x": [_iso_ms(t) for t in line.x],
                "y": [None if v is None else v / div for v in line.y],
                **({"text": line.hover, "hoverinfo": "x+y+text"} if line.hover else {}),
            }
            for line in panel.lines
        ]
        title = panel.title + (
            f" ({len(panel.lines)} most varying of {len(panel.lines) + panel.hidden} series)"
            if panel.hidden
            else ""
        )
        fig = {
            "data": data,
            "layout": plot_layout(
                title,
                shapes=shapes + extra_shapes,
                annotations=annotations + extra_notes,
                xaxis={
                    "type": "date",
                    "gridcolor": "#eee",
                    "title": "local time",
                    "range": [_iso_ms(lo), _iso_ms(hi)],
                },
                yaxis={"gridcolor": "#eee", "rangemode": "tozero", "title": unit},
            ),
        }
        out.append(page.figure(fig, 360))
    if mw.hidden_panels:
        out.append(f"<p class='note'>{mw.hidden_panels} more plots (host, source, unit) are left out.</p>")
    return "".join(out)


def _clock(t: float) -> str:
    return datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S.%f")[:-4]


def _mib_s(v: float | None) -> str:
    return "-" if v is None else f"{v / MIB:.1f}"


def _split_table(mw: monitor_window.MonitorWindow) -> str:
    """Per phase: the node's disks, the run's own processes and the others' (device − own, ≥ 0)."""
    rows = []
    for p in mw.phases:
        s = p.split
        rows.append(
            [
                p.host,
                p.name + ("" if p.iteration is None else f" #{p.iteration}"),
                "-" if p.measured is None else f"{p.measured[1] - p.measured[0]:.2f}",
                *(
                    ["-"] * 8
                    if s is None
                    else [
                        _mib_s(s.device_read),
                        _mib_s(s.own_read),
                        _mib_s(s.others_read) + (" *" if s.clamped("read") else ""),
                        _mib_s(s.device_write),
                        _mib_s(s.own_write),
                        _mib_s(s.others_write) + (" *" if s.clamped("write") else ""),
                        _mib_s(s.cgroup_read),
                        _mib_s(s.cgroup_write),
                    ]
                ),
            ]
        )
    head = (
        "<p>Disk I/O per phase (MiB/s over the sampling intervals that overlap the phase): the node's "
        "total, the run's own and the others'.</p>"
    )
    clamp = (
        " * others' clamped at 0."
        if any(p.split and (p.split.clamped("read") or p.split.clamped("write")) for p in mw.phases)
        else ""
    )
    return (
        head
        + _table(
            [
                "host",
                "phase",
                "measured s",
                "read all MiB/s",
                "read run's",
                "read others'",
                "write all MiB/s",
                "write run's",
                "write others'",
                "cgroup read",
                "cgroup write",
            ],
            rows,
            numeric=tuple(range(2, 11)),
        )
        + f"<p class='note'>{html.escape(own_io.OWN_METHOD + clamp)}</p>"
    )


def _window_shapes(mw: monitor_window.MonitorWindow) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The margins outside the run (grey) and the other runs that overlapped it (orange, hatched)."""
    lo, hi = mw.shown
    shapes: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []

    def rect(name: str, a: float, b: float, color: str, **kw: Any) -> dict[str, Any]:
        return {
            "type": "rect", "name": name, "xref": "x", "yref": "paper", "x0": _iso_ms(a), "x1": _iso_ms(b),
            "y0": 0, "y1": 1, "fillcolor": color, "line": {"width": 0}, "layer": "below", **kw,
        }  # fmt: skip

    for a, b in ((lo, mw.run_start), (mw.run_end, hi)):
        if b > a:
            shapes.append(rect("outside the run", a, b, "#888888", opacity=0.25))
    notes.append(
        {"x": _iso_ms(hi), "y": 0, "xref": "x", "yref": "paper", "text": "outside the run",
         "showarrow": False, "xanchor": "right", "yanchor": "bottom", "font": {"size": 9, "color": "#666"}}
    )  # fmt: skip
    for i, o in enumerate(mw.overlaps):
        a, b = max(lo, o.started_at), min(hi, o.ended_at)
        shapes.append(rect(f"overlap: {o.label}", a, b, "#ff7f0e", opacity=0.18))
        notes.append(
            {"x": _iso_ms(a), "y": 0.02 + 0.08 * (i % 4), "xref": "x", "yref": "paper",
             "text": f"{o.label} also ran", "showarrow": False, "xanchor": "left", "yanchor": "bottom",
             "font": {"size": 10, "color": "#c05a00"}}
        )  # fmt: skip
    return shapes, notes


def _phase_shapes(
    windows: list[tuple[str, float, float]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    shapes, notes = [], []
    for i, (name, a, b) in enumerate(windows):
        color = COLORS[i % len(COLORS)]
        shapes.append(
            {
                "type": "rect",
                "name": "phase",
                "xref": "x",
                "yref": "paper",
                "x0": _iso_ms(a),
                "x1": _iso_ms(b),
                "y0": 0,
                "y1": 1,
                "fillcolor": color,
                "opacity": 0.12,
                "line": {"width": 0},
                "layer": "below",
            }
        )
        notes.append(
            {
                "x": _iso_ms(a),
                "y": 1,
                "xref": "x",
                "yref": "paper",
                "text": name,
                "name": "phase",
                "showarrow": False,
                "xanchor": "left",
                "yanchor": "top",
                "textangle": -90,
                "font": {"size": 9, "color": color},
            }
        )
    return shapes, notes


def _trends(
    page: Page,
    store: Store,
    run: dict[str, Any],
    phases: list[queries.PhaseFigure],
    scores: dict[str, queries.PhaseFigure],
) -> str:
    names = [n for n in ("score", "bw", "md") if n in scores] or [
        f.name for f in phases if f.value is not None
    ]
    out = []
    for name in names[:MAX_TREND_PLOTS]:
        rows = queries.trend(store.db, name, run["system"], run["tool"], until=run["started_at"], limit=500)
        if run["system"] is None:
            rows = [r for r in rows if r["run_id"] == run["id"]]
        out.append(page.figure(trend_figure(rows, name, run["system"], highlight=run["id"]), 320))
    if not out:
        return "<p class='note'>No phase values to follow.</p>"
    if run["system"] is None:
        out.insert(
            0,
            "<p class='note'>The run is not tagged with a system: there is no history to compare "
            "it with (store runs with <code>--system NAME</code>).</p>",
        )
    return "".join(out)


def trend_figure(
    rows: Sequence[dict[str, Any]],
    phase: str,
    system: str | None,
    highlight: int | None = None,
    by_cache_mode: bool = False,
    regressions: Collection[int] = (),
) -> dict[str, Any]:
    """The phase's value over time, one line per config hash (and per page-cache mode when `by_cache_mode`:
    runs of different modes are not like-for-like); `highlight` a run with a star, `regressions` runs with
    red markers."""
    unit = rows[0]["unit"] if rows else None
    div, shown = scale_unit(unit, [r["value"] for r in rows])
    data: list[dict[str, Any]] = []
    by_hash: dict[tuple[str | None, str | None], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_hash[(r["config_hash"], r.get("cache_mode") if by_cache_mode else None)].append(r)
    for i, ((chash, mode), group) in enumerate(by_hash.items()):
        name = f"config {str(chash)[:10]}" if len({h for h, _ in by_hash}) > 1 else phase
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": name + (f" ({mode or 'no'} cache mode)" if by_cache_mode else ""),
                "x": [_iso_ms(r["started_at"]) for r in group],
                "y": [r["value"] / div for r in group],
                "text": [f"run {r['run_id']}" for r in group],
                "marker": {"color": COLORS[i % len(COLORS)], "size": 6},
                "hovertemplate": "%{text}: %{y:.4f} " + shown + "<extra></extra>",
            }
        )
    if highlight is not None:
        mine = [r for r in rows if r["run_id"] == highlight]
        if mine:
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": "this run",
                    "x": [_iso_ms(mine[0]["started_at"])],
                    "y": [mine[0]["value"] / div],
                    "marker": {"color": "#d62728", "size": 13, "symbol": "star"},
                }
            )
    flagged = [r for r in rows if r["run_id"] in regressions]
    if flagged:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "regression",
                "x": [_iso_ms(r["started_at"]) for r in flagged],
                "y": [r["value"] / div for r in flagged],
                "text": [f"run {r['run_id']}: regression" for r in flagged],
                "marker": {"color": "#d62728", "size": 12, "symbol": "x"},
                "hovertemplate": "%{text}: %{y:.4f} " + shown + "<extra></extra>",
            }
        )
    where = f" on {system}" if system else ""
    return {
        "data": data,
        "layout": plot_layout(
            f"{phase}{where}: {len(rows)} run(s)",
            yaxis={"title": shown, "gridcolor": "#eee", "rangemode": "tozero"},
            xaxis={"type": "date", "gridcolor": "#eee"},
        ),
    }


def write_run_report(store: Store, run_id: int, path: Path) -> None:
    _write(path, run_page(store, run_id).render())


def write_trend_report(
    store: Store, path: Path, phase: str, system: str | None, rows: Sequence[dict[str, Any]]
) -> None:
    page = Page(f"iolens trend: {phase}" + (f" on {system}" if system else ""), f"{len(rows)} run(s)")
    page.section("Trend", page.figure(trend_figure(rows, phase, system), 420))
    values = [r["value"] for r in rows]
    med = statistics.median(values) if values else None
    table = _table(
        ["run", "started", "value", "vs median", "config hash", "valid"],
        [
            [
                r["run_id"],
                fmt.when(r["started_at"]),
                fmt.value(r["value"], r["unit"]),
                fmt.ratio(r["value"], med),
                r["config_hash"] or "-",
                _validity(r["valid"]),
            ]
            for r in reversed(rows)
        ],
        numeric=(0, 2, 3),
    )
    page.section("Runs (newest first)", table)
    _write(path, page.render())


# --- a profile ------------------------------------------------------------------------------------------

TOP_FILES = 15


def profile_page(store: Store, profile_id: int) -> Page:
    p = queries.get_profile(store.db, profile_id)
    doc = p["document"] or {}
    page = Page(
        f"iolens profile:{profile_id}: job {p['job_id'] or '-'}"
        + (f" on {p['system']}" if p["system"] else ""),
        f"{p['origin']} profile · {fmt.when(p['started_at'])} → {fmt.when(p['ended_at'])}",
    )
    page.section("Job summary", _facts(profile_facts(p)))
    for title, body in (
        ("Operation counts", operations_body(page, doc)),
        ("Access size histogram", access_sizes_body(page, doc)),
        ("Top files", top_files_body(page, store, profile_id, doc)),
        ("Timeline", timeline_body(page, doc)),
        ("Layers stacked, per file", stacks_body(doc)),
        ("Advice", advice_body(doc)),
    ):
        if body is not None:
            page.section(title, body)
    return page


# Each part of a profile's page as a function of the profile (a row of queries.get_profile) or its document,
# so that the portal's job page (web/jobs.py) shows the same parts: a body is escaped HTML, its figures go
# to `page`; None where the profile has nothing to show in that part.


def profile_facts(p: dict[str, Any]) -> list[tuple[str, Any]]:
    """The job summary's rows: (label, text or _Raw HTML)."""
    s = (p["document"] or {}).get("summary") or {}
    io_time = (p["read_time_s"] or 0) + (p["write_time_s"] or 0) + (p["meta_time_s"] or 0)
    facts = [
        ("program", _Raw(f"<code>{html.escape(p['exe'] or '-')}</code>")),
        ("command", _Raw(f"<code>{html.escape(p['command'] or '-')}</code>")),
        ("processes", f"{p['processes'] or '-'} on {p['hosts'] or '-'} host(s)"),
        ("run time", f"{p['runtime_s']:.3f} s" if p["runtime_s"] is not None else "-"),
        ("read", f"{human_bytes(p['bytes_read'] or 0)} in {p['reads'] or 0:,} calls"),
        ("written", f"{human_bytes(p['bytes_written'] or 0)} in {p['writes'] or 0:,} calls"),
        ("metadata operations", f"{p['meta_ops'] or 0:,}"),
        (
            "I/O time (all processes)",
            f"{io_time:.3f} s: read {p['read_time_s'] or 0:.3f}, "
            f"write {p['write_time_s'] or 0:.3f}, metadata {p['meta_time_s'] or 0:.3f}",
        ),
        ("metadata share of I/O time", f"{(p['meta_time_s'] or 0) / io_time * 100:.1f}%" if io_time else "-"),
        (SMALL_IOS_LABEL, f"{p['small_ios'] or 0:,}"),
        ("files", f"{p['files'] or 0:,}"),
        ("source", p["source_path"] or "-"),
    ]
    if p["truncated"]:
        facts.append(
            ("note", _Raw("<span class='bad'>a log was cut short (killed job, or a bound hit)</span>"))
        )
    if s.get("io_time_share") is not None:
        facts.insert(4, ("I/O share of run time", f"{s['io_time_share'] * 100:.1f}% (slowest process)"))
    code = s.get("code_and_libraries")
    if isinstance(code, dict) and code.get("files"):
        from iolens.profile.report import code_line

        facts.insert(
            facts.index(("files", f"{p['files'] or 0:,}")) + 1, ("code and libraries", code_line(code))
        )
    return facts


def operations_body(page: Page, doc: dict[str, Any]) -> str | None:
    ops = {k: v for k, v in (doc.get("operations") or {}).items() if isinstance(v, int | float) and v}
    if not ops:
        return None
    names = sorted(ops, key=lambda k: -ops[k])
    fig = {
        "data": [
            {
                "type": "bar",
                "x": names,
                "y": [ops[n] for n in names],
                "marker": {"color": COLORS[0]},
                "hovertemplate": "%{x}: %{y:,}<extra></extra>",
            }
        ],
        "layout": plot_layout(
            "operations (calls)", yaxis={"type": "log", "title": "calls", "gridcolor": "#eee"}
        ),
    }
    return page.figure(fig, 340)


def access_sizes_body(page: Page, doc: dict[str, Any]) -> str | None:
    sizes = doc.get("access_sizes") or {}
    if not sizes.get("buckets"):
        return None
    fig = {
        "data": [
            *(
                {
                    "type": "bar",
                    "name": what,
                    "x": sizes["buckets"],
                    "y": sizes.get(what, []),
                    "marker": {"color": color},
                }
                for what, color in (("read", COLORS[0]), ("write", COLORS[1]))
            ),
        ],
        "layout": plot_layout(
            "access sizes (bytes per call)",
            barmode="group",
            xaxis={"title": "size", "gridcolor": "#eee"},
            yaxis={"title": "calls", "gridcolor": "#eee"},
        ),
    }
    return page.figure(fig, 340)


def top_files_body(page: Page, store: Store, profile_id: int, doc: dict[str, Any]) -> str:
    """The top files by bytes and by I/O time (the document's own tables, else the stored files)."""
    top = document_top_files(doc, "top_files_by_bytes")
    if top is None:
        top = queries.profile_files(store.db, profile_id, "bytes", limit=TOP_FILES)
    slow = document_top_files(doc, "top_files_by_time")
    if slow is None:
        slow = queries.profile_files(store.db, profile_id, "time", limit=TOP_FILES)
    body = (
        "<h3 class='note'>by bytes moved</h3>"
        + _files_table(top)
        + "<h3 class='note'>by I/O time</h3>"
        + _files_table(slow)
    )
    if not top:
        return body
    fig = {
        "data": [
            *(
                {
                    "type": "bar",
                    "orientation": "h",
                    "name": name,
                    "y": [_short(f["path"]) for f in top],
                    "x": [f[key] / MIB for f in top],
                    "marker": {"color": color},
                }
                for name, key, color in (
                    ("read", "bytes_read", COLORS[0]),
                    ("written", "bytes_written", COLORS[1]),
                )
            ),
        ],
        "layout": plot_layout(
            f"top {len(top)} files by bytes (MiB)",
            barmode="stack",
            yaxis={"autorange": "reversed", "automargin": True},
            margin={"l": 260, "r": 20, "t": 40, "b": 40},
        ),
    }
    return body + page.figure(fig, 60 + 22 * len(top))


def timeline_body(page: Page, doc: dict[str, Any]) -> str:
    """What the job did over time (a traced job), or a note saying it was not traced."""
    tl = doc.get("timeline")
    if not tl:
        return (
            "<p class='note'>The job was not traced (iolens profile --trace records every "
            "call; Darshan's DXT does the same).</p>"
        )
    t = tl["t_s"]
    fig = {
        "data": [
            *(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": f"{what} MiB/s",
                    "x": t,
                    "fill": "tozeroy",
                    "y": [b / MIB / tl["bin_s"] for b in tl[f"{what}_bytes"]],
                    "line": {"color": color},
                }
                for what, color in (("read", COLORS[0]), ("write", COLORS[1]))
            ),
            {
                "type": "scatter",
                "mode": "lines",
                "name": "metadata ops/s",
                "x": t,
                "yaxis": "y2",
                "y": [n / tl["bin_s"] for n in tl["meta_ops"]],
                "line": {"color": COLORS[2], "dash": "dot"},
            },
        ],
        "layout": plot_layout(
            "what the job did over time",
            xaxis={"title": "seconds since the job started", "gridcolor": "#eee"},
            yaxis={"title": "MiB/s", "gridcolor": "#eee", "rangemode": "tozero"},
            yaxis2={"title": "ops/s", "overlaying": "y", "side": "right", "rangemode": "tozero"},
        ),
    }
    return page.figure(fig, 360)


def stacks_body(doc: dict[str, Any]) -> str | None:
    """Each file of the layers above POSIX (HDF5, PnetCDF, MPI-IO) with its layers stacked."""
    layer_stacks = stacks(doc.get("layers") or {})
    return "".join(_stack_html(st) for st in layer_stacks) if layer_stacks else None


def advice_body(doc: dict[str, Any]) -> str:
    advice = doc.get("advice") or []
    if not advice:
        return "<p class='note'>Nothing to advise: no rule fired.</p>"
    return f"<ul class='advice'>{''.join(_advice_item(a) for a in advice)}</ul>"


def _short(path: str, width: int = 48) -> str:
    return path if len(path) <= width else "…" + path[-(width - 1) :]


def _files_table(rows: Sequence[dict[str, Any]]) -> str:
    return _table(
        ["file", "fs", "procs", "read", "written", "reads", "writes", "opens", "I/O time s"],
        [
            [
                _Raw(f"<code>{html.escape(f['path'])}</code>"),
                f.get("fs_type") or "-",
                f.get("processes") or "-",
                human_bytes(f.get("bytes_read") or 0),
                human_bytes(f.get("bytes_written") or 0),
                f"{f.get('reads') or 0:,}",
                f"{f.get('writes') or 0:,}",
                f"{f['opens']:,}" if isinstance(f.get("opens"), int) else "-",
                f"{sum(f.get(k) or 0 for k in ('read_time_s', 'write_time_s', 'meta_time_s')):.3f}",
            ]
            for f in rows
        ],
        numeric=(2, 3, 4, 5, 6, 7, 8),
    )


def _stack_html(st: Stack) -> str:
    """One file's layers, top to bottom, and the sentence with the numbers under them."""
    rows = [
        [_Raw(f"<b>{html.escape(level.layer)}</b>") if i == 0 else "", label, value]
        for level in st.levels
        for i, (label, value) in enumerate(level.rows)
    ]
    sentence = f"<p class='stack-sentence'>{html.escape(st.sentence)}</p>" if st.sentence else ""
    return (
        f"<div class='stack' data-path='{html.escape(st.path)}'><h3 class='note'><code>{html.escape(st.path)}"
        f"</code></h3>{_table(['layer', 'what', 'figures'], rows)}{sentence}</div>"
    )


def _advice_item(a: Any) -> str:
    if not isinstance(a, dict):
        return f"<li>{html.escape(str(a))}</li>"
    title = a.get("title") or a.get("rule") or ""
    # The finding is the sentence with the numbers (iolens's reports); message and text: older documents.
    message = a.get("finding") or a.get("message") or a.get("text") or ""
    more = a.get("suggestion") or a.get("advice") or ""
    parts = [f"<b>{html.escape(str(title))}</b>"] if title else []
    if message:
        parts.append(html.escape(str(message)))
    if more:
        parts.append(f"<br><i>{html.escape(str(more))}</i>")
    return "<li>" + " ".join(parts) + "</li>"


def write_profile_report(store: Store, profile_id: int, path: Path) -> None:
    _write(path, profile_page(store, profile_id).render())


def finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
