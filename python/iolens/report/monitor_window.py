"""What a run's monitoring section shows, prepared without plotly: the HTML report draws it, and the web
portal can reuse it (docs/report.md "Monitoring during the run").

- Whose samples. A run stored with `--monitor` carries its own samples in its document's `monitor` object
  (its sampler, its engine's process tree): those are shown, and nothing else. A run without one shows the
  samples the database holds for its time window (`iolens monitor --db` on the node): they are the node's,
  whoever ran there, and that is said.
- The window is the run's started_at..ended_at, widened by one sampling interval at most `MAX_MARGIN_S`
  (at least `MIN_MARGIN_S`) on each side: the sample that closes the interval in which the run started or
  ended lies up to one interval beyond it. The margins are returned so that they can be drawn as outside.
- Other runs stored for the same host whose span meets the window are listed (`Overlap`).
- One unit per panel; counters become rates (a cumulative counter is never drawn), gauges are drawn as
  read; a series with no sample for more than two intervals gets a None there (a gap, not a line).
- Processes are summed by command (comm); the PIDs go into the hover text.
- Own and others: the device total (every disk diskstats reports, dm-/md devices left out when disks are
  there: they are counted again in their disks) minus the run's own (its process tree's read_bytes /
  write_bytes from /proc/PID/io), clamped at 0, per interval and per phase; the cgroup's io.stat beside it
  when it was sampled.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from iolens.store import queries
from iolens.store.db import Database
from iolens.store.samples import record_samples

MIN_MARGIN_S = 1.0
MAX_MARGIN_S = 10.0
MAX_LINES = 8
MAX_PANELS = 16
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
GAUGES = {
    "diskstats": {"ios_in_progress"},
    "pressure": {"avg10", "avg60", "avg300"},
    "stat": {"procs_running", "procs_blocked"},
    "proc_io": set(),
    "cgroup_io": set(),
}
ALL_GAUGES = ("meminfo", "loadavg")
# Duplicates of other series (sectors are the bytes / 512).
HIDDEN = {"sectors_read", "sectors_written", "sectors_discarded"}
# Sources whose series describe what one sampler watched (its process tree, its cgroup), not the node: in the
# database, samples of several samplers (other runs' --monitor) share a host's series.
PER_SAMPLER = ("proc_io", "cgroup_io")
SOURCE_ORDER = ("diskstats", "cgroup_io", "proc_io", "mountstats", "lustre", "pressure", "meminfo", "stat")


@dataclass
class Overlap:
    """Another run on the same host whose span meets the window."""

    run_id: int
    tool: str
    command: str | None
    host: str | None
    started_at: float
    ended_at: float

    @property
    def label(self) -> str:
        return f"run {self.run_id} ({self.tool})"


@dataclass
class Line:
    name: str
    x: list[float]
    y: list[float | None]
    hover: list[str] | None = None


@dataclass
class Panel:
    """One plot: one host, one unit on its y axis."""

    host: str
    title: str
    unit: str
    lines: list[Line]
    hidden: int = 0  # lines left out (the least varying)


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
class PhaseSplit:
    host: str
    name: str
    iteration: int | None
    start: float
    end: float
    measured: tuple[float, float] | None
    split: Split | None


@dataclass
class MonitorWindow:
    run_start: float
    run_end: float
    margin_s: float
    origin: str  # "run" (the run's own --monitor samples) or "database"
    hosts: list[str]
    panels: list[Panel] = field(default_factory=list)
    overlaps: list[Overlap] = field(default_factory=list)
    phases: list[PhaseSplit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    hidden_panels: int = 0

    @property
    def shown(self) -> tuple[float, float]:
        return self.run_start - self.margin_s, self.run_end + self.margin_s

    @property
    def has_own(self) -> bool:
        return any(p.split is not None and p.split.own_read is not None for p in self.phases)


# --- units ------------------------------------------------------------------------------------------------


def unit_of(source: str, metric: str) -> tuple[str, float]:
    """(unit, factor to multiply the stored value by) of a stored series; a rate's metric ends in _per_s."""
    rate = metric.endswith("_per_s")
    base = metric[: -len("_per_s")] if rate else metric
    if source == "pressure" and base.startswith("avg"):
        return "% of time", 1.0
    if base.endswith("_us"):
        return ("% of time", 1e-4) if rate else ("µs", 1.0)
    if base == "io_time_ms" and rate:
        return "% of time busy", 0.1
    if base.endswith("_ms"):
        return ("ms/s", 1.0) if rate else ("ms", 1.0)
    if "bytes" in base or base in ("rchar", "wchar", "rbytes", "wbytes", "dbytes"):
        return ("B/s", 1.0) if rate else ("B", 1.0)
    if source in ("loadavg", "stat") and not rate:
        return "tasks", 1.0
    if not rate:
        return "count", 1.0
    if base in ("syscr", "syscw"):
        return "syscalls/s", 1.0
    if base == "ctxt":
        return "switches/s", 1.0
    if base == "processes":
        return "forks/s", 1.0
    return "ops/s", 1.0


