"""A fio document in the shape of fio's `--output-format=json` (and `json+`), so that scripts written for fio
(`jobs[0]["read"]["iops"]`, `jobs[0]["read"]["clat_ns"]["percentile"]["99.000000"]`) read iolens's figures.

The figures come from the engine's document (docs/schema.md) through fio_report; where fio has a figure the
document does not, the converter says so in an "iolens" object beside fio's keys rather than invent it.
docs/fio.md lists every difference."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from typing import Any

from iolens import __version__
from iolens.fio_report import (
    Entry,
    bw_share_pct,
    entries,
    group_agg_bw,
    iodepth_label,
    ms,
    percentile_key,
    percentiles,
)
from iolens.results import FIO_DIRECTIONS, FioDocument, FioJob, FioLatency

IODEPTH_LEVELS = ("1", "2", "4", "8", "16", "32", ">=64")
IODEPTH_BATCHES = ("0", "4", "8", "16", "32", "64", ">=64")

# fio figures the engine does not measure: present (as zeros) so that scripts find their keys.
NOT_MEASURED = ("short_ios", "drop_ios", "majf", "minf", "iodepth_submit", "iodepth_complete")


def option_text(value: Any) -> str | None:
    """An option's value as fio's JSON gives it (a string); None for an option without a value (null or
    an empty string: fio lists only options that have one)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | tuple):
        return ":".join(t for t in (option_text(v) for v in value) if t is not None)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


def shared_options(doc: FioDocument) -> dict[str, str]:
    """fio's "global options": the options every job has with the same value. With one job there is nothing
    to share, and everything is that job's (as for `fio --name=... --rw=...`)."""
    configs = doc.jobs_config
    if len(configs) < 2:
        return {}
    first = configs[0].options
    out = {}
    for key, value in first.items():
        text = option_text(value)
        if key == "name" or text is None:
            continue
        if all(option_text(c.options.get(key)) == text and key in c.options for c in configs[1:]):
            out[key] = text
    return out


def _job_options(job: FioJob, shared: dict[str, str]) -> dict[str, str]:
    out = {"name": job.name}
    for key, value in job.options.items():
        text = option_text(value)
        if key != "name" and key not in shared and text is not None:
            out[key] = text
    return out


def _epoch(iso: str) -> float | None:
    """Seconds since the epoch of an ISO-8601 UTC time (the document's started_at/ended_at)."""
    if not iso:
        return None
    try:
        t = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.timestamp()


# --- latency objects -----------------------------------------------------------------------------------


def zero_lat() -> dict[str, Any]:
    return {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}


