"""Terminal views of what the store answers: run lists, a run, comparisons, trends (with a sparkline),
regressions, systems and profile rankings (rich tables)."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from iolens.render import human_bytes, latency
from iolens.report.printable import printable
from iolens.store.queries import Comparison, PhaseFigure, RegressionCheck, fold_phases

SPARKS = "▁▂▃▄▅▆▇█"
GIB = 1024**3
MIB = 1024**2


def when(t: float | None) -> str:
    """Local time to the minute."""
    if t is None or (isinstance(t, float) and math.isnan(t)):
        return "-"
    return datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M")


def value(v: float | None, unit: str | None) -> str:
    """A phase value in the unit people read it in (B/s as GiB/s or MiB/s)."""
    if v is None:
        return "-"
    if unit == "B/s":
        return f"{v / GIB:.3f} GiB/s" if abs(v) >= GIB else f"{v / MIB:.2f} MiB/s"
    if unit in ("GiB/s", "kIOPS"):
        return f"{v:.3f} {unit}"
    if unit == "score":
        return f"{v:.3f}"
    if unit:
        return f"{v:,.1f} {unit}"
    return f"{v:g}"


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"×{a / b:.3f}"


def yes_no(v: bool | None) -> str:
    return "-" if v is None else ("yes" if v else "NO")


def sparkline(values: Sequence[float]) -> str:
    xs = [v for v in values if v is not None and math.isfinite(v)]
    if not xs:
        return ""
    lo, hi = min(xs), max(xs)
    span = hi - lo
    out = []
    for v in values:
        if v is None or not math.isfinite(v):
            out.append(" ")
        elif span == 0:
            out.append(SPARKS[len(SPARKS) // 2])
        else:
            out.append(SPARKS[min(int((v - lo) / span * len(SPARKS)), len(SPARKS) - 1)])
    return "".join(out)


class _Table(Table):
    """A table whose cells are shown as text, never as rich markup, with control characters escaped: the
    cells hold stored names, hosts, commands and paths (report.printable)."""

    def add_row(self, *renderables: RenderableType | None, **kwargs: Any) -> None:
        super().add_row(*(_cell(r) for r in renderables), **kwargs)


def _cell(r: RenderableType | None) -> RenderableType | None:
    if isinstance(r, str):
        return Text(printable(r))
    if isinstance(r, Text) and printable(r.plain) != r.plain:
        return Text(printable(r.plain), style=r.style)
    return r


def _table(*columns: str, right: Sequence[str] = ()) -> Table:
    t = _Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for c in columns:
        t.add_column(c, justify="right" if c in right else "left", overflow="fold")
    return t


def headline(run: dict[str, Any], phases: Sequence[dict[str, Any]]) -> str:
    """A run in a few words: its score, or its main phases' values."""
    if run.get("score") is not None:
        return f"score {run['score']:.3f}"
    figs = [f for f in fold_phases(phases) if f.kind == "phase" and f.value is not None]
    parts = [f"{f.name} {value(f.value, f.unit)}" for f in figs[:3]]
    if len(figs) > 3:
        parts.append(f"+{len(figs) - 3} more")
    return ", ".join(parts)


def runs_table(runs: Sequence[dict[str, Any]], phases: dict[int, list[dict[str, Any]]]) -> Table:
    t = _table("id", "started", "system", "tool", "ranks", "host", "valid", "result", right=("id", "ranks"))
    for r in runs:
        t.add_row(
            str(r["id"]),
            when(r["started_at"]),
            r["system"] or "-",
            r["tool"] + (" (app)" if r["origin"] == "io500-app" else ""),
            str(r["ranks"] or "-"),
            r["hostname"] or "-",
            yes_no(r["valid"]) if r["status"] == "ok" else "failed",
            headline(r, phases.get(r["id"], [])),
        )
    return t


