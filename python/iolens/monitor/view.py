"""Headline figures from a sample's rates (per device, per NFS mount, per Lustre target, per process) and the
top-like terminal view of them (rich), shown by `iolens monitor` when it runs in a terminal."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from iolens.monitor.common import Tree

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


def _sub(tree: Any, key: str) -> Tree:
    """tree[key] when both are objects, else {}: a reading read back from a damaged stream may hold anything
    where an object belongs (nodes.py keeps only records of the right outline)."""
    value = tree.get(key) if isinstance(tree, dict) else None
    return value if isinstance(value, dict) else {}


def _num(tree: Tree, *keys: str) -> float:
    cur: Any = tree
    for k in keys:
        if not isinstance(cur, dict):
            return 0.0
        cur = cur.get(k)
    return float(cur) if isinstance(cur, int | float) else 0.0


def devices(rates: Tree) -> list[IoFigures]:
    out = []
    for dev, r in _sub(rates, "diskstats").items():
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
    for mnt, r in _sub(rates, "mountstats").items():
        ops = _sub(r, "ops")
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
    for param, r in _sub(rates, "lustre").items():
        entry = _sub(_sub(data, "lustre"), param)
        if entry.get("kind") != "stats" or "nid" in entry:
            continue
        counters = _sub(r, "counters")
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
    for pid, r in _sub(rates, "proc_io").items():
        comm = _sub(_sub(data, "proc_io"), pid).get("comm", "")
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


def _table(title: str, rows: list[IoFigures], meta: bool, busy: bool = False, ops: str = "IOPS") -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", box=None, pad_edge=False)
    t.add_column("name", no_wrap=True)
    t.add_column("read MiB/s", justify="right")
    t.add_column("write MiB/s", justify="right")
    t.add_column(f"read {ops}", justify="right")
    t.add_column(f"write {ops}", justify="right")
    t.add_column("avg I/O KiB", justify="right")
    if meta:
        t.add_column("metadata ops/s", justify="right")
    if busy:
        t.add_column("busy %", justify="right")
    for f in rows:
        cells = [
            f.name,
            f"{f.read_bps / MiB:.2f}",
            f"{f.write_bps / MiB:.2f}",
            f"{f.read_iops:.0f}",
            f"{f.write_iops:.0f}",
            f"{f.avg_io_bytes / 1024:.1f}" if f.read_iops + f.write_iops else "-",
        ]
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

    def __init__(self, interval: float, host: str) -> None:
        self.interval = interval
        self.host = host
        self.record: dict[str, Any] | None = None
        self.unavailable: dict[str, str] = {}
        # Sources read only in part: {source: {part: why}}.
        self.partial: dict[str, dict[str, str]] = {}
        self.samples = 0

    def update(self, record: dict[str, Any]) -> None:
        self.record = record
        self.samples += 1

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
        procs = processes(rates, data)
        if procs:
            parts.append(
                _table("processes (/proc/PID/io; ops are system calls)", procs, meta=False, ops="calls/s")
            )
        for name, reason in sorted(self.unavailable.items()):
            parts.append(Text(f"{name}: unavailable — {reason}", style="dim"))
        for name, unreadable in sorted(self.partial.items()):
            what = "; ".join(f"{part}: {why}" for part, why in unreadable.items())
            parts.append(Text(f"{name}: partly unavailable — {what}", style="dim"))
        return Group(*parts)