# --- gaps ---------------------------------------------------------------------------------------------


def with_gaps(points: Sequence[tuple[float, float | None]]) -> tuple[list[float], list[float | None]]:
    """x, y with a None between two samples further apart than twice the larger of the intervals next to
    them (a schedule that goes from 0.1 s to 1 s is no gap; a monitor stopped for a while is)."""
    xs: list[float] = []
    ys: list[float | None] = []
    gaps = [b[0] - a[0] for a, b in zip(points, points[1:], strict=False)]
    for i, (t, v) in enumerate(points):
        if i > 0:
            dt = gaps[i - 1]
            near = [gaps[j] for j in (i - 2, i) if 0 <= j < len(gaps)]
            if near and dt > 2 * max(near):
                xs.append(points[i - 1][0] + dt / 2)
                ys.append(None)
        xs.append(t)
        ys.append(v)
    return xs, ys


def typical_interval(times: Iterable[float]) -> float | None:
    ts = sorted(set(times))
    diffs = [b - a for a, b in zip(ts, ts[1:], strict=False) if b > a]
    return statistics.median(diffs) if diffs else None


# --- own and others -----------------------------------------------------------------------------------


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


def _sub(tree: Any, key: str) -> dict[str, Any]:
    value = tree.get(key) if isinstance(tree, dict) else None
    return value if isinstance(value, dict) else {}


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
        pd, cd = _sub(prev, "data"), _sub(cur, "data")
        ds0, ds1 = _sub(pd, "diskstats"), _sub(cd, "diskstats")
        names = disks(n for n in ds1 if n in ds0)
        dr = _counter_sum(ds0, ds1, names, "read_bytes")
        dw = _counter_sum(ds0, ds1, names, "written_bytes")
        if dr is None or dw is None or not names:
            continue
        own_r = own_w = None
        if "proc_io" in pd and "proc_io" in cd:
            p0, p1 = _sub(pd, "proc_io"), _sub(cd, "proc_io")
            own_r, own_w = own_bytes(p0, p1, "read_bytes"), own_bytes(p0, p1, "write_bytes")
        cg_r = cg_w = None
        c0, c1 = _sub(pd, "cgroup_io"), _sub(cd, "cgroup_io")
        if c0 and c1:
            cg_r = cg_w = 0.0
            for cg in c1:
                devs = [d for d in _sub(c1, cg) if d in _sub(c0, cg)]
                r = _counter_sum(_sub(c0, cg), _sub(c1, cg), devs, "rbytes")
                w = _counter_sum(_sub(c0, cg), _sub(c1, cg), devs, "wbytes")
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


def split_lines(ivs: Sequence[Interval], direction: str) -> list[Line]:
    """Device total, own, others (and cgroup) for 'read' or 'write', as B/s at each interval's end."""
    out = []
    for name, get in (
        ("all disks (node total)", lambda iv: getattr(iv, f"device_{direction}")),
        ("the run's processes", lambda iv: getattr(iv, f"own_{direction}")),
        (
            "others (total − run's, ≥ 0)",
            lambda iv: (
                None
                if getattr(iv, f"own_{direction}") is None
                else max(0.0, getattr(iv, f"device_{direction}") - getattr(iv, f"own_{direction}"))
            ),
        ),
        ("the run's cgroup (io.stat)", lambda iv: getattr(iv, f"cgroup_{direction}")),
    ):
        pts = [(iv.t1, get(iv)) for iv in ivs]
        pts = [(t, None if v is None else v / (iv.t1 - iv.t0)) for (t, v), iv in zip(pts, ivs, strict=True)]
        if all(v is None for _, v in pts):
            continue
        x, y = with_gaps(pts)
        out.append(Line(name, x, y))
    return out


# --- series -------------------------------------------------------------------------------------------


Key = tuple[str, str, str, str]  # host, source, target, metric


def _is_counter(key: Key, keys: set[Key]) -> bool:
    host, source, target, metric = key
    if metric.endswith("_per_s"):
        return False
    if (host, source, target, metric + "_per_s") in keys:
        return True
    if source in ALL_GAUGES:
        return False
    if source in GAUGES:
        return metric not in GAUGES[source]
    return False


