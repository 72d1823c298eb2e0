"""Terminal output of a result document with rich: a view per workload (VIEWS) built from shared pieces
(the header, column tables, the error panel), with IOR's and mdtest's tables, notes and warnings, and fio's
report (its figures computed by fio_report)."""

from __future__ import annotations

import math
import os
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from rich import box
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from iolens import fio_report
from iolens.report import ior_test
from iolens.results import (
    Document,
    FindDocument,
    FindRankStat,
    FindSection,
    FioDocument,
    FioGroup,
    FioInstance,
    FioJob,
    FioLatency,
    IorDocument,
    MdtestDocument,
    MdtestPhase,
    MdwbPhase,
    MdworkbenchDocument,
    Phase,
    SummaryEntry,
)

MiB = 1024 * 1024
KiB = 1024


# --- figures ------------------------------------------------------------------------------------------------


def mib(n: float) -> str:
    return f"{n / MiB:.2f}"


def human_bytes(n: float) -> str:
    for unit, size in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", MiB), ("KiB", KiB)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} B"


def latency(ns: float) -> str:
    """Milliseconds where a figure is large enough to read well in them, microseconds below."""
    if ns >= 1_000_000:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1_000:
        return f"{ns / 1e3:.1f} µs"
    return f"{int(ns)} ns"


def seconds(s: float) -> str:
    return f"{s:.4f}"


def rate(r: float) -> str:
    """Items per second with three decimals, as mdtest prints them."""
    return f"{r:.3f}"


def _cfg(doc: Document, key: str, default: Any = None) -> Any:
    return doc.config.get(key, default)


def _kib(value: Any) -> str:
    return f"{value / KiB:.2f}" if isinstance(value, int | float) and not isinstance(value, bool) else "-"


def _yes(value: Any) -> str:
    return "yes" if value in (True, 1, "1", "yes") else "no"