def lat_object(lat: FioLatency, with_percentiles: bool, plus: bool = False) -> dict[str, Any]:
    """fio's {min, max, mean, stddev, N}, with its percentile list where fio prints one (clat by default),
    and with json+ the histogram's bins (each bucket at its middle, clamped to [min, max]; an instance's
    latency has its percentiles from the engine, and no bins)."""
    mn, mx, mean, sd = lat.stats
    obj: dict[str, Any] = {"min": mn, "max": mx, "mean": mean, "stddev": sd, "N": lat.count}
    if not (with_percentiles and lat.count):
        return obj
    obj["percentile"] = {percentile_key(p): v for p, v in percentiles(lat)}
    if plus and lat.buckets:
        bins: dict[str, int] = {}
        for b in sorted(lat.buckets, key=lambda b: b.low):
            key = str(min(max((b.low + b.high) // 2, lat.min), lat.max))
            bins[key] = bins.get(key, 0) + b.count
        obj["bins"] = bins
    return obj


# --- directions ----------------------------------------------------------------------------------------


def _rates(bytes_: int, ios: int, runtime_s: float) -> dict[str, Any]:
    bw_bytes = int(bytes_ / runtime_s) if runtime_s > 0 else 0
    return {
        "io_bytes": bytes_,
        "io_kbytes": bytes_ >> 10,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes // 1024,
        "iops": ios / runtime_s if runtime_s > 0 else 0.0,
        "runtime": ms(runtime_s),
        "total_ios": ios,
        "short_ios": 0,
        "drop_ios": 0,
    }


def _no_samples() -> dict[str, Any]:
    return {
        "bw_min": 0, "bw_max": 0, "bw_agg": 0.0, "bw_mean": 0.0, "bw_dev": 0.0, "bw_samples": 0,
        "iops_min": 0, "iops_max": 0, "iops_mean": 0.0, "iops_stddev": 0.0, "iops_samples": 0,
    }  # fmt: skip


def _direction(doc: FioDocument, e: Entry, direction: str, plus: bool) -> dict[str, Any]:
    """One direction of an entry (a job, or one instance): rates from the exact runtime (fio's `runtime` is
    that in whole milliseconds), latencies, and the one-second samples."""
    out = _rates(e.bytes(direction), e.ios(direction), e.runtime_s(direction))
    # A synchronous backend measures no submission latency; fio then reports slat with N=0.
    slat = e.latency(direction, "slat_ns")
    out["slat_ns"] = zero_lat() if e.job.synchronous else lat_object(slat, False, plus)
    out["clat_ns"] = lat_object(e.latency(direction, "clat_ns"), True, plus)
    out["lat_ns"] = lat_object(e.latency(direction, "lat_ns"), False, plus)
    bw = e.bw_kib_s(direction)
    share = bw_share_pct(bw.mean, group_agg_bw(doc, e.job.group, direction)) if bw.samples else 0.0
    io = e.iops(direction)
    out.update(
        bw_min=int(round(bw.min)), bw_max=int(round(bw.max)), bw_agg=share, bw_mean=bw.mean,
        bw_dev=bw.stddev, bw_samples=bw.samples,
        iops_min=int(round(io.min)), iops_max=int(round(io.max)), iops_mean=io.mean,
        iops_stddev=io.stddev, iops_samples=io.samples,
    )  # fmt: skip
    return out


def _trim() -> dict[str, Any]:
    out = _rates(0, 0, 0.0)
    out.update(slat_ns=zero_lat(), clat_ns=zero_lat(), lat_ns=zero_lat())
    out.update(_no_samples())
    return out


# --- one entry of "jobs" -------------------------------------------------------------------------------


def _iodepth(job: FioJob) -> int:
    value = job.options.get("iodepth", 1)
    try:
        depth = int(value)
    except (TypeError, ValueError):
        depth = 1
    return 1 if job.synchronous else max(depth, 1)


def _entry(doc: FioDocument, e: Entry, shared: dict[str, str], elapsed: int, plus: bool) -> dict[str, Any]:
    job, inst = e.job, e.instance
    out: dict[str, Any] = {
        "jobname": job.name,
        "groupid": job.group,
        "error": 0 if doc.ok else 1,
        "eta": 0,
        "elapsed": elapsed,
        "job options": _job_options(job, shared),
    }
    for d in FIO_DIRECTIONS:
        out[d] = _direction(doc, e, d, plus)
    out["trim"] = _trim()
    sync = e.sync
    if sync is None:
        out["sync"] = {"total_ios": 0, "lat_ns": zero_lat()}
    else:
        out["sync"] = {"total_ios": sync.ios, "lat_ns": lat_object(sync.lat_ns, True, plus)}
    usr, sys_, ctx = e.cpu
    if inst is None:
        runtime_s = sum(i.elapsed_s for i in job.per_instance) or job.elapsed_s * job.instances
    else:
        runtime_s = inst.elapsed_s
    out.update(job_runtime=ms(runtime_s), usr_cpu=usr, sys_cpu=sys_, ctx=ctx)
    out.update(majf=0, minf=0)
    depth = _iodepth(job)
    level = iodepth_label(depth)
    out["iodepth_level"] = {k: (100.0 if k == level and job.ios else 0.0) for k in IODEPTH_LEVELS}
    out["iodepth_submit"] = {k: 0.0 for k in IODEPTH_BATCHES}
    out["iodepth_complete"] = {k: 0.0 for k in IODEPTH_BATCHES}
    dist = e.distribution()
    out.update(latency_ns=dist["ns"], latency_us=dist["us"], latency_ms=dist["ms"])
    out.update(latency_depth=depth, latency_target=0, latency_percentile=100.0, latency_window=0)
    note: dict[str, Any] = {
        "ioengine": job.ioengine,
        "cache": job.cache.mode,
        "cache_figure": job.cache.cache_figure,
        "from_config": ["iodepth_level"],
        "not_measured": list(NOT_MEASURED),
    }
    if inst is None:
        note["instances"] = job.instances
    else:
        note.update(rank=inst.rank, instance=inst.instance)
    out["iolens"] = note
    return out


def to_fio_json(doc: FioDocument, plus: bool = False) -> dict[str, Any]:
    """The document as fio's JSON output: one "jobs" entry per job with group_reporting, else one per
    instance (fio repeats the job's name); `plus` adds json+'s latency bins."""
    end = _epoch(doc.ended_at) or _epoch(doc.started_at) or 0.0
    start = _epoch(doc.started_at)
    if start is not None and end:
        elapsed = int(round(end - start))
    else:
        elapsed = int(round(max((j.elapsed_s + j.ramp_s for j in doc.jobs), default=0.0)))
    shared = shared_options(doc)
    out: dict[str, Any] = {
        "fio version": f"iolens-{doc.version or __version__}",
        "timestamp": int(end),
        "timestamp_ms": int(end * 1000),
        "time": time.ctime(end),
    }
    if shared:
        out["global options"] = shared
    out["jobs"] = [_entry(doc, e, shared, elapsed, plus) for e in entries(doc)]
    out["disk_util"] = []
    out["iolens"] = {
        "schema_version": doc.schema_version,
        "status": doc.status,
        "error": doc.error.message if doc.error is not None else None,
        "hostname": doc.host.hostname,
        "ranks": doc.comm.ranks,
    }
    return out


def dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, indent=2) + "\n"
