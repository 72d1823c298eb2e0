"""The live view of a node (staff): its newest rates as numbers and a plot, followed every second in the
samples the node's monitor (`iolens monitor --db`, in batches) writes into the database.

/live?host=H renders the latest values; its script (static/live.js) then follows /live/stream?host=H, a
stream of server-sent events: once a second the stream asks the database for the host's samples newer than
the last it sent (a store connection borrowed from the pool for that one query, in a worker thread), sends
them as one event whose id is the newest sample's time, and ends after LIFETIME_S, when the browser
reconnects with that id (Last-Event-ID) and goes on where it stopped. Nothing is kept in the server between
requests, so any worker can serve the next one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from iolens.report.html import MIB, plot_layout
from iolens.store import portal_monitor
from iolens.store.db import Database, StoreError
from iolens.store.portal_monitor import Series
from iolens.web import panels, params
from iolens.web.dashboards import clock
from iolens.web.pool import StorePool
from iolens.web.portal import Ctx, page

log = logging.getLogger("iolens.web")

POLL_S = 1.0
LIFETIME_S = 3600.0
KEEPALIVE_S = 15.0
RETRY_MS = 2000
RECENT_S = 600.0  # the table starts with the series that had a sample in the host's last RECENT_S
PLOT_S = 300.0  # the plot starts with the host's last PLOT_S
PLOT_LINES = 6
BATCH = 5000


@dataclass(frozen=True)
class Shown:
    """How one series is shown: its name, unit and the divisor from the stored value."""

    id: int
    source: str
    name: str
    unit: str
    div: float

    def label(self) -> dict[str, Any]:
        return {"source": self.source, "name": self.name, "unit": self.unit, "div": self.div}


def shown(s: Series) -> Shown | None:
    unit = panels.series_unit(s)
    if unit is None:
        return None
    name, factor = unit[0], unit[1]
    div = 1.0 / factor if factor else 1.0
    if name in ("B/s", "B"):  # numbers that change each second: one fixed unit, not rescaled
        name, div = "Mi" + name, div * MIB
    return Shown(s.id, s.source, "/".join(p for p in (s.target, s.metric) if p), name, div)


def _host(ctx: Ctx, known: list[str]) -> str | None:
    """The `host` asked for: one that has series (any characters: it is compared, then shown as text)."""
    host = ctx.query.get("host") or None
    if host is not None and host not in known:
        raise params.bad("host", "no samples are stored for this host")
    return host


def _fmt(v: float | None, div: float) -> str:
    """As live.js shows numbers: 4 significant digits, whole numbers with grouped thousands from 10,000."""
    x = panels.scaled(v, 1.0 / div)
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 1e4 else f"{float(f'{x:.4g}'):g}"


@page(staff=True)
def live(ctx: Ctx) -> Response:
    db = ctx.store.db
    known = portal_monitor.hosts(db)
    host = _host(ctx, known)
    if host is None:
        return ctx.render("live.html", host=None, hosts=known, rows=[], since="", last="-")
    latest = portal_monitor.latest_time(db, host)
    all_shown = [x for s in portal_monitor.live_series(db, host) if (x := shown(s)) is not None]
    values = portal_monitor.latest_values(db, [x.id for x in all_shown], (latest or 0.0) - RECENT_S)
    rows = [
        {
            "id": x.id,
            "source": x.source,
            "name": x.name,
            "unit": x.unit,
            "value": _fmt(values[x.id][1], x.div),
            "time": clock(values[x.id][0])[11:],
        }  # fmt: skip
        for x in all_shown
        if x.id in values
    ]
    figs = [("live-plot", _plot(db, all_shown, values, latest))] if latest is not None and rows else []
    return ctx.render(
        "live.html", host=host, hosts=known, rows=rows, figures=figs,
        since=repr(latest) if latest else "", last=clock(latest)[11:] if latest else "-",
    )  # fmt: skip


def _plot(db: Database, all_shown: list[Shown], values: dict[int, tuple[float, float | None]],
          latest: float) -> dict[str, Any]:  # fmt: skip
    """The host's last PLOT_S of the unit the live view leads with (MiB/s when there is one), its largest
    series; the script extends it. Each trace's `meta` is its series id."""
    units = [x.unit for x in all_shown if x.id in values]
    lead = "MiB/s" if "MiB/s" in units else max(set(units), key=units.count)
    chosen = sorted(
        (x for x in all_shown if x.unit == lead and x.id in values),
        key=lambda x: (-abs(values[x.id][1] or 0.0), x.name),
    )[:PLOT_LINES]
    history = portal_monitor.history(db, [x.id for x in chosen], latest - PLOT_S)
    data = []
    for x in chosen:
        pts = history.get(x.id, [])
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "connectgaps": False,
                "name": panels.plotly_text(x.name),
                "meta": x.id,
                "x": [panels.utc(t) for t, _ in pts],
                "y": [panels.scaled(v, 1.0 / x.div) for _, v in pts],
            }
        )
    layout = plot_layout(
        panels.plotly_text(f"{lead}, last {PLOT_S / 60:.0f} minutes"),
        xaxis={"type": "date", "gridcolor": "#eee", "title": {"text": "UTC"}},
        yaxis={"gridcolor": "#eee", "rangemode": "tozero", "title": {"text": panels.plotly_text(lead)}},
    )
    return {"data": data, "layout": layout}