def run_view(run: dict[str, Any]) -> Group:
    head = Text()
    head.append(f"run {run['id']}: {printable(run['tool'])}", style="bold")
    if run["origin"] == "io500-app":
        head.append(" (an official IO500 result directory)")
    head.append(f"   {when(run['started_at'])} → {when(run['ended_at'])}")
    lines = [
        ("system", run["system"] or "-"),
        ("version", run["version"] or "-"),
        ("command", run["command"] or "-"),
        ("ranks/nodes", f"{run['ranks'] or '-'} / {run['nodes'] or '-'}"),
        ("host", run["hostname"] or "-"),
        ("file system", run["file_system"] or "-"),
        ("config hash", run["config_hash"] or "-"),
        ("cache mode", cache_mode_words(run.get("cache_mode"))),
        ("status", run["status"] + ("" if run["valid"] is None else f", valid: {yes_no(run['valid'])}")),
        ("source", run["source_path"] or "-"),
    ]
    if run.get("score") is not None:
        lines.insert(0, ("score", f"{run['score']:.6f}"))
    for k, v in lines:
        head.append(f"\n  {k:<12} {printable(v)}")
    t = _table("phase", "iter", "value", "time s", "p50", "p99", "max", "valid", right=("iter", "time s"))
    for p in run["phases"]:
        t.add_row(
            p["name"] if p["kind"] == "phase" else Text(p["name"], style="bold"),
            str(p["iteration"]),
            value(p["value"], p["unit"]),
            f"{p['time_s']:.3f}" if p["time_s"] is not None else "-",
            latency(p["p50_ns"]) if p["p50_ns"] is not None else "-",
            latency(p["p99_ns"]) if p["p99_ns"] is not None else "-",
            latency(p["max_ns"]) if p["max_ns"] is not None else "-",
            yes_no(p["valid"]),
        )
    return Group(head, Text(""), t)


# Marks a run compared although its page-cache mode differs (iolens compare --allow-mixed-cache): red on a
# terminal, and this mark in plain text where there are no colours.
MIXED_MARK = " *"


def cache_mode_words(mode: str | None) -> str:
    """A run's page-cache mode as a report says it (docs/db.md "Cache modes")."""
    return {
        "evict": "evict (the page cache was dropped before each buffered read: reads measure the storage)",
        "keep": "keep (the page cache was kept before reads, as IOR and the IO500 app: reads may be memory)",
    }.get(mode or "", "-")


def comparison_view(c: Comparison) -> Group:
    ids = [str(r["id"]) for r in c.runs]
    mixed = c.mixed_cache or [False] * len(ids)
    mark = [MIXED_MARK if m else "" for m in mixed]
    cols = ["phase", f"run {ids[0]}{mark[0]}"]
    for i, m in zip(ids[1:], mark[1:], strict=True):
        cols += [f"run {i}{m}", f"{i}/{ids[0]}{m}"]
    t = _table(*cols, right=tuple(cols[1:]))
    for n, flagged in enumerate(mixed):
        # A marked run's figure and ratio columns (never the first run: its mode, or none, is the reference).
        for col in (2 * n, 2 * n + 1) if flagged else ():
            t.columns[col].style = t.columns[col].header_style = "red"
    invalid = False
    for name, figs in c.phases.items():
        base = figs[0]
        row: list[RenderableType] = [name, _figure(base)]
        for f in figs[1:]:
            row += [_figure(f), ratio(f.value if f else None, base.value if base else None)]
        invalid = invalid or any(f is not None and f.valid is False for f in figs)
        t.add_row(*row)
        for key, label in (("p50_ns", "p50"), ("p99_ns", "p99"), ("max_ns", "max")):
            if not any(f is not None and key in f.percentiles for f in figs):
                continue
            row = [Text(f"  {label}", style="dim")]
            b = base.percentiles.get(key) if base else None
            row.append(latency(b) if b is not None else "-")
            for f in figs[1:]:
                x = f.percentiles.get(key) if f else None
                row += [latency(x) if x is not None else "-", ratio(x, b)]
            t.add_row(*row)
    validity = ["valid"] + [yes_no(c.runs[0]["valid"])]
    for r in c.runs[1:]:
        validity += [yes_no(r["valid"]), ""]
    t.add_row(*[Text(v, style="bold") for v in validity])
    parts: list[RenderableType] = [t]
    if any(mixed):
        odd = ", ".join(f"run {r['id']} {r['cache_mode']}" for r, m in zip(c.runs, mixed, strict=True) if m)
        parts.append(
            Text(
                f"* {odd}: not the page-cache mode of the others ({c.reference_cache_mode}): compared anyway "
                "(--allow-mixed-cache): read figures of different cache modes are not like-for-like",
                style="bold red",
            )
        )
    if invalid:
        why = "IO500: the app's ERROR INVALID; other tools: verify errors"
        parts.append(Text(f"INVALID: the phase was not valid in that run ({why})", style="dim"))
    if c.run_differences or c.config_differences:
        d = _table("what differs", *[f"run {i}" for i in ids])
        for k, vals in c.run_differences.items():
            d.add_row(k, *[_short(v) for v in vals])
        for k, vals in c.config_differences.items():
            d.add_row(f"config {k}", *[_short(v) for v in vals])
        parts += [Text(""), d]
    else:
        parts += [Text("same configuration", style="dim")]
    return Group(*parts)


