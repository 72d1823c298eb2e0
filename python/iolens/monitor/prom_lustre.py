"""Lustre in the Prometheus exposition, in iolens's own names (the default; prom_lustre_exporter.py has
lustre_exporter's): lustre_exporter's style for stats and job_stats (`component` and `target` labels,
`_total` counters of samples and bytes, per-job series only when asked for, because a server may hold tens
of thousands of jobs) and a real histogram per rpc_stats / brw_stats table (prom_histogram.py)."""

from __future__ import annotations

from iolens.monitor import prom_histogram
from iolens.monitor.common import TIME_UNITS, Tree
from iolens.monitor.promtext import Exposition


def _time_sum(c: Tree) -> float | None:
    scale = TIME_UNITS.get(str(c.get("unit", "")))
    if scale is None or "sum" not in c:
        return None
    return c["sum"] * scale


def _lustre_rw(e: Exposition, prefix: str, labels: dict[str, str], counters: Tree, what: str) -> None:
    for direction in ("read", "write"):
        c = counters.get(f"{direction}_bytes")
        if c is None:
            continue
        e.add(
            f"{prefix}{direction}_samples_total",
            "counter",
            f"Total number of {direction}s that have been recorded{what}.",
            labels,
            c.get("samples"),
        )
        past = "read" if direction == "read" else "written"
        e.add(
            f"{prefix}{direction}_bytes_total",
            "counter",
            f"The total number of bytes that have been {past}{what}.",
            labels,
            c.get("sum", 0 if c.get("samples") == 0 else None),
        )
        e.add(
            f"{prefix}{direction}_minimum_size_bytes",
            "gauge",
            f"The minimum {direction} size in bytes{what}.",
            labels,
            c.get("min"),
        )
        e.add(
            f"{prefix}{direction}_maximum_size_bytes",
            "gauge",
            f"The maximum {direction} size in bytes{what}.",
            labels,
            c.get("max"),
        )


def _lustre_ops(e: Exposition, family: str, labels: dict[str, str], counters: Tree, what: str) -> None:
    for op, c in counters.items():
        ol = {**labels, "operation": op}
        e.add(f"{family}_total", "counter", f"Number of operations recorded{what}.", ol, c.get("samples"))
        t = _time_sum(c)
        if t is not None:
            e.add(
                f"{family}_time_seconds_total",
                "counter",
                f"Time spent in the operation{what}, in seconds.",
                ol,
                t,
            )


def render(e: Exposition, data: Tree, jobs: bool) -> None:
    """The Lustre reading (`{PARAM: ENTRY}`) in iolens's names."""
    for entry in data.values():
        kind = entry.get("kind")
        labels = {"component": str(entry.get("component", "")), "target": str(entry.get("target", ""))}
        if kind == "stats":
            counters = entry.get("counters", {})
            if "nid" in entry:
                el = {**labels, "nid": str(entry["nid"])}
                _lustre_rw(e, "lustre_export_", el, counters, " for this client (export)")
                _lustre_ops(e, "lustre_export_stats", el, counters, " for this client (export)")
            elif entry.get("file") == "md_stats":
                _lustre_ops(e, "lustre_md_stats", labels, counters, " (md_stats: metadata operations)")
            else:
                _lustre_rw(e, "lustre_", labels, counters, "")
                _lustre_ops(e, "lustre_stats", labels, counters, " (stats)")
        elif kind == "job_stats":
            all_jobs = entry.get("jobs", {})
            e.add("lustre_jobs", "gauge", "Number of jobs in job_stats.", labels, len(all_jobs))
            if not jobs:
                continue
            for job_id, job in all_jobs.items():
                jl = {**labels, "jobid": job_id}
                counters = job.get("counters", {})
                _lustre_rw(e, "lustre_job_", jl, counters, " for this job")
                _lustre_ops(e, "lustre_job_stats", jl, counters, " for this job")
        elif kind in ("rpc_stats", "brw_stats"):
            _tables(e, kind, labels, entry)


def _tables(e: Exposition, kind: str, labels: dict[str, str], entry: Tree) -> None:
    """The header values as gauges, every table as a histogram lustre_brw_<table> / lustre_rpc_<table>."""
    for key, value in entry.get("values", {}).items():
        e.add(
            f"lustre_{kind}_current",
            "gauge",
            f"Current value of a {kind} header line.",
            {**labels, "name": key},
            value,
        )
    prefix = "lustre_brw_" if kind == "brw_stats" else "lustre_rpc_"
    for title, table in entry.get("tables", {}).items():
        s = prom_histogram.spec(kind, title)
        for op, buckets in prom_histogram.columns(kind, table, s).items():
            e.add_histogram(
                prefix + s.name,
                f"{kind} {title!r}: {s.what}. Lustre keeps no sum: _sum is an upper bound, each count "
                "times its bucket's upper bound.",
                {**labels, "operation": op},
                buckets,
                prom_histogram.upper_sum(buckets),
            )
