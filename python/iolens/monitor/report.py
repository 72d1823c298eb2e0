"""The terminal view of a run's "monitor" object: what the nodes' storage did during each phase."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from iolens.report.own_io import split_from_figures

MiB = 1024 * 1024
OWN_OTHERS_NOTE = (
    "run's: read_bytes/write_bytes of the run's processes (/proc/PID/io); others': the disks' total minus "
    "the run's, at least 0 (* clamped); write-back by the kernel's flusher counts as others' (docs/db.md)"
)


def _sum(items: list[dict[str, Any]], key: str) -> float:
    return sum(float(i.get(key) or 0.0) for i in items)


def _pair(items: list[dict[str, Any]]) -> str:
    if not items:
        return "-"
    return f"{_sum(items, 'read_bytes_per_s') / MiB:.1f}/{_sum(items, 'write_bytes_per_s') / MiB:.1f}"


def _own_others(figures: dict[str, Any]) -> tuple[str, str]:
    """The run's own disk I/O (its processes) and the others' (the disks' total − the run's, at least 0)."""
    s = split_from_figures(figures)
    if s is None or s.own_read is None or s.own_write is None:
        return "-", "-"
    mark = {d: "*" if s.clamped(d) else "" for d in ("read", "write")}
    return (
        f"{s.own_read / MiB:.1f}/{s.own_write / MiB:.1f}",
        f"{(s.others_read or 0) / MiB:.1f}{mark['read']}/{(s.others_write or 0) / MiB:.1f}{mark['write']}",
    )


def monitor_section(mon: Any) -> RenderableType:
    """A table, one row per phase window: the node's block devices (summed), NFS and Lustre traffic, I/O
    pressure and the most dirty memory, from the samples that cover the window; under MPI, one more table per
    node sampled by its local rank 0. `mon` is a results.RunMonitor."""
    parts: list[RenderableType] = []
    head = Text(f"monitor: {len(mon.samples)} samples of {mon.host} every {mon.interval}", style="bold")
    parts.append(head)
    if mon.note:
        parts.append(Text(f"note: {mon.note}", style="yellow"))
    parts.append(_windows_table(mon.windows))
    parts.append(Text(OWN_OTHERS_NOTE, style="dim"))
    off = [name for name, s in mon.sources.items() if s.get("available") is False]
    if off:
        parts.append(Text("not sampled here: " + ", ".join(off), style="dim"))
    for host, node in mon.nodes.items():
        cut = "" if node.complete else " (its stream ends early)"
        line = f"node {host}: {len(node.samples)} samples every {node.interval}{cut}"
        parts.append(Text(line, style="bold"))
        parts.append(_windows_table(node.windows))
    return Group(*parts)


def _windows_table(windows: Any) -> Table:
    t = Table(box=box.SIMPLE, pad_edge=False, padding=(0, 1, 0, 0))
    for col, just in (
        ("phase", "left"),
        ("window s", "right"),
        ("placed", "left"),
        ("samples", "right"),
        ("disk read MiB/s", "right"),
        ("disk write MiB/s", "right"),
        ("disk IOPS", "right"),
        ("run's MiB/s r/w", "right"),
        ("others' MiB/s r/w", "right"),
        ("net fs MiB/s r/w", "right"),
        ("io pressure %", "right"),
        ("dirty max MiB", "right"),
    ):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for w in windows:
        f = w.figures or {}
        devs = f.get("devices") or []
        net = (f.get("nfs") or []) + (f.get("lustre") or [])
        label = w.name if w.iteration is None else f"{w.name} #{w.iteration}"
        n = "-" if w.samples is None else str(w.samples[1] - w.samples[0] + 1)
        pressure = f.get("io_pressure_some_pct")
        dirty = f.get("dirty_bytes_max")
        t.add_row(
            label,
            f"{w.end - w.start:.3f}",
            w.placed,
            n,
            f"{_sum(devs, 'read_bytes_per_s') / MiB:.1f}" if devs else "-",
            f"{_sum(devs, 'write_bytes_per_s') / MiB:.1f}" if devs else "-",
            f"{_sum(devs, 'read_ops_per_s') + _sum(devs, 'write_ops_per_s'):.0f}" if devs else "-",
            *_own_others(f),
            _pair(net),
            f"{pressure:.1f}" if isinstance(pressure, int | float) else "-",
            f"{dirty / MiB:.1f}" if isinstance(dirty, int | float) else "-",
        )
    return t
