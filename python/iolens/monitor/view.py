"""Headline figures from a sample's rates (per device, per NFS mount, per Lustre target, per process) and the
top-like terminal view of them (rich), shown by `iolens monitor` when it runs in a terminal. The view lists
processes per command and job, not per process id (one row per forked `sleep` would scroll everything else
away), with the per-command aggregation of the Prometheus and InfluxDB outputs (proc_agg.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from iolens.monitor import proc_agg
from iolens.monitor.common import Tree, subtree
from iolens.monitor.procio import ProcInfo

MiB = 1024 * 1024
# Lustre operations that are metadata operations (llite, md_stats, mdt, mdc stats).
METADATA_OPS = frozenset(
    {
        "open", "close", "mknod", "link", "unlink", "mkdir", "rmdir", "rename", "getattr", "setattr",
        "getxattr", "setxattr", "listxattr", "removexattr", "statfs", "readdir", "create", "symlink",
        "truncate", "sync", "fsync", "samedir_rename", "crossdir_rename", "lookup", "punch", "destroy",
    }
)  # fmt: skip


@dataclass
class IoFigures:
    """One thing's I/O over an interval: bytes and operations per second."""

    name: str
    read_bps: float = 0.0
    write_bps: float = 0.0
    read_iops: float = 0.0
    write_iops: float = 0.0
    meta_ops: float = 0.0
    busy_pct: float | None = None

    @property
    def avg_io_bytes(self) -> float:
        ops = self.read_iops + self.write_iops
        return (self.read_bps + self.write_bps) / ops if ops else 0.0


def _num(tree: Tree, *keys: str) -> float:
    cur: Any = tree
    for k in keys:
        if not isinstance(cur, dict):
            return 0.0
        cur = cur.get(k)
    return float(cur) if isinstance(cur, int | float) else 0.0


def devices(rates: Tree) -> list[IoFigures]:
    out = []
    for dev, r in subtree(rates, "diskstats").items():
        out.append(
            IoFigures(
                dev,
                read_bps=_num(r, "read_bytes"),
                write_bps=_num(r, "written_bytes"),
                read_iops=_num(r, "reads_completed"),
                write_iops=_num(r, "writes_completed"),
                busy_pct=min(100.0, _num(r, "io_time_ms") / 10.0),
            )
        )
    return out


def nfs_mounts(rates: Tree) -> list[IoFigures]:
    out = []
    for mnt, r in subtree(rates, "mountstats").items():
        ops = subtree(r, "ops")
        out.append(
            IoFigures(
                mnt,
                read_bps=_num(r, "bytes", "server_read_bytes"),
                write_bps=_num(r, "bytes", "server_write_bytes"),
                read_iops=_num(ops, "READ", "ops"),
                write_iops=_num(ops, "WRITE", "ops"),
                meta_ops=sum(
                    _num(v, "ops")
                    for k, v in ops.items()
                    if k not in ("READ", "WRITE") and isinstance(v, dict)
                ),
            )
        )
    return out


def lustre_targets(rates: Tree, data: Tree) -> list[IoFigures]:
    """llite (per mount), obdfilter/mdt (per target) and md_stats figures from the stats files."""
    out = []
    for param, r in subtree(rates, "lustre").items():
        entry = subtree(subtree(data, "lustre"), param)
        if entry.get("kind") != "stats" or "nid" in entry:
            continue
        counters = subtree(r, "counters")
        meta = sum(_num(c, "samples") for op, c in counters.items() if op in METADATA_OPS)
        out.append(
            IoFigures(
                f"{entry.get('component', '?')} {entry.get('target', '')}"
                + (" md_stats" if entry.get("file") == "md_stats" else ""),
                read_bps=_num(counters, "read_bytes", "sum"),
                write_bps=_num(counters, "write_bytes", "sum"),
                read_iops=_num(counters, "read_bytes", "samples") or _num(counters, "read", "samples"),
                write_iops=_num(counters, "write_bytes", "samples") or _num(counters, "write", "samples"),
                meta_ops=meta,
            )
        )
    return out


