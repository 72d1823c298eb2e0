"""What a run's monitoring section shows, prepared without plotly: the HTML report draws it, and the web
portal can reuse it (docs/db.md "Monitoring during the run").

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
- Own and others (report/own_io.py): the disks' total minus the run's process tree's, clamped at 0, per
  interval (drawn) and per phase (tabled).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from iolens.monitor.common import subtree
from iolens.report.own_io import Interval, Split, intervals, split_over
from iolens.store import queries
from iolens.store.db import Database
from iolens.store.samples import record_samples

MIN_MARGIN_S = 1.0
MAX_MARGIN_S = 10.0
MAX_LINES = 8
MAX_PANELS = 16
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
    host = str(mon.get("host") or subtree(doc, "host").get("hostname") or "unknown")

    def records(v: Any) -> list[dict[str, Any]]:
        return [
            r
            for r in (v if isinstance(v, list) else [])
            if isinstance(r, dict)
            and r.get("type", "sample") == "sample"
            and isinstance(r.get("time"), int | float)
        ]

    out = [(host, records(mon.get("samples")))]
    for h, node in subtree(mon, "nodes").items():
        if isinstance(node, dict):
            out.append((str(h), records(node.get("samples"))))
    return [(h, r) for h, r in out if r]


def _margin(times: Iterable[float]) -> float:
    step = typical_interval(times)
    return min(MAX_MARGIN_S, max(MIN_MARGIN_S, step or MIN_MARGIN_S))


def _doc_windows(doc: dict[str, Any]) -> list[tuple[str, int | None, float, float]]:
    mon = subtree(doc, "monitor")
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
                for pid, fields in subtree(subtree(r, "data"), "proc_io").items():
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
