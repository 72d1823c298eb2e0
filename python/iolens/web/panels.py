"""Monitoring series as the portal draws them: their units, the downsampling step, and plotly figures of
downsampled lines where missing samples are gaps.

A panel holds one source's series of one unit. Its lines are the `lines` series with the largest mean in
the window; the rest of the panel's series are added up as one `other` line, so a node with hundreds of
series stays readable. Each line has at most TARGET_POINTS points (bucket means computed by the database),
with the bucket's maximum in the hover text.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from iolens.report.html import plot_layout, scale_unit
from iolens.report.monitor_window import HIDDEN, SOURCE_ORDER, unit_of
from iolens.store import portal_monitor
from iolens.store.db import Database
from iolens.store.portal_monitor import Bucket, Series
from iolens.store.rollup import MINUTE_S

TARGET_POINTS = 600
# Bucket rows a panel's query may return: a panel of many series gets fewer (wider) buckets, no fewer than
# MIN_POINTS.
ROWS_BUDGET = 60_000
MIN_POINTS = 100
# A bucket spans at least this many sampling intervals, so that every bucket of a sampled stretch holds a
# sample and an empty bucket means missing samples (a gap), never the sampling's own spacing.
GAP_FACTOR = 1.5
MAX_PANELS = 12
# Series a page looks at, at most (a panel's are asked for in one query, an IN list of ids).
MAX_SERIES = 1000
OTHER_COLOR = "#999999"
# Lustre counters' `sum`, `min` and `max` are in the counter's unit, which the stored samples do not carry:
# bytes when the operation says so, otherwise left as Lustre's.
LUSTRE_VALUES = ("sum", "min", "max")


def series_unit(s: Series) -> tuple[str, float] | None:
    """(unit, factor to multiply values by) of a series as a panel shows it; None for series not drawn
    (duplicates such as sectors, and Lustre's sums of squares)."""
    rate = s.metric.endswith("_per_s")
    base = s.metric[: -len("_per_s")] if rate else s.metric
    suffix = "_per_s" if rate else ""
    if base in HIDDEN or base == "sumsq":
        return None
    if s.unit:
        return s.unit, 1.0
    if s.source == "lustre" and base in LUSTRE_VALUES:
        op = s.target.rsplit("/", 1)[-1]
        if "bytes" in op:
            return unit_of(s.source, "bytes" + suffix)
        return ("Lustre unit/s" if rate else "Lustre unit"), 1.0
    return unit_of(s.source, s.metric)


def bucket_step(t0: float, t1: float, interval: float | None, points: int = TARGET_POINTS) -> float:
    """The bucket width of a window: `points` buckets, but at least GAP_FACTOR sampling intervals; from a
    minute on, whole minutes (the database then reads its per-minute rollup: portal_monitor.buckets)."""
    step = max((t1 - t0) / points, GAP_FACTOR * interval if interval else 0.0)
    return math.ceil(step / MINUTE_S) * MINUTE_S if step >= MINUTE_S else step


def bucket_origin(t0: float, step: float) -> float:
    """Where the buckets start: the minute that holds t0 for steps of whole minutes, else t0."""
    return math.floor(t0 / MINUTE_S) * MINUTE_S if step % MINUTE_S == 0 else t0


def utc(t: float, ms: bool = True) -> str:
    """An epoch time as a date plotly reads (UTC, as the time picker); to the second without `ms`."""
    text = datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
    return text[:-3] if ms else text[:-7]


def plotly_text(text: str) -> str:
    """Text for plotly's labels (names, titles): it reads a few HTML tags and entities in them, so markup
    characters go as entities and are shown as typed."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def scaled(v: float | None, factor: float) -> float | None:
    """v × factor, or None where there is no finite value (plotly draws None as a gap; JSON has no inf)."""
    if v is None or not math.isfinite(v):
        return None
    return v * factor


def line_xy(
    bks: Sequence[Bucket], origin: float, step: float, factor: float
) -> tuple[str, list[float | None], list[float | None]]:
    """A line as plotly draws evenly spaced points: the time of its first bucket's middle (its x0; each
    next point is a step later), and the means and peaks of its buckets from the first to the last, None
    (a gap) for each bucket without samples. No x array: a day's page is half as heavy, and no time is
    formatted for each point."""
    first = bks[0].b
    ys: list[float | None] = [None] * (bks[-1].b - first + 1)
    peaks: list[float | None] = [None] * len(ys)
    for bk in bks:
        ys[bk.b - first] = scaled(bk.mean, factor)
        peaks[bk.b - first] = scaled(bk.peak, factor)
    return utc(origin + (first + 0.5) * step, step < 10), ys, peaks


def series_name(s: Series, many_hosts: bool) -> str:
    return "/".join(p for p in ((s.host if many_hosts else ""), s.target, s.metric) if p)


@dataclass
class Panel:
    source: str
    unit: str
    factor: float
    series: list[Series] = field(default_factory=list)


def group(series: Sequence[Series]) -> list[Panel]:
    """One panel per source and unit, in the monitor's source order (series not drawn left out)."""
    panels: dict[tuple[str, str], Panel] = {}
    for s in series:
        unit = series_unit(s)
        if unit is None:
            continue
        key = (s.source, unit[0])
        panels.setdefault(key, Panel(s.source, unit[0], unit[1])).series.append(s)
    order = {src: i for i, src in enumerate(SOURCE_ORDER)}
    return [panels[k] for k in sorted(panels, key=lambda k: (order.get(k[0], 99), k[0], k[1]))]