def _variation(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    spread = statistics.pstdev(values)
    return spread / abs(mean) if mean else spread


def panels(
    series: dict[Key, list[tuple[float, float | None]]], comms: dict[tuple[str, str], str]
) -> list[Panel]:
    """One panel per host, source and unit: rates of counters, gauges as read, processes by command."""
    keys = set(series)
    groups: dict[tuple[str, str, str], dict[str, list[tuple[float, float | None]]]] = defaultdict(dict)
    hovers: dict[tuple[str, str, str, str], list[str]] = {}
    by_comm: dict[tuple[str, str, str], dict[float, float]] = defaultdict(lambda: defaultdict(float))
    pids: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for key, pts in series.items():
        host, source, target, metric = key
        base = metric[: -len("_per_s")] if metric.endswith("_per_s") else metric
        if base in HIDDEN or _is_counter(key, keys):
            continue
        unit, factor = unit_of(source, metric)
        if source == "proc_io":
            comm = comms.get((host, target)) or "command not recorded"
            acc = by_comm[(host, comm, metric)]
            for t, v in pts:
                if v is not None:
                    acc[t] += v * factor
            pids[(host, comm, metric)].add(target)
            continue
        name = "/".join(p for p in (target, metric) if p)
        groups[(host, source, unit)][name] = [(t, None if v is None else v * factor) for t, v in pts]
    for (host, comm, metric), acc in by_comm.items():
        unit, _ = unit_of("proc_io", metric)
        name = f"{comm}/{metric}"
        groups[(host, "proc_io", unit)][name] = sorted(acc.items())
        who = sorted(pids[(host, comm, metric)], key=lambda p: (len(p), p))
        hovers[(host, "proc_io", unit, name)] = [f"{comm}: PID {', '.join(who)}"]
    out = []
    order = {s: i for i, s in enumerate(SOURCE_ORDER)}
    for (host, source, unit), lines in sorted(
        groups.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 99), kv[0][1], kv[0][2])
    ):
        ranked = sorted(
            lines.items(), key=lambda kv: (-_variation([v for _, v in kv[1] if v is not None]), kv[0])
        )
        shown = []
        for name, pts in ranked[:MAX_LINES]:
            x, y = with_gaps(pts)
            hover = hovers.get((host, source, unit, name))
            shown.append(Line(name, x, y, hover * len(x) if hover else None))
        title = f"{source} on {host}" + (" (processes by command)" if source == "proc_io" else "")
        out.append(Panel(host, title, unit, shown, hidden=max(0, len(ranked) - MAX_LINES)))
    return out


# --- the window ---------------------------------------------------------------------------------------


