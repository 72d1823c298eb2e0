"""Terminal output of a find run: the header, a per-rank table, the totals and IO500's rate."""

from __future__ import annotations

import os
import shlex

from rich import box
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from iolens.find_results import FindDocument, FindSection


def _latency(ns: float) -> str:
    if ns >= 1_000_000:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1_000:
        return f"{ns / 1e3:.1f} µs"
    return f"{int(ns)} ns"


def header(doc: FindDocument) -> Text:
    t = Text(overflow="fold")
    t.append(f"iolens find {doc.version}", style="bold")
    t.append(f"   began {doc.started_at or '?'}   ended {doc.ended_at or '?'}")
    if doc.command:
        t.append(f"\ncommand: {shlex.join([os.path.basename(doc.command[0]), *doc.command[1:]])}")
    if doc.host.hostname:
        t.append(f"\nmachine: {doc.host.hostname} ({doc.host.kernel})")
    if doc.comm.ranks:
        nodes = f"{doc.comm.nodes} node" + ("s" if doc.comm.nodes != 1 else "")
        t.append(f"\nranks: {doc.comm.ranks} on {nodes} ({doc.comm.kind})")
    f = doc.find
    if f is not None:
        t.append(f"\nroot: {f.root} ({f.file_system})   predicates: {f.predicates.expression()}")
    return t


def rank_table(f: FindSection) -> Table:
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    for name in ("rank", "scanned", "matched", "stat calls", "time(s)", "busy(s)"):
        t.add_column(name, justify="right", no_wrap=True)
    for r in f.per_rank:
        t.add_row(str(r.rank), f"{r.scanned:,}", f"{r.matched:,}", f"{r.stat_calls:,}", f"{r.time_s:.4f}",
                  f"{r.busy_s:.4f}")  # fmt: skip
    t.add_row("total", f"{f.scanned:,}", f"{f.matched:,}", f"{f.stat_calls:,}", f"{f.time_s:.4f}", "",
              style="bold")  # fmt: skip
    return t


def summary_lines(f: FindSection) -> list[RenderableType]:
    out: list[RenderableType] = [
        Text(f"rate: {f.rate_per_s:,.0f} entries scanned/s ({f.kiops:.3f} kIOPS)", style="bold")
    ]
    lat = f.latency_ns
    if lat.count:
        out.append(
            Text(
                f"stat latency: p50 {_latency(lat.p50)}  p99 {_latency(lat.p99)}  max {_latency(lat.max)}  "
                f"({lat.count:,} calls)",
                style="dim",
            )
        )
    ws = f.work_sharing
    out.append(
        Text(
            f"{ws.levels} directory levels, {f.directories:,} directories read; "
            f"{ws.shared_directories} with more than {ws.split_entries} entries shared by all ranks",
            style="dim",
        )
    )
    if f.stonewall is not None:
        hit = "hit: the walk stopped before the end of the tree" if f.stonewall.hit else "not reached"
        out.append(
            Text(f"stonewall {f.stonewall.deadline_s:g} s: {hit}", style="yellow" if f.stonewall.hit else "")
        )
    if f.errors:
        first = f" first: {f.first_error.message}" if f.first_error else ""
        out.append(Text(f"{f.errors} entries or directories could not be read;{first}", style="yellow"))
    if f.matches_file:
        out.append(Text(f"matching paths: {f.matches_file}"))
    return out


def document(doc: FindDocument) -> Group:
    parts: list[RenderableType] = [header(doc)]
    if doc.find is not None:
        parts.append(rank_table(doc.find))
        parts.extend(summary_lines(doc.find))
    if not doc.ok:
        err = doc.error
        body = Text(err.message if err else "the run failed (no error message)", style="bold")
        if err and err.rank is not None:
            body.append(f"\nrank: {err.rank}", style="")
        parts.append(Panel(body, title="run failed", border_style="red", expand=False))
    return Group(*parts)


def print_document(doc: FindDocument, console: Console | None = None) -> None:
    (console or Console()).print(document(doc))
