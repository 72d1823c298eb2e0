"""`iolens ior|mdtest|find|fio|io500 … --monitor[=INTERVAL]`: sample this node while the benchmark runs and
keep the samples in the run's document, with each phase's time window marked (docs/schema.md "monitor").

Sampling runs in a thread of the iolens process, on the node where iolens runs: with the local launcher that
is the node of every rank; under mpirun/srun it is the launching node, which is rank 0's node only when the
launcher puts rank 0 there (the document says which host was sampled, and whether it is rank 0's).

Phase windows are put on the samples' clock (CLOCK_REALTIME, Unix seconds) from what the Python side sees:
the run's started_at/ended_at (milliseconds), the phases' durations from the document, and the progress lines
the engine prints while a phase runs (`elapsed_s` since the phase began, received within milliseconds): a
phase that printed one is anchored by it ("progress"); one too short to print one is laid after the phase
before it ("estimate"). IO500 phases come from each phase's own engine document ("document").
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from iolens.monitor.common import Collector, rates
from iolens.monitor.sampler import SOURCES, Sampler, SourceOptions, make_collectors
from iolens.monitor.stream import VERSION, iso
from iolens.monitor.view import devices, lustre_targets, nfs_mounts, processes

OPTION = "--monitor"
# Without an interval: fine sampling while a run may still be short, then one per second.
FINE_S, FINE_FOR_S, COARSE_S = 0.1, 10.0, 1.0


class MonitorOptionError(ValueError):
    """A bad --monitor value; the message is for the user."""


@dataclass(frozen=True)
class MonitorRequest:
    interval_s: float | None = None  # None: FINE_S for the first FINE_FOR_S seconds, then COARSE_S

    def schedule(self, elapsed: float) -> float:
        if self.interval_s is not None:
            return self.interval_s
        return FINE_S if elapsed < FINE_FOR_S else COARSE_S

    def describe(self) -> str:
        if self.interval_s is not None:
            return f"{self.interval_s:g} s"
        return f"{FINE_S:g} s for the first {FINE_FOR_S:g} s, then {COARSE_S:g} s"


def take_option(argv: Sequence[str]) -> tuple[MonitorRequest | None, list[str]]:
    """Take `--monitor` or `--monitor=INTERVAL` out of the arguments (before a `--`); the rest, in order."""
    from iolens.monitor.command import UsageError, seconds

    req: MonitorRequest | None = None
    rest: list[str] = []
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--":
            rest.extend(args[i:])
            break
        if arg == OPTION:
            req = MonitorRequest()
        elif arg.startswith(OPTION + "="):
            try:
                req = MonitorRequest(seconds(arg.partition("=")[2], OPTION))
            except UsageError as exc:
                raise MonitorOptionError(str(exc)) from None
        else:
            rest.append(arg)
    return req, rest


class RunMonitor:
    """Samples in a thread from start() to stop(); on_progress() is given the engine's progress lines."""

    def __init__(self, req: MonitorRequest, workload: str, sources: Sequence[str] = SOURCES) -> None:
        self.req = req
        self.workload = workload
        opts = SourceOptions(pid_trees=[os.getpid()])
        self.sampler = Sampler(make_collectors(sources, opts))
        self.records: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.progress: list[tuple[float, dict[str, Any]]] = []
        self.started = 0.0
        self.ended = 0.0
        self._thread: threading.Thread | None = None

    def start(self) -> RunMonitor:
        self.started = time.time()
        self._thread = threading.Thread(target=self._run, name="iolens-monitor", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        self.sampler.run(self.req.schedule, self.records.append, self.events.append, final_sample=True)

    def on_progress(self, progress: dict[str, Any]) -> None:
        self.progress.append((time.time(), progress))

    def on_engine_exit(self, _pid: int) -> None:
        """A sample while the engine's process has exited but is not yet reaped (launch.run's on_exit): its
        counters, which hold those of every rank it reaped, are read once more before they vanish."""
        if self._thread is not None:
            self.sampler.take(self.records.append, self.events.append)

    def stop(self) -> None:
        if self._thread is None:
            return
        self.ended = time.time()
        self.sampler.stop()
        self._thread.join()
        self._thread = None

    # --- the document's "monitor" object ---------------------------------------------------------------

    def section(self, doc: dict[str, Any], resultdir: Path | None = None) -> dict[str, Any]:
        """The "monitor" object for a run's document (docs/schema.md)."""
        host = socket.gethostname()
        rank0 = str((doc.get("host") or {}).get("hostname") or "")
        comm = doc.get("comm") or {}
        wins = windows(doc, self.progress, self.started, self.ended, resultdir)
        collectors = {c.name: c for c in self.sampler.collectors}
        for w in wins:
            _mark(w, self.records, collectors)
        note = None
        if rank0 and rank0 != host:
            note = f"rank 0 ran on {rank0}; the samples are of {host}, where iolens ran"
        elif int(comm.get("nodes") or 1) > 1:
            note = f"the run used {comm.get('nodes')} nodes; the samples are of {host} (rank 0's node) only"
        return {
            "version": VERSION,
            "host": host,
            "rank0_host": rank0 or None,
            "node_scope": "launching node",
            "note": note,
            "clock": "CLOCK_REALTIME (Unix seconds)",
            "interval": self.req.describe(),
            "started": round(self.started, 6),
            "ended": round(self.ended, 6),
            "sources": self.sampler.availability(),
            "events": self.events,
            "windows": wins,
            "samples": self.records,
        }

    def add_to_file(
        self, path: Path, doc: dict[str, Any] | None = None, resultdir: Path | None = None
    ) -> None:
        """Add the "monitor" object to the document at path (read from it unless given), atomically."""
        if doc is None:
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return  # not a readable document: the caller reports that, with no samples added
            if not isinstance(doc, dict):
                return
        doc["monitor"] = self.section(doc, resultdir)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.monitor.tmp")
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)

    def add_to_io500(self, doc: dict[str, Any], json_path: Path | None, console: Any = None) -> None:
        """Add the "monitor" object to an io500 run's document (the dict the driver wrote) and write it again
        where the driver wrote it (RESULTDIR/iolens-io500.json, and --json), then show the per-phase
        table on `console`."""
        from iolens.io500.driver import DOCUMENT_NAME
        from iolens.results import RunMonitor, _Reader

        resultdir = (doc.get("io500") or {}).get("resultdir")
        rd = Path(resultdir) if resultdir else None
        doc["monitor"] = self.section(doc, rd)
        text = json.dumps(doc, indent=2) + "\n"
        for path in (rd / DOCUMENT_NAME if rd is not None else None, json_path):
            if path is None or not path.parent.is_dir():
                continue
            tmp = path.with_name(f".{path.name}.{os.getpid()}.monitor.tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        if console is not None:
            from iolens.monitor.report import monitor_section

            console.print()
            console.print(monitor_section(RunMonitor.parse(_Reader(doc["monitor"], "monitor"))))


@contextlib.contextmanager
def attached(req: MonitorRequest | None, workload: str) -> Iterator[RunMonitor | None]:
    """A started RunMonitor for the block (None when no --monitor was given); stopped at the end."""
    if req is None:
        yield None
        return
    mon = RunMonitor(req, workload).start()
    try:
        yield mon
    finally:
        mon.stop()


# --- phase windows -----------------------------------------------------------------------------------------


def parse_iso(text: Any) -> float | None:
    """Unix seconds of an ISO-8601 UTC time as the engine and the io500 driver write it, else None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass
class _Phase:
    name: str
    iteration: int | None
    duration: float
    progress_name: str
    # Progress lines count from a point this long after the phase's start (ior: the transfers, after open).
    lead_s: float = 0.0


def _phases(doc: dict[str, Any]) -> list[_Phase]:
    workload = doc.get("workload")
    out: list[_Phase] = []
    if workload in ("ior", "mdtest", None, ""):
        for p in doc.get("phases") or []:
            if not isinstance(p, dict):
                continue
            times = p.get("times") or {}
            d = times.get("total_s") if "times" in p else p.get("time_s")
            lead = times.get("open_s", 0.0)
            if isinstance(d, int | float):
                it = p.get("iteration")
                name = str(p.get("name"))
                out.append(
                    _Phase(
                        name,
                        it if isinstance(it, int) else None,
                        float(d),
                        name,
                        float(lead) if isinstance(lead, int | float) else 0.0,
                    )
                )
    elif workload == "fio":
        fio = doc.get("fio") or {}
        jobs = fio.get("jobs") or []
        for g in fio.get("groups") or []:
            names = [
                str(jobs[i].get("name")) for i in g.get("jobs", []) if isinstance(i, int) and i < len(jobs)
            ]
            gid = g.get("id")
            d = g.get("elapsed_s")
            if isinstance(d, int | float):
                out.append(_Phase(f"group {gid}: {', '.join(names)}", None, float(d), f"group {gid}"))
    elif workload == "find":
        f = doc.get("find") or {}
        if isinstance(f.get("time_s"), int | float):
            out.append(_Phase("find", None, float(f["time_s"]), "find"))
    return out


def windows(
    doc: dict[str, Any],
    progress: list[tuple[float, dict[str, Any]]],
    started: float,
    ended: float,
    resultdir: Path | None = None,
) -> list[dict[str, Any]]:
    """Each phase's [start, end] in Unix seconds, with how it was placed ("progress", "estimate",
    "document")."""
    if doc.get("workload") == "io500":
        return _io500_windows(doc, resultdir)
    run_start = parse_iso(doc.get("started_at")) or started
    run_end = parse_iso(doc.get("ended_at")) or ended
    anchors: dict[tuple[str, int | None], float] = {}
    evicts: dict[int | None, float] = {}
    for t, p in progress:
        name = str(p.get("phase", ""))
        it = p.get("iteration") if isinstance(p.get("iteration"), int) else None
        if name == "evict-cache":
            evicts[it] = t
            continue
        el = p.get("elapsed_s")
        if isinstance(el, int | float) and not isinstance(el, bool):
            start = t - float(el)
            key = (name, it)
            # Each line gives the start again, late by its delivery time: the earliest is the best.
            anchors[key] = min(anchors.get(key, start), start)
    out: list[dict[str, Any]] = []
    cursor = run_start
    for ph in _phases(doc):
        anchor = anchors.get((ph.progress_name, ph.iteration))
        if anchor is not None:
            start, how = anchor - ph.lead_s, "progress"
        else:
            start, how = cursor, "estimate"
            if ph.name == "read" and ph.iteration in evicts:
                start = max(start, evicts[ph.iteration])
        end = start + ph.duration
        if how == "estimate" and end > run_end:
            # Laid too late (the gaps before it were shorter than assumed): end it with the run.
            end = max(run_end, cursor)
            start = max(cursor, end - ph.duration)
        out.append(
            {
                "name": ph.name,
                "iteration": ph.iteration,
                "start": round(start, 6),
                "end": round(end, 6),
                "placed": how,
            }
        )
        cursor = end
    return out


def _io500_windows(doc: dict[str, Any], resultdir: Path | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    section = doc.get("io500") or {}
    rd = resultdir or (Path(section["resultdir"]) if section.get("resultdir") else None)
    for p in section.get("phases") or []:
        start = end = None
        how = "document"
        engine_doc = p.get("engine_document")
        if rd is not None and engine_doc:
            try:
                sub = json.loads((rd / engine_doc).read_text(encoding="utf-8"))
                start, end = parse_iso(sub.get("started_at")), parse_iso(sub.get("ended_at"))
            except (OSError, ValueError):
                pass
        if start is None or end is None:
            # The driver's own times, to the second.
            start, end = parse_iso(p.get("started_at")), parse_iso(p.get("ended_at"))
            how = "document (seconds)"
        if start is None or end is None:
            continue
        out.append({"name": str(p.get("name")), "iteration": None, "start": start, "end": end, "placed": how})
    # Times to the second (a phase with no engine run, such as the timestamp) may overlap their neighbours:
    # such a phase ran after the one before it and before the one after it.
    for i, w in enumerate(out):
        if w["placed"] != "document (seconds)":
            continue
        if i > 0:
            w["start"] = max(w["start"], out[i - 1]["end"])
        w["end"] = max(w["end"], w["start"])
        later = [x["start"] for x in out[i + 1 :] if x["placed"] == "document"]
        if later and later[0] >= w["start"]:
            w["end"] = min(w["end"], later[0])
    return out


# --- samples of a window -----------------------------------------------------------------------------------


def _mark(w: dict[str, Any], records: list[dict[str, Any]], collectors: dict[str, Collector]) -> None:
    """Add to a window the samples that cover it and its figures over them.

    `samples` is [first, last] (indexes into the monitor's samples): from the first sample taken after the
    window began to the first taken at or after its end, the samples whose interval overlaps it.
    `measured` is the span the figures come from: the last sample at or before the start to the first at or
    after the end (wider than the window by up to one interval on each side).
    """
    times = [r["time"] for r in records]
    start, end = w["start"], w["end"]
    first = next((i for i, t in enumerate(times) if t > start), None)
    last = next((i for i, t in enumerate(times) if t >= end), len(times) - 1 if times else None)
    if first is None or last is None or last < first:
        w["samples"] = None
        w["figures"] = None
        return
    w["samples"] = [first, last]
    a = max(first - 1, 0)
    b = last
    ra, rb = records[a], records[b]
    dt = rb["time"] - ra["time"]
    inside = records[first : last + 1]
    figures: dict[str, Any] = {"measured": [ra["time"], rb["time"]]}
    if dt > 0:
        data = dict(rb["data"])
        if "proc_io" in collectors:
            # A process that exited before the closing sample (a short run's ranks) counts with its last
            # reading inside the window.
            procs: dict[str, Any] = {}
            for r in records[a + 1 : b + 1]:
                procs.update(r["data"].get("proc_io") or {})
            data["proc_io"] = procs
        tree: dict[str, Any] = {}
        for name, c in collectors.items():
            before, after = ra["data"].get(name), data.get(name)
            if isinstance(before, dict) and isinstance(after, dict):
                r = rates(before, after, dt, c)
                if r:
                    tree[name] = r
        figures["devices"] = [_io(f) for f in devices(tree)]
        figures["nfs"] = [_io(f) for f in nfs_mounts(tree)]
        figures["lustre"] = [_io(f) for f in lustre_targets(tree, data)]
        figures["processes"] = [_io(f) for f in processes(tree, data)]
        for kind in ("some", "full"):
            total = tree.get("pressure", {}).get(kind, {}).get("total_us")
            if total is not None:
                figures[f"io_pressure_{kind}_pct"] = round(total / 1e4, 3)
    for key, source, field in (
        ("dirty_bytes_max", "meminfo", "dirty_bytes"),
        ("writeback_bytes_max", "meminfo", "writeback_bytes"),
        ("procs_blocked_max", "stat", "procs_blocked"),
        ("load1_max", "loadavg", "load1"),
    ):
        values = [r["data"].get(source, {}).get(field) for r in inside]
        nums = [v for v in values if isinstance(v, int | float)]
        if nums:
            figures[key] = max(nums)
    w["figures"] = figures


def _io(f: Any) -> dict[str, Any]:
    out = {
        "name": f.name,
        "read_bytes_per_s": round(f.read_bps, 3),
        "write_bytes_per_s": round(f.write_bps, 3),
        "read_ops_per_s": round(f.read_iops, 3),
        "write_ops_per_s": round(f.write_iops, 3),
        "metadata_ops_per_s": round(f.meta_ops, 3),
    }
    if f.busy_pct is not None:
        out["busy_pct"] = round(f.busy_pct, 2)
    return out


def iso_window(w: dict[str, Any]) -> str:
    return f"{iso(w['start'])} – {iso(w['end'])}"
