"""A run's own disk I/O and the others' on a node, from its `--monitor` samples: the device total (diskstats)
minus what the run's process tree did (/proc/PID/io), clamped at 0; the cgroup's io.stat beside it. Used by
the report's monitoring section (report/monitor_window.py) and the monitor's phase table
(monitor/report.py); docs/db.md "Monitoring during the run" says how and with which limits."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from iolens.monitor.common import subtree

OWN_METHOD = (
    "Own I/O is what the run's own processes (the engine's process tree that --monitor watched, "
    "/proc/PID/io read_bytes and write_bytes) caused to be read from or written to storage; others' is the "
    "node's device total (diskstats, every disk) minus the run's own, clamped at 0 (a clamp means the run's "
    "processes were charged for more than the disks did in that interval, e.g. a write that the page cache "
    "absorbed). Limits: page-cache write-back done later by the kernel's flusher is charged to the process "
    "that dirtied the pages when it wrote them, not when the disk did, so a run's buffered writes can show "
    "up as others' at write-back time; I/O to network file systems (NFS, Lustre) is in the processes' "
    "counts but not in the disks'; a cgroup's io.stat counts every process of that cgroup (a whole job or "
    "session), not only the run's."
)
# Leaves of the raw tree that are gauges; the others of these sources are counters (drawn as rates only).


@dataclass
class Split:
    """Bytes/s over a span: device total, the run's own processes, others (device − own, ≥ 0), cgroup."""

    device_read: float
    device_write: float
    own_read: float | None = None
    own_write: float | None = None
    cgroup_read: float | None = None
    cgroup_write: float | None = None

    @property
    def others_read(self) -> float | None:
        return None if self.own_read is None else max(0.0, self.device_read - self.own_read)

    @property
    def others_write(self) -> float | None:
        return None if self.own_write is None else max(0.0, self.device_write - self.own_write)

    def clamped(self, direction: str) -> bool:
        """The run's processes were charged for more than the disks did ('read' or 'write'): others' is
        shown as 0 there, not negative."""
        own, device = getattr(self, f"own_{direction}"), getattr(self, f"device_{direction}")
        return own is not None and own > device * 1.001 + 1


@dataclass
class Interval:
    """What happened between two samples of one stream, in bytes."""

    t0: float
    t1: float
    device_read: float
    device_write: float
    own_read: float | None
    own_write: float | None
    cgroup_read: float | None
    cgroup_write: float | None


def _num(tree: Any, key: str) -> float | None:
    v = tree.get(key) if isinstance(tree, dict) else None
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def disks(names: Iterable[str]) -> list[str]:
    """The devices to add up: dm-* and md* are counted again in the disks under them, so they are left out
    when any other device is there."""
    names = list(names)
    plain = [n for n in names if not (n.startswith("dm-") or n.startswith("md"))]
    return plain or names


def _counter_sum(prev: dict[str, Any], cur: dict[str, Any], names: Sequence[str], key: str) -> float | None:
    """Σ over names of cur − prev; None when a counter went back (a reset)."""
    total = 0.0
    for n in names:
        a, b = _num(prev.get(n), key), _num(cur.get(n), key)
        if a is None or b is None:
            continue
        if b < a:
            return None
        total += b - a
    return total


def own_bytes(prev: dict[str, Any], cur: dict[str, Any], key: str) -> float:
    """Bytes the watched process tree did between two proc_io readings, each process counted once.

    A process new since the last reading started from 0 (it was forked in between). A process gone since
    then was reaped by its parent, whose counters then jumped by all the gone process's bytes: the gone
    process's bytes up to its last reading are already counted, so they are taken off that jump (what it
    did between its last reading and its exit is left, counted once, in the parent's jump)."""
    grown = 0.0
    for pid, fields in cur.items():
        b = _num(fields, key)
        if b is None:
            continue
        a = _num(prev.get(pid), key) if pid in prev else 0.0
        grown += max(0.0, b - (a or 0.0))
    gone = sum(_num(f, key) or 0.0 for pid, f in prev.items() if pid not in cur)
    return max(0.0, grown - gone)