def processes(rates: Tree, data: Tree) -> list[IoFigures]:
    out = []
    for pid, r in subtree(rates, "proc_io").items():
        comm = subtree(subtree(data, "proc_io"), pid).get("comm", "")
        out.append(
            IoFigures(
                f"{pid} {comm}",
                read_bps=_num(r, "read_bytes"),
                write_bps=_num(r, "write_bytes"),
                read_iops=_num(r, "syscr"),
                write_iops=_num(r, "syscw"),
            )
        )
    return out


@dataclass
class CommandFigures(IoFigures):
    """One command's (and job's) processes over an interval; `name` is the command (comm)."""

    job: str = ""
    processes: int = 0


class CommandRates:
    """Per-command rates for the view: the increases of proc_agg's per-command totals from one reading to the
    next, over the time between them. Summing the processes' own rates instead would count twice what a
    child did before it exited: the kernel adds all of a reaped child's figures to its parent's, and
    proc_agg takes what was already counted off the parent's increase."""

    def __init__(self, totals: proc_agg.CommandTotals | None = None) -> None:
        # The monitor's own totals when it keeps them for its outputs (it updates them before the view):
        # the view reads their increases instead of adding up every reading a second time.
        self._owned = totals is None
        self._totals = totals if totals is not None else proc_agg.CommandTotals(tops=())
        self._last: float | None = None
        self.figures: list[CommandFigures] = []

    def update(self, record: dict[str, Any], info: dict[int, ProcInfo] | None) -> None:
        data = subtree(record, "data")
        when = record.get("time")
        if "proc_io" not in data or type(when) not in (int, float):
            return  # not read this time: the next reading's increases cover the gap
        if self._owned:
            reading = {
                pid: f
                for pid, f in subtree(data, "proc_io").items()
                if isinstance(pid, str) and pid.isdigit() and isinstance(f, dict)
            }
            added = self._totals.update(reading, info or {})
        else:
            added = self._totals.last_added
        last, self._last = self._last, float(when)
        if last is None or when <= last:
            self.figures = []  # the first reading's increases are everything the processes did so far
            return
        dt = when - last
        live = Counter(proc.key for proc in self._totals.procs.values())
        self.figures = [
            CommandFigures(
                comm,
                read_bps=c["read_bytes"] / dt,
                write_bps=c["write_bytes"] / dt,
                read_iops=c["syscr"] / dt,
                write_iops=c["syscw"] / dt,
                job=job,
                processes=live[(comm, job)],
            )
            for (comm, job), c in added.items()
        ]
        self.figures.sort(
            key=lambda f: (-(f.read_bps + f.write_bps), -(f.read_iops + f.write_iops), f.name, f.job)
        )


def _cells(f: IoFigures) -> list[str]:
    return [
        f"{f.read_bps / MiB:.2f}",
        f"{f.write_bps / MiB:.2f}",
        f"{f.read_iops:.0f}",
        f"{f.write_iops:.0f}",
        f"{f.avg_io_bytes / 1024:.1f}" if f.read_iops + f.write_iops else "-",
    ]


def _columns(t: Table, ops: str) -> None:
    for name in ("read MiB/s", "write MiB/s", f"read {ops}", f"write {ops}", "avg I/O KiB"):
        t.add_column(name, justify="right")


def _command_table(rows: list[CommandFigures], limit: int = proc_agg.DEFAULT_TOP) -> RenderableType:
    t = Table(
        title="commands (/proc/PID/io per command and job; ops are system calls)",
        title_justify="left", title_style="bold", box=None, pad_edge=False,
    )  # fmt: skip
    t.add_column("command", no_wrap=True)
    t.add_column("job", no_wrap=True)
    t.add_column("procs", justify="right")
    _columns(t, "calls/s")
    for f in rows[:limit]:
        t.add_row(f.name, f.job or "-", str(f.processes), *_cells(f))
    if len(rows) <= limit:
        return t
    return Group(t, Text(f"… and {len(rows) - limit} more commands", style="dim"))