def _streams(doc: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(host, sample records) of a document's `monitor` object: the launching node, then each node."""
    mon = doc.get("monitor")
    if not isinstance(mon, dict):
        return []
    host = str(mon.get("host") or _sub(doc, "host").get("hostname") or "unknown")

    def records(v: Any) -> list[dict[str, Any]]:
        return [
            r
            for r in (v if isinstance(v, list) else [])
            if isinstance(r, dict)
            and r.get("type", "sample") == "sample"
            and isinstance(r.get("time"), int | float)
        ]

    out = [(host, records(mon.get("samples")))]
    for h, node in _sub(mon, "nodes").items():
        if isinstance(node, dict):
            out.append((str(h), records(node.get("samples"))))
    return [(h, r) for h, r in out if r]


def _margin(times: Iterable[float]) -> float:
    step = typical_interval(times)
    return min(MAX_MARGIN_S, max(MIN_MARGIN_S, step or MIN_MARGIN_S))


def _doc_windows(doc: dict[str, Any]) -> list[tuple[str, int | None, float, float]]:
    mon = _sub(doc, "monitor")
    out = []
    for w in mon.get("windows") or []:
        if (
            isinstance(w, dict)
            and isinstance(w.get("start"), int | float)
            and isinstance(w.get("end"), int | float)
        ):
            it = w.get("iteration")
            out.append(
                (str(w.get("name")), it if isinstance(it, int) else None, float(w["start"]), float(w["end"]))
            )
    return out


def build(
    db: Database,
    run: dict[str, Any],
    phase_windows: Sequence[tuple[str, float, float]] = (),
) -> MonitorWindow | None:
    """The monitoring window of a stored run (queries.get_run's dict); None when the run has no start and
    end. `phase_windows` (name, start, end) are used for the per-phase split when the run's monitor has
    none."""
    span = queries.run_window(run, margin_s=0.0)
    if span is None:
        return None
    t0, t1 = span
    doc = queries.run_document(db, int(run["id"]))
    streams = _streams(doc) if doc else []
    series: dict[Key, list[tuple[float, float | None]]] = defaultdict(list)
    comms: dict[tuple[str, str], str] = {}
    phases: list[PhaseSplit] = []
    if streams:
        margin = _margin(float(r["time"]) for _, recs in streams for r in recs)
        lo, hi = t0 - margin, t1 + margin
        mw = MonitorWindow(t0, t1, margin, "run", [h for h, _ in streams])
        windows = _doc_windows(doc or {}) or [(n, None, a, b) for n, a, b in phase_windows]
        split_panels = []
        for host, recs in streams:
            recs = [r for r in recs if lo <= float(r["time"]) <= hi]
            for r in recs:
                for s in record_samples(r, host):
                    series[(s.host, s.source, s.target, s.metric)].append((s.t, s.value))
                for pid, fields in _sub(_sub(r, "data"), "proc_io").items():
                    if isinstance(fields, dict) and fields.get("comm"):
                        comms[(host, str(pid))] = str(fields["comm"])
            ivs = intervals(recs)
            for name, it, a, b in windows:
                found = split_over(ivs, a, b)
                phases.append(
                    PhaseSplit(host, name, it, a, b, found[0] if found else None, found[1] if found else None)
                )
            for direction in ("read", "write"):
                lines = split_lines(ivs, direction)
                if lines:
                    split_panels.append(
                        Panel(host, f"disk {direction}s on {host}: the run's and others'", "B/s", lines)
                    )
        mw.panels = split_panels + panels(series, comms)
        mw.phases = phases
        if any(p.split is not None and (p.split.clamped("read") or p.split.clamped("write")) for p in phases):
            mw.notes.append(
                "In some phases the run's processes were charged for more than the disks did: others' I/O "
                "is shown as 0 there (clamped), not as a negative amount."
            )
    else:
        mw = _from_database(db, run, t0, t1)
    if len(mw.panels) > MAX_PANELS:
        mw.hidden_panels = len(mw.panels) - MAX_PANELS
        mw.panels = mw.panels[:MAX_PANELS]
    hosts = sorted(set(mw.hosts) | ({str(run["hostname"])} if run.get("hostname") else set()))
    lo, hi = mw.shown
    mw.overlaps = [
        Overlap(
            int(r["id"]),
            str(r["tool"]),
            r["command"],
            r["hostname"],
            float(r["started_at"]),
            float(r["ended_at"]),
        )
        for r in queries.overlapping_runs(db, lo, hi, hosts, exclude_id=int(run["id"]))
    ]
    return mw


def _from_database(db: Database, run: dict[str, Any], t0: float, t1: float) -> MonitorWindow:
    """The node's samples the database holds for the run's time, less those other runs' own monitors took
    (their documents give the times of their samples: the same host's series hold both)."""
    rows = queries.samples(db, t0 - MAX_MARGIN_S, t1 + MAX_MARGIN_S)
    hosts = {r[1] for r in rows} | ({str(run["hostname"])} if run.get("hostname") else set())
    theirs: set[tuple[str, float]] = set()
    for other in queries.overlapping_runs(
        db, t0 - MAX_MARGIN_S, t1 + MAX_MARGIN_S, sorted(hosts), exclude_id=int(run["id"])
    ):
        doc = queries.run_document(db, int(other["id"]))
        for host, recs in _streams(doc or {}):
            theirs.update((host, float(r["time"])) for r in recs)
    kept = [r for r in rows if (r[1], r[0]) not in theirs]
    margin = _margin(r[0] for r in kept) if kept else MIN_MARGIN_S
    lo, hi = t0 - margin, t1 + margin
    series: dict[Key, list[tuple[float, float | None]]] = defaultdict(list)
    whose = set()
    for t, host, source, target, metric, value, _unit in kept:
        if source in PER_SAMPLER:
            whose.add(source)
        elif lo <= t <= hi:
            series[(host, source, target, metric)].append((t, value))
    mw = MonitorWindow(t0, t1, margin, "database", sorted({k[0] for k in series}))
    mw.panels = panels(series, {})
    if series:
        mw.notes.append(
            "The run was not stored with its own monitor (--monitor): these are the samples the database "
            "holds for its hosts and time (`iolens monitor --db`), the whole node's, whoever ran there; "
            "the run's own share cannot be told apart."
        )
    if len(kept) < len(rows):
        mw.notes.append(
            f"{len(rows) - len(kept)} values taken by other runs' own monitors (--monitor) at the same time "
            "are left out: they are those runs' samples."
        )
    if whose:
        mw.notes.append(
            f"Left out: {', '.join(sorted(whose))}: in the database they are the processes or cgroups "
            "that some sampler (another run's --monitor, a node monitor's --pid) watched, not this run's."
        )
    return mw