def _figure(f: PhaseFigure | None) -> Text:
    """A run's value of a phase in a comparison, marked when that phase was not valid in that run."""
    if f is None:
        return Text("-")
    out = Text(value(f.value, f.unit))
    if f.valid is False:
        out.append(" INVALID", style="bold red")
    return out


def _short(v: Any, width: int = 60) -> str:
    if v is None:
        return "-"
    s = v if isinstance(v, str) else json.dumps(v)
    return s if len(s) <= width else s[: width - 1] + "…"


def trend_view(rows: Sequence[dict[str, Any]], phase: str, system: str | None, show: int = 20) -> Group:
    values = [r["value"] for r in rows]
    unit = rows[0]["unit"] if rows else None
    head = Text()
    head.append(printable(phase), style="bold")
    head.append(f" on {printable(system)}" if system else " (every system)")
    if not rows:
        head.append(": no runs")
        return Group(head)
    head.append(f": {len(rows)} run(s), {when(rows[0]['started_at'])} → {when(rows[-1]['started_at'])}\n")
    head.append(sparkline(values), style="cyan")
    med = statistics.median(values)
    head.append(
        f"\nmin {value(min(values), unit)}   median {value(med, unit)}   max {value(max(values), unit)}   "
        f"latest {value(values[-1], unit)} ({ratio(values[-1], med)} of the median)"
    )
    hashes = {r["config_hash"] for r in rows}
    if len(hashes) > 1:
        head.append(f"\n{len(hashes)} different configurations (config hash column)", style="yellow")
    modes = sorted({r["cache_mode"] for r in rows if r.get("cache_mode")})
    if len(modes) > 1:
        head.append(
            f"\nruns of {len(modes)} page-cache modes ({', '.join(modes)}): their read figures are not "
            "like-for-like (each run's mode is beside its config hash)",
            style="yellow",
        )
    t = _table(
        "run", "started", "value", "vs median", "config hash", "valid", right=("run", "value", "vs median")
    )
    for r in rows[-show:]:
        t.add_row(
            str(r["run_id"]), when(r["started_at"]), value(r["value"], unit), ratio(r["value"], med),
            (r["config_hash"] or "-") + (f" {r['cache_mode'] or '-'}" if len(modes) > 1 else ""),
            yes_no(r["valid"]),
        )  # fmt: skip
    note = Text(f"(the latest {show} of {len(rows)})", style="dim") if len(rows) > show else Text("")
    return Group(head, Text(""), t, note)


def regressions_view(checks: Sequence[RegressionCheck], show_all: bool, min_history: int) -> Group:
    flagged = [c for c in checks if c.regression]
    shown = checks if show_all else flagged
    parts: list[RenderableType] = []
    if shown:
        t = _table(
            "system", "tool", "phase", "config", "latest run", "value", "median (n)", "MAD", "change", "",
            right=("latest run", "value", "median (n)", "MAD", "change"),
        )  # fmt: skip
        for c in shown:
            t.add_row(
                c.system or "-",
                c.tool,
                c.phase,
                (c.config_hash or "-")[:12] + (f" {c.cache_mode}" if c.cache_mode else ""),
                f"{c.run_id} ({when(c.started_at)})",
                value(c.value, c.unit),
                f"{value(c.median, c.unit)} ({c.history})" if c.median is not None else f"- ({c.history})",
                value(c.mad, c.unit) if c.mad is not None else "-",
                f"{-c.drop * 100:+.1f}%" if c.drop is not None else "-",
                Text("REGRESSION", style="bold red") if c.regression else "",
            )
        parts.append(t)
    enough = sum(1 for c in checks if c.history >= min_history)
    summary = (
        f"{len(flagged)} regression(s)" if flagged else "no regression"
    ) + f" in {len(checks)} series checked ({enough} with at least {min_history} earlier like-for-like runs)"
    parts.append(Text(summary, style="bold red" if flagged else "bold"))
    return Group(*parts)