def _mean(bks: Sequence[Bucket]) -> float:
    """The mean of a series' samples, from its buckets' means and counts."""
    n = sum(b.count for b in bks if b.mean is not None)
    return sum(b.mean * b.count for b in bks if b.mean is not None) / n if n else 0.0


def _summed(lines: Sequence[Sequence[Bucket]]) -> list[Bucket]:
    """Series added up bucket by bucket (their bucket means): the panel's `other` line."""
    total: dict[int, float] = defaultdict(float)
    counts: dict[int, int] = defaultdict(int)
    for bks in lines:
        for b in bks:
            if b.mean is not None:
                total[b.b] += b.mean
                counts[b.b] += b.count
    return [Bucket(b, total[b], None, counts[b]) for b in sorted(total)]


def _short(v: float | None, div: float) -> float | None:
    """v / div to 6 significant digits: what a plot can show, in a third of the page's bytes."""
    return None if v is None else float(f"{v / div:.6g}")


def _trace(name: str, x0: str, step: float, y: list[float | None], peaks: list[float | None], div: float,
           other: bool) -> dict[str, Any]:  # fmt: skip
    trace: dict[str, Any] = {
        "type": "scatter",
        "mode": "lines+markers" if len(y) < 3 else "lines",
        "connectgaps": False,
        "name": plotly_text(name),
        "x0": x0,
        "dx": step * 1000,  # on a date axis, in milliseconds
        "y": [_short(v, div) for v in y],
    }
    if other:  # a sum of means: no one sample's maximum to show
        trace["line"] = {"color": OTHER_COLOR, "dash": "dot"}
    else:
        trace["customdata"] = [_short(v, div) for v in peaks]
        trace["hovertemplate"] = "%{y:.4g} (bucket maximum %{customdata:.4g})"
    return trace


def figure(
    db: Database, panel: Panel, t0: float, t1: float, lines: int, many_hosts: bool
) -> dict[str, Any] | None:
    """The panel's plotly figure; None when none of its series has a sample in the window. One query
    reads the buckets of all its series; the largest (by mean) are drawn, the rest summed."""
    ids = [s.id for s in panel.series]
    points = max(MIN_POINTS, min(TARGET_POINTS, ROWS_BUDGET // len(ids)))
    step = bucket_step(t0, t1, portal_monitor.sampling_interval(db, ids, t0, t1), points)
    origin = bucket_origin(t0, step)
    per_series = portal_monitor.buckets(db, ids, t0, t1, step, origin)
    if not per_series:
        return None
    means = {sid: _mean(bks) for sid, bks in per_series.items()}
    ranked = sorted(
        (s for s in panel.series if s.id in per_series),
        key=lambda s: (-abs(means[s.id]), s.host, s.target, s.metric),
    )
    top, rest = ranked[:lines], ranked[lines:]
    drawn = [
        (series_name(s, many_hosts), line_xy(per_series[s.id], origin, step, panel.factor), False)
        for s in top
    ]
    if rest:
        summed = _summed([per_series[s.id] for s in rest])
        drawn.append(
            (f"other ({len(rest)} series, summed)", line_xy(summed, origin, step, panel.factor), True)
        )
    div, unit = scale_unit(panel.unit, [v for _, (_, y, _), _ in drawn for v in y if v is not None])
    data = [_trace(name, x0, step, y, peaks, div, other) for name, (x0, y, peaks), other in drawn]
    title = f"{panel.source} · {unit}"
    if rest:
        title += f" · {len(top)} largest of {len(ranked)} series, the rest summed"
    layout = plot_layout(
        plotly_text(title),
        xaxis={"type": "date", "gridcolor": "#eee", "title": {"text": "UTC"}, "range": [utc(t0), utc(t1)]},
        yaxis={"gridcolor": "#eee", "rangemode": "tozero", "title": {"text": plotly_text(unit)}},
    )
    return {"data": data, "layout": layout}


def figures(
    db: Database, series: Sequence[Series], t0: float, t1: float, lines: int
) -> tuple[list[tuple[str, dict[str, Any]]], int]:
    """(figure id, figure) of the panels that have samples (at most MAX_PANELS), and how many panels were
    not looked at."""
    panels = group(series)
    many_hosts = len({s.host for s in series}) > 1
    out: list[tuple[str, dict[str, Any]]] = []
    for i, panel in enumerate(panels):
        if len(out) == MAX_PANELS:
            return out, len(panels) - i
        fig = figure(db, panel, t0, t1, lines, many_hosts)
        if fig is not None:
            out.append((f"panel-{i}", fig))
    return out, 0