def _start(ctx: Ctx) -> float:
    """Where the stream starts: after the last event the browser got (Last-Event-ID, on a reconnect),
    else after `since` (the time of the values the page showed), else after the host's newest sample."""
    last = ctx.request.headers.get("last-event-id", "")
    try:
        value = float(last)
        if math.isfinite(value):
            return value
    except ValueError:
        pass
    if ctx.query.get("since"):
        return params.when(ctx.query["since"], "since", time.time())
    return portal_monitor.latest_time(ctx.store.db, ctx.query["host"]) or time.time()


def _poll(
    pool: StorePool, host: str, after: float, known: set[int]
) -> tuple[list[tuple[int, float, float | None]], list[Shown]]:
    """The host's samples after `after` and how to show the series not sent before (one connection,
    borrowed for these queries only)."""
    with pool.store() as store:
        rows = portal_monitor.samples_after(store.db, host, after, BATCH)
        if len(rows) == BATCH and rows[0][1] != rows[-1][1]:
            # The last time may have more samples beyond the batch: it is sent whole with the next one.
            last = rows[-1][1]
            rows = [r for r in rows if r[1] != last]
        new = sorted({r[0] for r in rows} - known)
        labels = [x for s in portal_monitor.series_by_id(store.db, new) if (x := shown(s)) is not None]
    return rows, labels


async def _events(pool: StorePool, host: str, after: float) -> AsyncIterator[str]:
    yield f"retry: {RETRY_MS}\n: samples of {json.dumps(host)} after {after!r}\n\n"
    started = quiet = time.monotonic()
    known: set[int] = set()
    while time.monotonic() - started < LIFETIME_S:
        try:
            rows, labels = await run_in_threadpool(_poll, pool, host, after, known)
        except StoreError as exc:
            # The database went away or the pool is exhausted: end this stream; the browser reconnects
            # after RETRY_MS and goes on from its last event.
            log.warning("live stream of %r ended: %s", host, exc)
            return
        known.update(r[0] for r in rows)
        if rows:
            after = rows[-1][1]
            payload = {
                "labels": {str(x.id): x.label() for x in labels},
                "samples": [[sid, t, v if v is None or math.isfinite(v) else None] for sid, t, v in rows],
            }
            yield f"id: {after!r}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n"
            quiet = time.monotonic()
        elif time.monotonic() - quiet >= KEEPALIVE_S:
            yield ": still here\n\n"
            quiet = time.monotonic()
        await asyncio.sleep(POLL_S)


@page(staff=True)
def stream(ctx: Ctx) -> Response:
    known = portal_monitor.hosts(ctx.store.db)
    host = _host(ctx, known)
    if host is None:
        raise params.bad("host", "which host to follow")
    after = _start(ctx)
    return StreamingResponse(
        _events(ctx.portal.pool, host, after),
        media_type="text/event-stream",
        headers={"x-accel-buffering": "no"},  # a reverse proxy (nginx) passes each event on at once
    )


ROUTES: list[BaseRoute] = [
    Route("/live", live),
    Route("/live/stream", stream),
]