def systems_table(rows: Sequence[dict[str, Any]]) -> Table:
    t = _table("name", "site", "file system", "servers", "clients", "runs", "profiles", "description",
               right=("servers", "clients", "runs", "profiles"))  # fmt: skip
    for r in rows:
        fs = " ".join(x for x in (r["fs_type"], r["fs_version"]) if x) or "-"
        t.add_row(
            r["name"], r["site"] or "-", fs, str(r["servers"] or "-"), str(r["clients"] or "-"),
            str(r["runs"]), str(r["profiles"]), r["description"] or "",
        )  # fmt: skip
    return t


def jobs_table(rows: Sequence[dict[str, Any]], by: str) -> Table:
    t = _table(
        "profile", "job", "started", "program", "procs", "bytes", "meta share", "small I/Os", "files",
        right=("procs", "bytes", "meta share", "small I/Os", "files"),
    )  # fmt: skip
    for r in rows:
        t.add_row(
            f"profile:{r['id']}",
            r["job_id"] or "-",
            when(r["started_at"]),
            _short((r["exe"] or "-").rsplit("/", 1)[-1], 30),
            str(r["processes"] or "-"),
            human_bytes((r["bytes_read"] or 0) + (r["bytes_written"] or 0)),
            f"{(r['meta_share'] or 0) * 100:.1f}%",
            f"{r['small_ios'] or 0:,}",
            f"{r['files'] or 0:,}",
        )
    t.title = {"bytes": "by bytes moved", "meta": "by metadata share of I/O time", "small": "by small I/Os"}[
        by
    ]
    return t


def profile_view(p: dict[str, Any], top: Sequence[dict[str, Any]]) -> Group:
    head = Text()
    head.append(f"profile:{p['id']} ({printable(p['origin'])})", style="bold")
    head.append(f"   job {printable(p['job_id'] or '-')}   {when(p['started_at'])} → {when(p['ended_at'])}")
    io_time = (p["read_time_s"] or 0) + (p["write_time_s"] or 0) + (p["meta_time_s"] or 0)
    meta = f"{p['meta_ops'] or 0:,} operations ({p['opens'] or 0:,} opens, {p['stats'] or 0:,} stats)"
    times = (
        f"{io_time:.3f} s (read {p['read_time_s'] or 0:.3f}, write {p['write_time_s'] or 0:.3f}, "
        f"metadata {p['meta_time_s'] or 0:.3f})"
    )
    lines = [
        ("system", p["system"] or "-"),
        ("program", p["exe"] or "-"),
        ("command", p["command"] or "-"),
        ("processes", f"{p['processes'] or '-'} on {p['hosts'] or '-'} host(s)"),
        ("read", f"{human_bytes(p['bytes_read'] or 0)} in {p['reads'] or 0:,} calls"),
        ("written", f"{human_bytes(p['bytes_written'] or 0)} in {p['writes'] or 0:,} calls"),
        ("metadata", meta),
        ("I/O time", times),
        ("small I/Os", f"{p['small_ios'] or 0:,} (up to 1 MiB)"),
        ("files", f"{p['files'] or 0:,}"),
    ]
    if p["truncated"]:
        lines.append(("note", "the log was cut short (the job was killed, or a bound was hit)"))
    for k, v in lines:
        head.append(f"\n  {k:<11} {printable(v)}")
    t = _table(
        "file", "read", "written", "opens", "I/O time s", right=("read", "written", "opens", "I/O time s")
    )
    for f in top:
        busy = sum(f.get(k) or 0 for k in ("read_time_s", "write_time_s", "meta_time_s"))
        opens = f.get("opens")
        t.add_row(
            _short(f["path"], 70),
            human_bytes(f.get("bytes_read") or 0),
            human_bytes(f.get("bytes_written") or 0),
            f"{opens:,}" if isinstance(opens, int) else "-",
            f"{busy:.3f}",
        )
    parts: list[RenderableType] = [head, Text(""), t]
    advice = (p.get("document") or {}).get("advice")
    if isinstance(advice, list):  # a Darshan log's profile has none
        from iolens.profile.report import advice_panels

        parts += [Text(""), *advice_panels([a for a in advice if isinstance(a, dict)])]
    return Group(*parts)
