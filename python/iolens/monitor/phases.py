"""Phase windows of a run on the samples' clock (CLOCK_REALTIME, Unix seconds), and each window's samples and
figures (docs/monitor.md "During a benchmark").

Phase windows are placed from what the Python side sees: the run's started_at/ended_at (milliseconds), the
phases' durations from the document, and the progress lines the engine prints while a phase runs (`elapsed_s`
since the phase began, received within milliseconds): a phase that printed one is anchored by it
("progress"); one too short to print one is laid after the phase before it ("estimate"). IO500 phases come
from each phase's own engine document ("document").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from iolens.monitor.common import Collector, rates
from iolens.monitor.stream import iso
from iolens.monitor.view import devices, lustre_targets, nfs_mounts, processes

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
            # Phases run one after another. Each anchor is late by its own line's delivery, so a phase may
            # seem to start a little before the one before it ended: it starts at that end.
            start, how = max(anchor - ph.lead_s, cursor), "progress"
        else:
            start, how = cursor, "estimate"
            if ph.name == "read" and ph.iteration in evicts:
                start = max(start, evicts[ph.iteration])
        end = start + ph.duration
        if end > run_end:
            # Laid too late (an estimate: the gaps before it were shorter than assumed; an anchor: its
            # progress line arrived late on a busy machine): end it with the run.
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


def mark(w: dict[str, Any], records: list[dict[str, Any]], collectors: dict[str, Collector]) -> None:
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
            part = tree.get("pressure", {}).get(kind)
            total = part.get("total_us") if isinstance(part, dict) else None  # a damaged stream: anything
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