def intervals(records: Sequence[dict[str, Any]]) -> list[Interval]:
    """Device, own and cgroup bytes of each interval between consecutive sample records of one stream."""
    out: list[Interval] = []
    for prev, cur in zip(records, records[1:], strict=False):
        t0, t1 = prev.get("time"), cur.get("time")
        if not isinstance(t0, int | float) or not isinstance(t1, int | float) or t1 <= t0:
            continue
        pd, cd = subtree(prev, "data"), subtree(cur, "data")
        ds0, ds1 = subtree(pd, "diskstats"), subtree(cd, "diskstats")
        names = disks(n for n in ds1 if n in ds0)
        dr = _counter_sum(ds0, ds1, names, "read_bytes")
        dw = _counter_sum(ds0, ds1, names, "written_bytes")
        if dr is None or dw is None or not names:
            continue
        own_r = own_w = None
        if "proc_io" in pd and "proc_io" in cd:
            p0, p1 = subtree(pd, "proc_io"), subtree(cd, "proc_io")
            own_r, own_w = own_bytes(p0, p1, "read_bytes"), own_bytes(p0, p1, "write_bytes")
        cg_r = cg_w = None
        c0, c1 = subtree(pd, "cgroup_io"), subtree(cd, "cgroup_io")
        if c0 and c1:
            cg_r = cg_w = 0.0
            for cg in c1:
                devs = [d for d in subtree(c1, cg) if d in subtree(c0, cg)]
                r = _counter_sum(subtree(c0, cg), subtree(c1, cg), devs, "rbytes")
                w = _counter_sum(subtree(c0, cg), subtree(c1, cg), devs, "wbytes")
                cg_r, cg_w = cg_r + (r or 0.0), cg_w + (w or 0.0)
        out.append(Interval(float(t0), float(t1), dr, dw, own_r, own_w, cg_r, cg_w))
    return out


def split_over(ivs: Sequence[Interval], start: float, end: float) -> tuple[tuple[float, float], Split] | None:
    """The intervals that overlap start..end, whole (as the monitor's window figures take them): the span
    they cover and the mean rates over it."""
    hit = [iv for iv in ivs if iv.t0 < end and iv.t1 > start] or [iv for iv in ivs if iv.t0 <= start <= iv.t1]
    if not hit:
        return None
    a, b = hit[0].t0, hit[-1].t1
    span = b - a

    def rate(vals: list[float | None]) -> float | None:
        return None if any(v is None for v in vals) else sum(v or 0.0 for v in vals) / span

    return (a, b), Split(
        device_read=sum(iv.device_read for iv in hit) / span,
        device_write=sum(iv.device_write for iv in hit) / span,
        own_read=rate([iv.own_read for iv in hit]),
        own_write=rate([iv.own_write for iv in hit]),
        cgroup_read=rate([iv.cgroup_read for iv in hit]),
        cgroup_write=rate([iv.cgroup_write for iv in hit]),
    )


def split_from_figures(figures: dict[str, Any]) -> Split | None:
    """A phase window's own/others split from the monitor's window `figures` (docs/schema.md): devices
    summed as `disks` does, the run's processes summed."""
    devs = [d for d in figures.get("devices") or [] if isinstance(d, dict)]
    if not devs:
        return None
    keep = set(disks(str(d.get("name")) for d in devs))
    devs = [d for d in devs if str(d.get("name")) in keep]
    procs = [p for p in figures.get("processes") or [] if isinstance(p, dict)]
    dr = sum(float(d.get("read_bytes_per_s") or 0.0) for d in devs)
    dw = sum(float(d.get("write_bytes_per_s") or 0.0) for d in devs)
    if "processes" not in figures:
        return Split(dr, dw)
    return Split(
        dr,
        dw,
        own_read=sum(float(p.get("read_bytes_per_s") or 0.0) for p in procs),
        own_write=sum(float(p.get("write_bytes_per_s") or 0.0) for p in procs),
    )