def _table(title: str, rows: list[IoFigures], meta: bool, busy: bool = False, ops: str = "IOPS") -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", box=None, pad_edge=False)
    t.add_column("name", no_wrap=True)
    _columns(t, ops)
    if meta:
        t.add_column("metadata ops/s", justify="right")
    if busy:
        t.add_column("busy %", justify="right")
    for f in rows:
        cells = [f.name, *_cells(f)]
        if meta:
            cells.append(f"{f.meta_ops:.0f}")
        if busy:
            cells.append(f"{f.busy_pct:.0f}" if f.busy_pct is not None else "-")
        t.add_row(*cells)
    return t


def system_line(data: Tree) -> Text:
    """Load, blocked processes, I/O pressure and dirty memory in one line."""
    parts = []
    la = data.get("loadavg")
    if la:
        parts.append(f"load {la.get('load1', 0):.2f} {la.get('load5', 0):.2f} {la.get('load15', 0):.2f}")
    st = data.get("stat")
    if st and "procs_blocked" in st:
        parts.append(f"blocked {st['procs_blocked']}")
    pr = data.get("pressure")
    if pr:
        some = pr.get("some", {}).get("avg10")
        full = pr.get("full", {}).get("avg10")
        parts.append(f"io pressure avg10 some {some or 0:.1f}% full {full or 0:.1f}%")
    mi = data.get("meminfo")
    if mi:
        dirty, wb = mi.get("dirty_bytes", 0) / MiB, mi.get("writeback_bytes", 0) / MiB
        parts.append(f"dirty {dirty:.1f} MiB  writeback {wb:.1f} MiB")
    return Text("   ".join(parts))


class LiveView:
    """The renderable that rich.Live redraws: the latest sample's figures."""

    def __init__(self, interval: float, host: str, commands: proc_agg.CommandTotals | None = None) -> None:
        self.interval = interval
        self.host = host
        self.record: dict[str, Any] | None = None
        self.unavailable: dict[str, str] = {}
        # Sources read only in part: {source: {part: why}}.
        self.partial: dict[str, dict[str, str]] = {}
        self.samples = 0
        self.commands = CommandRates(commands)

    def update(self, record: dict[str, Any], info: dict[int, ProcInfo] | None = None) -> None:
        """A new sample; `info` the parent and job of each watched process (ProcIoCollector.info)."""
        self.record = record
        self.samples += 1
        self.commands.update(record, info)

    def event(self, ev: dict[str, Any]) -> None:
        if ev.get("event") == "unavailable":
            self.unavailable[ev["source"]] = ev.get("reason", "")
        elif ev.get("event") == "partial":
            self.partial.setdefault(ev["source"], {}).update(ev.get("unreadable") or {})
        else:
            self.unavailable.pop(ev.get("source", ""), None)

    def __rich__(self) -> RenderableType:
        parts: list[RenderableType] = []
        rec = self.record
        when = datetime.fromtimestamp(rec["time"]).strftime("%H:%M:%S") if rec else "--:--:--"
        parts.append(
            Text(
                f"iolens monitor  {self.host}  {when}  every {self.interval:g} s  samples {self.samples}"
                "  (Ctrl-C to stop)",
                style="bold",
            )
        )
        if rec is None:
            return Group(*parts)
        data, rates = rec.get("data", {}), rec.get("rates", {})
        parts.append(system_line(data))
        if not rates:
            parts.append(Text("(rates from the second sample on)", style="dim"))
        devs = devices(rates)
        if devs:
            parts.append(_table("block devices", devs, meta=False, busy=True))
        nfs = nfs_mounts(rates)
        if nfs:
            parts.append(_table("NFS mounts", nfs, meta=True, ops="ops/s"))
        lus = lustre_targets(rates, data)
        if lus:
            parts.append(_table("Lustre", lus, meta=True, ops="ops/s"))
        if self.commands.figures:
            parts.append(_command_table(self.commands.figures))
        for name, reason in sorted(self.unavailable.items()):
            parts.append(Text(f"{name}: unavailable — {reason}", style="dim"))
        for name, unreadable in sorted(self.partial.items()):
            what = "; ".join(f"{part}: {why}" for part, why in unreadable.items())
            parts.append(Text(f"{name}: partly unavailable — {what}", style="dim"))
        return Group(*parts)