def _size(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return human_bytes(value).replace(".00 ", " ")
    return str(value) if value is not None else "-"


# --- pieces every view uses ---------------------------------------------------------------------------------


def header(doc: Document, *more: str) -> Text:
    """What ran, where and when, from the envelope; then the workload's own lines (`more`)."""
    comm = doc.comm
    # Built with append, not markup: paths and command lines may hold '[' characters.
    t = Text(overflow="fold")
    t.append(f"iolens {doc.workload} {doc.version}", style="bold")
    t.append(f"   began {doc.started_at or '?'}   ended {doc.ended_at or '?'}")
    if doc.command:
        # The engine's full path (deep in site-packages) says nothing the version line does not.
        argv = [os.path.basename(doc.command[0]), *doc.command[1:]]
        t.append(f"\ncommand: {shlex.join(argv)}")
    if doc.host.hostname:
        t.append(f"\nmachine: {doc.host.hostname} ({doc.host.kernel})")
    if comm.ranks:
        nodes = f"{comm.nodes} node" + ("s" if comm.nodes != 1 else "")
        t.append(f"\nranks: {comm.ranks} on {nodes} ({comm.kind}), {comm.tasks_per_node} per node")
    for line in more:
        t.append(f"\n{line}")
    return t


# Below this console width the tables drop their secondary columns rather than truncate figures.
FULL_WIDTH = 120

# Right padding only: the box's column separator is a space already, so columns sit two apart and the
# per-phase table fits a 120-column terminal.
_PADDING = (0, 1, 0, 0)

_R = TypeVar("_R")

# (header, essential, cell of a row): essential columns stay in the compact form of a table.
Column = tuple[str, bool, Callable[[_R], str]]


def columns_table(
    columns: Sequence[Column[_R]], rows: Iterable[_R], compact: bool = False, title: str | None = None
) -> Table:
    """A table of one row per item, IOR-style: the first column names the row, the figures align right."""
    cols = [c for c in columns if c[1] or not compact]
    t = Table(
        title=title, box=box.SIMPLE_HEAD, pad_edge=False, padding=_PADDING, show_edge=False,
        title_justify="left", title_style="bold",
    )  # fmt: skip
    for i, (name, _, _) in enumerate(cols):
        t.add_column(name, justify="left" if i == 0 else "right", no_wrap=True)
    for row in rows:
        t.add_row(*(cell(row) for _, _, cell in cols))
    return t


def verify_line(p: Phase | MdtestPhase, checked: str, where: str) -> Text:
    """A phase's verification: `checked` says how much was, `where` where the first bad byte is."""
    assert p.verify is not None
    what = f"verify {p.name} iter {p.iteration}: {checked}"
    if p.verify.errors == 0:
        return Text(f"{what}, no errors", style="green")
    return Text(f"VERIFICATION FAILED: {what}, {p.verify.errors} bytes differ{where}", style="bold red")


def error_panel(doc: Document) -> Panel:
    err = doc.error
    message = err.message if err else "the run failed (no error message)"
    where = []
    if err and err.phase:
        where.append(f"phase: {err.phase}")
    # A negative rank means no single rank (mdtest's verification sums every rank's errors).
    if err and err.rank is not None and err.rank >= 0:
        where.append(f"rank: {err.rank}")
    body = Text(message, style="bold")
    if where:
        body.append("\n" + ", ".join(where), style="")
    return Panel(body, title="run failed", border_style="red", expand=False)


# --- ior ----------------------------------------------------------------------------------------------------


def _ior_phase_columns(doc: IorDocument) -> list[Column[Phase]]:
    block, xfer = _kib(_cfg(doc, "block-size")), _kib(_cfg(doc, "transfer-size"))
    return [
        ("access", True, lambda p: p.name),
        ("bw(MiB/s)", True, lambda p: mib(p.bw_bytes_per_s)),
        ("IOPS", True, lambda p: f"{p.ops_per_s:.0f}"),
        ("lat p50", True, lambda p: latency(p.latency_ns.p50)),
        ("lat p99", True, lambda p: latency(p.latency_ns.p99)),
        ("lat max", True, lambda p: latency(p.latency_ns.max)),
        ("block(KiB)", False, lambda p: block),
        ("xfer(KiB)", False, lambda p: xfer),
        ("open(s)", False, lambda p: seconds(p.times.open_s)),
        ("wr/rd(s)", True, lambda p: seconds(p.times.xfer_s)),
        ("close(s)", False, lambda p: seconds(p.times.close_s)),
        ("total(s)", True, lambda p: seconds(p.times.total_s)),
        ("iter", True, lambda p: str(p.iteration)),
    ]


_IOR_SUMMARY_COLUMNS: list[Column[SummaryEntry]] = [
    ("Operation", True, lambda s: s.name),
    ("Max(MiB/s)", True, lambda s: mib(s.bw_max_bytes_per_s)),
    ("Min(MiB/s)", True, lambda s: mib(s.bw_min_bytes_per_s)),
    ("Mean(MiB/s)", True, lambda s: mib(s.bw_mean_bytes_per_s)),
    ("StdDev", False, lambda s: mib(s.bw_stddev_bytes_per_s)),
    ("Max(OPs)", False, lambda s: f"{s.ops_max_per_s:.2f}"),
    ("Min(OPs)", False, lambda s: f"{s.ops_min_per_s:.2f}"),
    ("Mean(OPs)", True, lambda s: f"{s.ops_mean_per_s:.2f}"),
    ("StdDev", False, lambda s: f"{s.ops_stddev_per_s:.2f}"),
    ("Mean(s)", True, lambda s: seconds(s.time_mean_s)),
    ("lat p99", True, lambda s: latency(s.latency_ns.p99)),
]


def ior_parameters_line(doc: IorDocument) -> Text:
    """The test parameters IOR prints beside its summary, on one line so the table fits a terminal."""
    comm = doc.comm
    layout = "file per process" if _yes(_cfg(doc, "file-per-proc")) == "yes" else "shared file"
    parts = [
        f"{comm.ranks} tasks, {comm.tasks_per_node} per node",
        f"{_cfg(doc, 'repetitions', '-')} repetition(s)",
        layout,
        f"transfer {_size(_cfg(doc, 'transfer-size'))}",
        f"block {_size(_cfg(doc, 'block-size'))}",
        f"{_cfg(doc, 'segment-count', '-')} segment(s)",
        f"api {str(_cfg(doc, 'api', '-')).upper()}",
    ]
    return Text(", ".join(parts), style="dim")


def ior_stonewall_lines(doc: IorDocument) -> list[Text]:
    out = []
    for p in doc.phases:
        sw = p.stonewall
        if sw is None:
            continue
        spread = (sw.pairs_max - sw.pairs_min) / sw.pairs_max * 100 if sw.pairs_max else 0.0
        line = (
            f"stonewall {p.name} iter {p.iteration}: deadline {sw.deadline_s:g} s, last rank stopped at "
            f"{sw.time_s:.2f} s; transfers per rank min {sw.pairs_min} max {sw.pairs_max} "
            f"(spread {spread:.1f}%), {human_bytes(sw.bytes_at_deadline)} by the deadline"
        )
        if sw.wear_out:
            line += f"; wear-out: every rank went on to {sw.pairs_max}, {human_bytes(p.bytes)} in all"
        out.append(Text(line, style="yellow" if spread > 20 else ""))
    return out


def ior_verify_lines(doc: IorDocument) -> list[Text]:
    out = []
    for p in doc.phases:
        v = p.verify
        if v is None:
            continue
        where = ""
        if v.first_bad_offset is not None:
            where = f", first at offset {v.first_bad_offset}"
            if v.first_bad_rank is not None:
                where += f" of rank {v.first_bad_rank}"
        out.append(verify_line(p, f"{human_bytes(v.bytes_checked)} checked", where))
    return out


def ior_cache_notes(doc: IorDocument) -> list[RenderableType]:
    """One line per kind of cache situation, not one per iteration; a cache figure gets a loud panel."""
    out: list[RenderableType] = []
    warned: set[str] = set()
    evicted_said = direct_said = False
    for p in doc.phases:
        c = p.cache
        if c.o_direct and not direct_said:
            out.append(Text("O_DIRECT: transfers bypass the page cache", style="dim"))
            direct_said = True
        if p.name != "read" or p.bytes == 0:
            continue
        if c.may_be_cache_figure:
            note = c.note or "the data read may still have been in this node's page cache"
            if note not in warned:
                warned.add(note)
                out.append(
                    Panel(
                        Text(f"Read bandwidth is likely a PAGE-CACHE figure, not the storage's.\n{note}"),
                        title="warning: cache",
                        border_style="bold yellow",
                        expand=False,
                    )
                )
        elif c.evicted and not evicted_said:
            msg = "read: the written files were evicted from the page cache before reading"
            out.append(Text(msg + (f" ({c.note})" if c.note else ""), style="dim"))
            evicted_said = True
    return out


def ior_api_lines(doc: IorDocument) -> list[RenderableType]:
    """For a backend over an MPI library: the transfer mode and the hints in effect as the library reported
    them; with -H the hints passed and returned, in IOR's layout."""
    api = doc.api
    if not api.is_mpi:
        return []
    out: list[RenderableType] = []
    if _yes(_cfg(doc, "mpiio.showHints")) == "yes":
        for block in ior_test.hint_blocks(api.name, api.hints_passed, api.hints):
            out.append(Text("\n".join(block)))
    mode = "collective" if api.collective else "independent"
    extra = [w for w, on in (("file view", api.file_view), ("preallocated", api.preallocate)) if on]
    hints = ", ".join(f"{k}={v}" for k, v in (api.hints or {}).items()) or "none"
    line = f"{api.name.upper()}: {mode} transfers{''.join(', ' + e for e in extra)}; hints in effect: {hints}"
    out.append(Text(line, style="dim"))
    return out


def ior_document(doc: IorDocument, width: int = FULL_WIDTH) -> Group:
    """Everything about an ior run, in the order a reader of IOR's output expects it."""
    compact = width < FULL_WIDTH
    target = []
    if doc.target.path:
        fs = doc.target.file_system or "?"
        target.append(f"path: {doc.target.path} ({fs}), {doc.target.files} file(s) per iteration")
    parts: list[RenderableType] = [header(doc, *target)]
    if doc.phases:
        parts.append(columns_table(_ior_phase_columns(doc), doc.phases, compact))
    parts.extend(ior_stonewall_lines(doc))
    parts.extend(ior_verify_lines(doc))
    parts.extend(ior_cache_notes(doc))
    parts.extend(ior_api_lines(doc))
    if doc.summary:
        parts.append(columns_table(_IOR_SUMMARY_COLUMNS, doc.summary, compact, "Summary of all tests"))
        parts.append(ior_parameters_line(doc))
    if not doc.ok:
        parts.append(error_panel(doc))
    return Group(*parts)


# --- mdtest -------------------------------------------------------------------------------------------------

# mdtest's own words for each phase, in the order of its "SUMMARY rate" table.
MDTEST_OPERATIONS = {
    "dir-create": "Directory creation",
    "dir-stat": "Directory stat",
    "dir-rename": "Directory rename",
    "dir-remove": "Directory removal",
    "file-create": "File creation",
    "file-stat": "File stat",
    "file-read": "File read",
    "file-remove": "File removal",
    "tree-create": "Tree creation",
    "tree-remove": "Tree removal",
}


def _operation(name: str) -> str:
    return MDTEST_OPERATIONS.get(name, name)


def _operation_order(name: str) -> tuple[int, str]:
    order = list(MDTEST_OPERATIONS)
    return (order.index(name) if name in order else len(order), name)


def mdtest_header(doc: MdtestDocument) -> RenderableType:
    """The common header, then the tree as mdtest describes it ("N tasks, M files/directories")."""
    head = header(doc)
    g = doc.geometry
    if g is None:
        return head
    t = Text(overflow="fold")
    ranks = doc.comm.ranks or 1
    kinds = []
    if _yes(_cfg(doc, "files-only")) == "yes":
        kinds.append("files")
    if _yes(_cfg(doc, "dirs-only")) == "yes":
        kinds.append("directories")
    what = "/".join(kinds) if kinds else "items"
    t.append(f"{ranks} tasks, {g.items_per_rank * ranks} {what} ({g.items_per_rank} per rank)")
    shape = f"depth {g.depth}, branch {g.branch}" if g.depth else "a single directory"
    t.append(f"\ntree: {shape}, {g.dirs_in_tree} director{'y' if g.dirs_in_tree == 1 else 'ies'}")
    t.append(f"{', items in the leaves only' if g.leaf_only else ''}; {g.items_per_dir} items per directory")
    if g.loops != 1:
        t.append(f", {g.loops} test directories per iteration")
    t.append("; a tree per rank (-u)" if g.unique_dir else "; one tree shared by all ranks")
    if g.paths:
        t.append(f"\npath: {' @ '.join(g.paths)}")
    return Group(head, t)


_MDTEST_PHASE_COLUMNS: list[Column[MdtestPhase]] = [
    ("phase", True, lambda p: p.name),
    ("iter", True, lambda p: str(p.iteration)),
    ("items", True, lambda p: str(p.items)),
    ("time(s)", True, lambda p: seconds(p.time_s)),
    ("rate/s", True, lambda p: rate(p.rate_per_s)),
    ("IO500 rate/s", True, lambda p: rate(p.io500_rate_per_s)),
    ("lat p50", False, lambda p: latency(p.latency_ns.p50)),
    ("lat p99", True, lambda p: latency(p.latency_ns.p99)),
    ("lat max", False, lambda p: latency(p.latency_ns.max)),
]


@dataclass(frozen=True)
class MdtestStatRow:
    """A row of mdtest's SUMMARY tables: one operation's figure over the iterations."""

    name: str
    max: float
    min: float
    mean: float
    stddev: float


def mdtest_time_rows(doc: MdtestDocument) -> list[MdtestStatRow]:
    """The phases' times (barrier to barrier) over the iterations, as the engine's -P table computes them."""
    times: dict[str, list[float]] = {}
    for p in doc.phases:
        times.setdefault(p.name, []).append(p.time_s)
    rows = []
    for name, ts in times.items():
        mean = sum(ts) / len(ts)
        sd = math.sqrt(sum((t - mean) ** 2 for t in ts) / len(ts))
        rows.append(MdtestStatRow(name, max(ts), min(ts), mean, sd))
    return rows


def _mdtest_stat_table(
    doc: MdtestDocument, what: str, rows: list[MdtestStatRow], fmt: Callable[[float], str]
) -> Table:
    iterations = max((s.iterations for s in doc.summary), default=0)
    columns: list[Column[MdtestStatRow]] = [
        ("Operation", True, lambda s: _operation(s.name)),
        ("Max", True, lambda s: fmt(s.max)),
        ("Min", True, lambda s: fmt(s.min)),
        ("Mean", True, lambda s: fmt(s.mean)),
        ("Std Dev", True, lambda s: fmt(s.stddev)),
    ]
    ordered = sorted(rows, key=lambda row: _operation_order(row.name))
    return columns_table(columns, ordered, title=f"SUMMARY {what}: (of {iterations} iterations)")


def mdtest_summary_table(doc: MdtestDocument) -> Table:
    """mdtest 4's "SUMMARY rate (in ops/sec): (of N iterations)", its operations in mdtest's order."""
    rows = [
        MdtestStatRow(s.name, s.rate_max_per_s, s.rate_min_per_s, s.rate_mean_per_s, s.rate_stddev_per_s)
        for s in doc.summary
    ]
    return _mdtest_stat_table(doc, "rate (in ops/sec)", rows, rate)


def mdtest_time_table(doc: MdtestDocument) -> Table:
    """mdtest's "SUMMARY time (in s): (of N iterations)", printed with -P (--print-rate-and-time)."""
    return _mdtest_stat_table(doc, "time (in s)", mdtest_time_rows(doc), seconds)


def mdtest_stonewall_lines(doc: MdtestDocument) -> list[Text]:
    out = []
    for p in doc.phases:
        sw = p.stonewall
        if sw is None:
            continue
        where = f"{p.name} iter {p.iteration}"
        if not sw.hit:
            not_hit = f"stonewall {where}: the {sw.deadline_s:g} s deadline was not reached"
            out.append(Text(not_hit, style="dim"))
            continue
        ranks = len(p.per_rank) or doc.comm.ranks or 1
        avg = sw.items_sum_at_deadline / ranks
        spread = (sw.items_max - sw.items_min) / sw.items_max * 100 if sw.items_max else 0.0
        line = (
            f"Continue stonewall hit min: {sw.items_min} max: {sw.items_max} avg: {avg:.1f} "
            f"({where}, deadline {sw.deadline_s:g} s, spread {spread:.1f}%)"
        )
        out.append(Text(line, style="yellow" if spread > 20 else ""))
    return out


def mdtest_verify_lines(doc: MdtestDocument) -> list[Text]:
    out = []
    for p in doc.phases:
        v = p.verify
        if v is None:
            continue
        where = f", first in {v.first_bad_path}" if v.first_bad_path else ""
        out.append(verify_line(p, f"{v.files_checked} files, {human_bytes(v.bytes_checked)} checked", where))
    return out


def mdtest_document(doc: MdtestDocument, width: int = FULL_WIDTH) -> Group:
    """Everything about an mdtest run, in the order a reader of mdtest's output expects it."""
    compact = width < FULL_WIDTH
    parts: list[RenderableType] = [mdtest_header(doc)]
    if doc.phases:
        columns = _MDTEST_PHASE_COLUMNS
        if len({p.tasks for p in doc.phases}) > 1:
            # a task range (-f -l -s): which test each phase belongs to
            columns = [columns[0], ("tasks", True, lambda p: str(p.tasks)), *columns[1:]]
        parts.append(columns_table(columns, doc.phases, compact))
    parts.extend(mdtest_stonewall_lines(doc))
    parts.extend(mdtest_verify_lines(doc))
    if doc.summary:
        parts.append(mdtest_summary_table(doc))
        if _yes(_cfg(doc, "print-rate-and-time")) == "yes":
            parts.append(mdtest_time_table(doc))
    if not doc.ok:
        parts.append(error_panel(doc))
    return Group(*parts)


# --- md-workbench -------------------------------------------------------------------------------------------


def _mdwb_lat(p: MdwbPhase, name: str) -> str:
    lat = p.latency_ns.get(name)
    return f"{latency(lat.p50)} / {latency(lat.p99)}" if lat is not None else "-"


_MDWB_PHASE_COLUMNS: list[Column[MdwbPhase]] = [
    ("phase", True, lambda p: p.name + (f" {p.iteration}" if p.name == "benchmark" else "")),
    ("rate(iops/s)", True, lambda p: f"{p.rate_per_s:,.1f}" if p.rate_per_s is not None else "-"),
    ("objects", True, lambda p: f"{p.objects:,}"),
    ("time(s)", True, lambda p: seconds(p.time_s)),
    ("op-max(s)", False, lambda p: f"{p.max_op_time_s:.4e}"),
    ("errors", True, lambda p: str(p.errors)),
    ("stat p50/p99", False, lambda p: _mdwb_lat(p, "stat")),
    ("read p50/p99", False, lambda p: _mdwb_lat(p, "read")),
    ("create p50/p99", False, lambda p: _mdwb_lat(p, "create")),
    ("delete p50/p99", False, lambda p: _mdwb_lat(p, "delete")),
]


def mdworkbench_document(doc: MdworkbenchDocument, width: int = FULL_WIDTH) -> Group:
    """An md-workbench run: what ran, a row per phase (md-workbench's rate, objects, time, latencies)."""
    more = []
    s = doc.md_workbench
    if s is not None:
        more.append(
            f"data sets: {_cfg(doc, 'data-sets')} per rank in {_cfg(doc, 'output-dir')}, precreate "
            f"{_cfg(doc, 'precreate-per-set')} and {_cfg(doc, 'obj-per-proc')} per iteration, objects of "
            f"{_cfg(doc, 'object-size')} bytes; position {s.start_index} -> {s.end_index}"
        )
    parts: list[RenderableType] = [header(doc, *more)]
    if doc.phases:
        parts.append(columns_table(_MDWB_PHASE_COLUMNS, doc.phases, width < FULL_WIDTH))
    if s is not None and s.verify_bytes:
        style = "bold red" if s.verify_errors else "green"
        checked = f"verify: {s.verify_bytes:,} bytes checked, {s.verify_errors:,} differ"
        parts.append(Text(checked, style=style))
    if not doc.ok:
        parts.append(error_panel(doc))
    return Group(*parts)


# --- find ---------------------------------------------------------------------------------------------------

_FIND_RANK_COLUMNS: list[Column[FindRankStat]] = [
    ("rank", True, lambda r: str(r.rank)),
    ("scanned", True, lambda r: f"{r.scanned:,}"),
    ("matched", True, lambda r: f"{r.matched:,}"),
    ("stat calls", True, lambda r: f"{r.stat_calls:,}"),
    ("time(s)", True, lambda r: seconds(r.time_s)),
    ("busy(s)", True, lambda r: seconds(r.busy_s)),
]


def find_rank_table(f: FindSection) -> Table:
    """A row per rank, then the totals (time: the walk's, from the first rank's start to the last's end)."""
    t = columns_table(_FIND_RANK_COLUMNS, f.per_rank)
    t.add_row("total", f"{f.scanned:,}", f"{f.matched:,}", f"{f.stat_calls:,}", seconds(f.time_s), "",
              style="bold")  # fmt: skip
    return t


def find_summary_lines(f: FindSection) -> list[RenderableType]:
    out: list[RenderableType] = [
        Text(f"rate: {f.rate_per_s:,.0f} entries scanned/s ({f.kiops:.3f} kIOPS)", style="bold")
    ]
    lat = f.latency_ns
    if lat.count:
        out.append(
            Text(
                f"stat latency: p50 {latency(lat.p50)}  p99 {latency(lat.p99)}  max {latency(lat.max)}  "
                f"({lat.count:,} calls)",
                style="dim",
            )
        )
    ws = f.work_sharing
    out.append(
        Text(
            f"{ws.levels} directory levels, {f.directories:,} directories read; "
            f"{ws.shared_directories} with more than {ws.split_entries} entries shared by all ranks"
            + (f" in {ws.shared_chunks:,} chunks" if ws.shared_chunks else ""),
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


def find_document(doc: FindDocument, width: int = FULL_WIDTH) -> Group:
    """Everything about a find run: the rank table fits any width, so `width` changes nothing."""
    f = doc.find
    root = [f"root: {f.root} ({f.file_system})   predicates: {f.predicates.expression()}"] if f else []
    parts: list[RenderableType] = [header(doc, *root)]
    if f is not None:
        parts.append(find_rank_table(f))
        parts.extend(find_summary_lines(f))
    if not doc.ok:
        parts.append(error_panel(doc))
    return Group(*parts)


# --- fio ----------------------------------------------------------------------------------------------------

_FIO_DIR_LABEL = {"read": "READ", "write": "WRITE"}


def _fio_lat_line(name: str, lat: FioLatency) -> Text:
    """fio's `clat (usec): min=…, max=…, avg=…, stdev=…`, in the unit fio would pick for these figures."""
    mn, mx, mean, sd = lat.stats
    unit, div = fio_report.latency_unit(mn, mx)
    low = fio_report.fio_number(mn // div, False, digits=6)
    high = fio_report.fio_number(mx // div, False, digits=6)
    return Text(f"    {name} ({unit}): min={low}, max={high}, avg={mean / div:5.2f}, stdev={sd / div:5.2f}")


def fio_percentile_lines(name: str, lat: FioLatency) -> list[Text]:
    """fio's percentile block (`clat percentiles (usec):` then `|  1.00th=[  129], …` four to a line), with
    fio's default percentiles computed from the histogram."""
    points = fio_report.percentiles(lat)
    if not points:
        return []
    values = [v for _, v in points]
    unit, div = fio_report.latency_unit(min(values), max(values))
    scaled = [fio_report.ceil_div(v, div) for v in values]
    width = max(5, len(str(max(scaled))))
    items = [f" {float(p):5.2f}th=[{v:>{width}}]" for (p, _), v in zip(points, scaled, strict=True)]
    per_line = 73 // (12 + width)
    chunks = [items[i : i + per_line] for i in range(0, len(items), per_line)]
    out = [Text(f"    {name} percentiles ({unit}):")]
    for i, chunk in enumerate(chunks):
        out.append(Text("     |" + ",".join(chunk) + ("," if i < len(chunks) - 1 else "")))
    return out


def _fio_bw_lines(doc: FioDocument, job: FioJob, direction: str) -> list[Text]:
    bw = fio_report.bw_samples(job, direction)
    if not bw.samples:
        return []
    share = fio_report.bw_share_pct(bw.mean, fio_report.group_agg_bw(doc, job.group, direction))
    unit, div = ("MiB", 1024.0) if bw.mean > 1024 * 1024 else ("KiB", 1.0)
    io = fio_report.iops_samples(job, direction)
    return [
        Text(
            f"   bw ({unit:>5}/s): min={round(bw.min / div):5d}, max={round(bw.max / div):5d}, "
            f"per={share:3.2f}%, avg={bw.mean / div:5.2f}, stdev={bw.stddev / div:5.2f}, samples={bw.samples}"
        ),
        Text(
            f"   iops        : min={round(io.min):5d}, max={round(io.max):5d}, avg={io.mean:5.2f}, "
            f"stdev={io.stddev:5.2f}, samples={io.samples}"
        ),
    ]


def fio_direction_lines(doc: FioDocument, job: FioJob, direction: str) -> list[Text]:
    """A direction as fio prints it: IOPS and bandwidth, slat/clat/lat, clat percentiles (and lat
    percentiles on an asynchronous engine), per-second bw and IOPS."""
    d = job.direction(direction)
    iops = fio_report.fio_number(d.iops, False)
    bw = f"{fio_report.fio_rate(d.bw_bytes_per_s)} ({fio_report.fio_rate(d.bw_bytes_per_s, False)})"
    head = Text(f"  {direction}: ")
    head.append(f"IOPS={iops}, BW={bw}", style="bold")
    head.append(f"({fio_report.fio_bytes(d.bytes)}/{fio_report.ms(d.runtime_s)}msec)")
    out = [head]
    if d.slat_ns.count and not job.synchronous:
        out.append(_fio_lat_line("slat", d.slat_ns))
    if d.clat_ns.count:
        out.append(_fio_lat_line("clat", d.clat_ns))
    if d.lat_ns.count:
        out.append(_fio_lat_line(" lat", d.lat_ns))
    out.extend(fio_percentile_lines("clat", d.clat_ns))
    if not job.synchronous:
        # As fio's lat_percentiles=1: on an asynchronous engine lat (with the submission) is not clat.
        out.extend(fio_percentile_lines(" lat", d.lat_ns))
    out.extend(_fio_bw_lines(doc, job, direction))
    return out


_FIO_DIST_UNITS = (("ns", "nsec"), ("us", "usec"), ("ms", "msec"))


def fio_distribution_lines(job: FioJob) -> list[Text]:
    """fio's `lat (usec)   : 250=12.00%, 500=80.00%, …`: the non-empty buckets, five to a line."""
    dist = fio_report.latency_distribution([job.read.clat_ns, job.write.clat_ns])
    out = []
    for key, unit in _FIO_DIST_UNITS:
        items = [f"{label}={pct:3.2f}%" for label, pct in dist[key].items() if pct > 0]
        for i in range(0, len(items), 5):
            out.append(Text(f"  lat ({unit})   : " + ", ".join(items[i : i + 5])))
    return out


def fio_cache_lines(job: FioJob) -> list[RenderableType]:
    """The cache mode in words, and a loud warning when a read figure came from memory."""
    c = job.cache
    if c.mode == "cold":
        what = "cold: the files' pages were dropped before the job (fio's invalidate=1)"
        if not c.evicted:
            what = (
                "cold requested, but pages stayed in memory (a memory file system, or dirty pages still "
                "being written back)"
            )
    elif c.mode == "hot":
        what = "hot: the files were read into the page cache before the job"
    else:
        what = "asis: the page cache was left as it was"
    if c.direct:
        what += "; O_DIRECT: transfers bypass the page cache"
    out: list[RenderableType] = [Text(f"  cache        : {what}", style="dim")]
    if c.note and not c.cache_figure:
        out.append(Text(f"                 {c.note}", style="dim"))
    if c.cache_figure:
        lines = []
        if c.reads_from_memory:
            lines.append(
                f"{job.name}: the buffered read figure comes from the page cache (memory), "
                "not from the storage."
            )
        if c.unsynced_writes:
            lines.append(
                f"{job.name}: the buffered write figure is the page cache taking the data, not the storage."
            )
        body = Text("\n".join(lines))
        if c.note:
            body.append(f"\n{c.note}")
        if c.reads_from_memory and c.mode != "cold":
            body.append("\nUse cache=cold or direct=1 to measure the storage.")
        if c.unsynced_writes:
            body.append("\nAdd end_fsync=1 (or fsync=N, or direct=1) to measure the storage.")
        out.append(Panel(body, title="warning: cache", border_style="bold yellow", expand=False))
    return out


def fio_fixed_bufs_warning(job: FioJob) -> Text | None:
    """io_uring with fixedbufs=1 whose buffers could not be registered: the run went the slower way."""
    be = job.backend
    if not job.fixed_bufs_missed:
        return None
    return Text(
        f"  warning      : fixedbufs=1, but {be.fixed_bufs} of {be.requests} requests used a registered "
        "buffer: registering the buffers failed (over the locked-memory limit, `ulimit -l`, for a user "
        "without CAP_IPC_LOCK), and the rest went as plain reads and writes, which cost more CPU per I/O",
        style="bold yellow",
    )


def fio_verify_line(job: FioJob) -> Text | None:
    v = job.verify
    if v is None:
        return None
    what = f"{v.mode}, {v.blocks_checked} blocks checked"
    if v.errors == 0:
        return Text(f"  verify       : {what}, no errors", style="green")
    where = ""
    if v.first_bad_offset is not None:
        where = f", first at offset {v.first_bad_offset}"
        if v.first_bad_file:
            where += f" of {v.first_bad_file}"
    return Text(f"  VERIFICATION FAILED: {what}, {v.errors} bad{where}", style="bold red")


def _fio_instance_columns(job: FioJob) -> list[Column[FioInstance]]:
    cols: list[Column[FioInstance]] = [
        ("rank", True, lambda i: str(i.rank)),
        ("inst", True, lambda i: str(i.instance)),
    ]
    for d in job.directions:

        def iops(i: FioInstance, d: str = d) -> str:
            x = i.direction(d)
            return f"{x.ios / x.runtime_s:.0f}" if x.runtime_s > 0 else "-"

        def bw(i: FioInstance, d: str = d) -> str:
            x = i.direction(d)
            return fio_report.fio_rate(x.bytes / x.runtime_s) if x.runtime_s > 0 else "-"

        cols += [
            (f"{d} IOPS", True, iops),
            (f"{d} BW", True, bw),
            (f"{d} lat p99", True, lambda i, d=d: latency(i.direction(d).lat_ns.p99)),
        ]
    cols.append(("time(s)", True, lambda i: seconds(i.elapsed_s)))
    return cols


# Up to this many instances, a job without group_reporting lists each one (fio prints one entry per thread).
FIO_INSTANCE_ROWS = 32


def fio_job_block(doc: FioDocument, job: FioJob) -> list[RenderableType]:
    """Everything about one job, in the order of fio's report, with iolens's additions."""
    err = 0 if doc.ok else 1
    files = ""
    if job.files:
        files = f", {job.files[0]}" + (f" (+{len(job.files) - 1} more)" if len(job.files) > 1 else "")
    head = Text()
    head.append(job.name, style="bold")
    head.append(f": (groupid={job.group}, jobs={job.instances}): err={err:2d}: ")
    head.append(f"ioengine={job.ioengine}, {job.file_system or '?'}{files}", style="dim")
    out: list[RenderableType] = [head]
    if job.ramp_s:
        out.append(Text(f"  (the first {job.ramp_s:g} s of ramp are left out of every figure)", style="dim"))
    for d in job.directions:
        out.extend(fio_direction_lines(doc, job, d))
    out.extend(fio_distribution_lines(job))
    if job.sync.ios:
        out.append(Text("  fsync/fdatasync/sync_file_range:"))
        out.append(_fio_lat_line("sync", job.sync.lat_ns))
        out.extend(fio_percentile_lines("sync", job.sync.lat_ns))
    cpu = job.cpu
    out.append(Text(f"  cpu          : usr={cpu.usr_pct:3.2f}%, sys={cpu.sys_pct:3.2f}%, ctx={cpu.ctx}"))
    if job.ios:
        out.append(
            Text(f"  cpu per I/O  : {latency(cpu.per_io_ns)} (usr+sys time of the job's threads / I/Os)")
        )
    depth = 1 if job.synchronous else job.options.get("iodepth", "?")
    kind = "synchronous" if job.synchronous else "asynchronous"
    out.append(Text(f"  IO depth     : {depth} ({job.ioengine} is {kind})", style="dim"))
    out.extend(fio_cache_lines(job))
    fallback = fio_fixed_bufs_warning(job)
    if fallback is not None:
        out.append(fallback)
    verify = fio_verify_line(job)
    if verify is not None:
        out.append(verify)
    if not job.group_reporting and 1 < len(job.per_instance) <= FIO_INSTANCE_ROWS:
        rows = sorted(job.per_instance, key=lambda i: (i.rank, i.instance))
        out.append(columns_table(_fio_instance_columns(job), rows))
    return out


def fio_group_lines(doc: FioDocument, group: FioGroup) -> list[RenderableType]:
    """fio's "Run status group N (all jobs):" lines, then the group's CPU and what the machine did."""
    out: list[RenderableType] = [Text(f"Run status group {group.id} (all jobs):", style="bold")]
    r, b = fio_report.fio_rate, fio_report.fio_bytes
    for g in fio_report.group_directions(doc, group.id):
        agg = g.agg_bw_bytes_per_s
        out.append(
            Text(
                f"{_FIO_DIR_LABEL[g.direction]:>7}: bw={r(agg)} ({r(agg, False)}), "
                f"{r(g.min_bw_bytes_per_s)}-{r(g.max_bw_bytes_per_s)} "
                f"({r(g.min_bw_bytes_per_s, False)}-{r(g.max_bw_bytes_per_s, False)}), "
                f"io={b(g.bytes)} ({b(g.bytes, False)}), "
                f"run={fio_report.ms(g.min_run_s)}-{fio_report.ms(g.max_run_s)}msec"
            )
        )
    c, m = group.cpu, group.machine
    out.append(
        Text(
            f"  cpu: usr={c.usr_s:.2f}s, sys={c.sys_s:.2f}s, kernel workers={c.kernel_workers_s:.2f}s, "
            f"total={c.total_s:.2f}s in {group.elapsed_s:.2f}s",
            style="dim",
        )
    )
    if c.total_per_io_ns:
        out.append(
            Text(
                f"  cpu per I/O  : {latency(c.total_per_io_ns)} with the kernel workers "
                f"((usr + sys + kernel workers) / I/Os; the threads alone: {latency(c.per_io_ns)})"
            )
        )
    out.append(
        Text(
            f"  machine: {m.cpus} CPUs; the rest of the machine used {m.others_busy_s:.2f}s of CPU "
            f"({m.others_busy_pct:.1f}%), steal {m.steal_s:.2f}s",
            style="yellow" if m.note else "dim",
        )
    )
    if m.note:
        out.append(Text(f"  {m.note}", style="yellow"))
    return out


def fio_document(doc: FioDocument, width: int = FULL_WIDTH) -> Group:
    """A fio run as fio reports it: a block per job, then the "Run status group" lines; the per-instance
    tables fit any width, so `width` changes nothing."""
    parts: list[RenderableType] = [header(doc)]
    if doc.fio is not None:
        for job in doc.fio.jobs:
            parts.append(Text(""))
            parts.extend(fio_job_block(doc, job))
        for group in doc.fio.groups:
            parts.append(Text(""))
            parts.extend(fio_group_lines(doc, group))
    if not doc.ok:
        parts.append(error_panel(doc))
    return Group(*parts)


# --- a document, whatever its workload ----------------------------------------------------------------------

# The view of each kind of document (results.DOCUMENT_TYPES): what `iolens WORKLOAD` prints at the end.
VIEWS: dict[type[Document], Callable[[Any, int], Group]] = {
    IorDocument: ior_document,
    MdtestDocument: mdtest_document,
    MdworkbenchDocument: mdworkbench_document,
    FindDocument: find_document,
    FioDocument: fio_document,
}


def document(doc: Document, width: int = FULL_WIDTH) -> Group:
    view = VIEWS[type(doc)](doc, width)
    if doc.monitor is None:
        return view
    from iolens.monitor.report import monitor_section

    return Group(view, Text(""), monitor_section(doc.monitor))


def print_document(doc: Document, console: Console | None = None) -> None:
    console = console or Console()
    console.print(document(doc, console.width))


# What the `items` of a workload's progress lines are, where they are not "items" (files, directories).
_PROGRESS_UNITS = {"find": ("entries/s", "scanned"), "fio": ("IOPS", "I/Os")}


def progress_line(progress: dict[str, Any], wall_s: float, workload: str = "") -> Text:
    """The live line while the engine runs, from its latest IOLENS-PROGRESS object (docs/schema.md)."""
    phase = str(progress.get("phase", "?"))
    it = progress.get("iteration")
    level = progress.get("level")
    bw = progress.get("bw_bytes_per_s")
    moved = progress.get("bytes")
    items = progress.get("items")
    # mdtest calls the items' rate rate_per_s, find items_per_s.
    items_rate = progress.get("rate_per_s", progress.get("items_per_s"))
    rate_unit, count_unit = _PROGRESS_UNITS.get(workload, ("items/s", "items"))
    elapsed = progress.get("elapsed_s")
    t = Text()
    t.append(f"{phase}", style="bold cyan")
    if isinstance(it, int):
        t.append(f" iter {it}")
    if isinstance(level, int):
        t.append(f" level {level}")
    if isinstance(bw, int | float):
        t.append(f"  {bw / MiB:,.1f} MiB/s", style="bold")
    if isinstance(moved, int | float):
        t.append(f"  {human_bytes(moved)}")
    # mdtest-class workloads count items (files, directories) instead of bytes.
    if isinstance(items_rate, int | float):
        t.append(f"  {items_rate:,.0f} {rate_unit}", style="bold")
    if isinstance(items, int | float):
        t.append(f"  {int(items):,} {count_unit}")
    if isinstance(elapsed, int | float):
        t.append(f"  phase {elapsed:.1f} s")
    t.append(f"  total {wall_s:.1f} s", style="dim")
    if progress.get("estimate"):
        t.append("  (estimate)", style="dim")
    return t
