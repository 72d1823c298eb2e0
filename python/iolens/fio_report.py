"""What fio reports, computed from a FioDocument: its reporting entries (a job, or one instance of it), the
percentile list, the per-second bandwidth and IOPS statistics, the latency distribution, the "Run status
group" figures, and fio's way of writing numbers. The terminal view (render.py), the fio-shaped JSON
(fio_json.py) and the per-second log share these, so they always agree."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from iolens.results import (
    FIO_DIRECTIONS,
    NO_SAMPLES,
    FioDocument,
    FioInstance,
    FioJob,
    FioLatency,
    FioSamples,
    FioSync,
)

# fio's default percentile list (its percentile_list option), as fio writes them.
FIO_PERCENTILES = (
    "1", "5", "10", "20", "30", "40", "50", "60", "70", "80", "90", "95",
    "99", "99.5", "99.9", "99.95", "99.99",
)  # fmt: skip

# fio's latency distribution: the upper edges of its buckets in ns, µs and ms; a latency counts in the
# first bucket whose edge is above it (in the unit of its own magnitude), ">=2000" ms takes the rest.
LATENCY_EDGES = (2, 4, 10, 20, 50, 100, 250, 500, 750, 1000)
LATENCY_MS_EDGES = (*LATENCY_EDGES, 2000)


def percentile_key(p: str) -> str:
    """fio's name of a percentile in its JSON: printf's %f ("99.900000")."""
    return f"{float(p):f}"


def percentiles(lat: FioLatency, points: Sequence[str] = FIO_PERCENTILES) -> list[tuple[str, int]]:
    """(p, value in ns) for every point, from the histogram's buckets; empty when nothing was measured."""
    if lat.count == 0:
        return []
    return [(p, lat.percentile(p)) for p in points]


def bucket_value(lat: FioLatency, high: int) -> int:
    """The value a bucket stands for: its upper bound clamped to [min, max], as for the percentiles."""
    return min(max(high, lat.min), lat.max)


# --- reporting entries ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One of fio's reporting entries: a whole job (group_reporting: every instance summed), or one instance
    of a job (fio reports each thread on its own, under the job's name). Either has every figure fio gives
    an entry: the job's from its histograms and per-second record, an instance's as the engine summed them
    up."""

    job: FioJob
    instance: FioInstance | None = None

    def _dir(self, direction: str) -> Any:
        src = self.instance if self.instance is not None else self.job
        return src.direction(direction)

    def bytes(self, direction: str) -> int:
        return int(self._dir(direction).bytes)

    def ios(self, direction: str) -> int:
        return int(self._dir(direction).ios)

    def runtime_s(self, direction: str) -> float:
        return float(self._dir(direction).runtime_s)

    def latency(self, direction: str, kind: str) -> FioLatency:
        """kind: "lat_ns", "clat_ns" or "slat_ns"."""
        lat: FioLatency = getattr(self._dir(direction), kind)
        return lat

    def bw_kib_s(self, direction: str) -> FioSamples:
        if self.instance is None:
            return bw_samples(self.job, direction)
        return self.instance.direction(direction).bw_kib_s

    def iops(self, direction: str) -> FioSamples:
        if self.instance is None:
            return iops_samples(self.job, direction)
        return self.instance.direction(direction).iops

    @property
    def sync(self) -> FioSync | None:
        return self.job.sync if self.instance is None else self.instance.sync

    @property
    def cpu(self) -> tuple[float, float, int]:
        """fio's usr_cpu and sys_cpu (percent of the entry's time × its threads) and ctx."""
        if self.instance is None:
            c = self.job.cpu
            return c.usr_pct, c.sys_pct, c.ctx
        i = self.instance
        t = i.elapsed_s
        return (100.0 * i.usr_s / t if t > 0 else 0.0, 100.0 * i.sys_s / t if t > 0 else 0.0, i.ctx)

    def distribution(self) -> dict[str, dict[str, float]]:
        """fio's latency_ns/us/ms of the entry's completions."""
        if self.instance is None:
            return latency_distribution([self.job.read.clat_ns, self.job.write.clat_ns])
        return distribution_shares(self.instance.clat_dist)


def entries(doc: FioDocument) -> list[Entry]:
    """fio's reporting entries, in fio's order: a job with group_reporting is one entry, any other job one
    entry per instance (rank by rank). A job with one instance (or without per-instance figures) is one
    entry: the job's figures are that instance's, with its histograms."""
    out: list[Entry] = []
    for job in doc.jobs:
        if job.group_reporting or len(job.per_instance) <= 1:
            out.append(Entry(job))
        else:
            ordered = sorted(job.per_instance, key=lambda i: (i.rank, i.instance))
            out.extend(Entry(job, inst) for inst in ordered)
    return out


# --- "Run status group" ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupDirection:
    """One line of fio's "Run status group N (all jobs)": a direction over the group's entries."""

    direction: str
    bytes: int
    agg_bw_bytes_per_s: float  # all the group's bytes / the longest entry's runtime
    min_bw_bytes_per_s: float  # the slowest entry's bandwidth
    max_bw_bytes_per_s: float
    min_run_s: float
    max_run_s: float


def group_directions(doc: FioDocument, group_id: int) -> list[GroupDirection]:
    """fio's group figures for each direction some entry of the group used."""
    mine = [e for e in entries(doc) if e.job.group == group_id]
    out = []
    for d in FIO_DIRECTIONS:
        ran = [e for e in mine if e.runtime_s(d) > 0 and (e.bytes(d) > 0 or e.ios(d) > 0)]
        if not ran:
            continue
        bws = [e.bytes(d) / e.runtime_s(d) for e in ran]
        runs = [e.runtime_s(d) for e in ran]
        total = sum(e.bytes(d) for e in ran)
        out.append(GroupDirection(d, total, total / max(runs), min(bws), max(bws), min(runs), max(runs)))
    return out


def group_agg_bw(doc: FioDocument, group_id: int, direction: str) -> float:
    return next(
        (g.agg_bw_bytes_per_s for g in group_directions(doc, group_id) if g.direction == direction), 0.0
    )


# --- per-second statistics (fio's bw_* and iops_* figures) -----------------------------------------------


def _stats(values: Sequence[float]) -> FioSamples:
    if not values:
        return NO_SAMPLES
    dev = statistics.stdev(values) if len(values) > 1 else 0.0
    return FioSamples(min(values), max(values), statistics.fmean(values), dev, len(values))


def bw_samples(job: FioJob, direction: str) -> FioSamples:
    """The job's bandwidth in KiB/s, one sample per second after the ramp (none if the direction was not
    used). A second in which nothing completed is a sample of 0: the storage stalled."""
    if not job.direction(direction).used:
        return NO_SAMPLES
    return _stats([s.direction(direction).bytes / 1024 for s in job.per_second])


def iops_samples(job: FioJob, direction: str) -> FioSamples:
    if not job.direction(direction).used:
        return NO_SAMPLES
    return _stats([float(s.direction(direction).ios) for s in job.per_second])


def bw_share_pct(mean_kib_s: float, group_agg_bytes_per_s: float) -> float:
    """fio's bw_agg ("per="): the entry's mean bandwidth as a share of its group's, at most 100%."""
    agg_kib = group_agg_bytes_per_s / 1024
    if agg_kib <= 1:
        return 100.0
    return min(mean_kib_s * 100.0 / agg_kib, 100.0)


# --- latency distribution (fio's latency_ns / latency_us / latency_ms) ------------------------------------


def _slot(ns: int) -> tuple[str, str]:
    """(unit, fio's bucket label) of a latency."""
    if ns < 1000:
        unit, value, edges = "ns", ns, LATENCY_EDGES
    elif ns < 1_000_000:
        unit, value, edges = "us", ns // 1000, LATENCY_EDGES
    else:
        unit, value, edges = "ms", ns // 1_000_000, LATENCY_MS_EDGES
    for edge in edges:
        if value < edge:
            return unit, str(edge)
    return "ms", ">=2000"


def latency_distribution(lats: Iterable[FioLatency]) -> dict[str, dict[str, float]]:
    """The share of I/Os (percent) in each of fio's latency buckets, from the histograms' buckets (each
    counted at the value the percentiles use; the engine counts an instance's the same way)."""
    counts: dict[str, dict[str, int]] = {}
    for lat in lats:
        if not lat.count:
            continue
        for b in lat.buckets:
            unit, label = _slot(bucket_value(lat, b.high))
            counts.setdefault(unit, {}).setdefault(label, 0)
            counts[unit][label] += b.count
    return distribution_shares(counts)


def distribution_shares(counts: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """fio's latency_ns/us/ms from counts by unit and edge label: every one of fio's buckets, as the share
    of all I/Os (percent); like fio, a bucket that holds any I/O shows at least 0.01%."""
    total = sum(n for by_label in counts.values() for n in by_label.values())
    labels = {
        "ns": [str(e) for e in LATENCY_EDGES],
        "us": [str(e) for e in LATENCY_EDGES],
        "ms": [*(str(e) for e in LATENCY_MS_EDGES), ">=2000"],
    }
    out: dict[str, dict[str, float]] = {}
    for unit, names in labels.items():
        shares = {}
        for label in names:
            n = counts.get(unit, {}).get(label, 0)
            shares[label] = max(100.0 * n / total, 0.01) if n and total else 0.0
        out[unit] = shares
    return out


def iodepth_label(iodepth: int) -> str:
    """fio's IO-depth level (1, 2, 4, 8, 16, 32, >=64) that a queue of `iodepth` in-flight I/Os falls in."""
    if iodepth >= 64:
        return ">=64"
    level = 1
    while level * 2 <= max(iodepth, 1):
        level *= 2
    return str(level)


# --- fio's way of writing numbers --------------------------------------------------------------------------


def fio_number(value: float, pow2: bool, unit: str = "", digits: int = 4) -> str:
    """A number the way fio prints it: scaled by 1000 (or 1024) until its whole part has at most `digits`
    digits, then given with as many decimals as fill `digits` (none when one or less would). `unit` "B"
    gives KiB/MiB (pow2) or kB/MB; without a unit the prefix stands alone (12.3k IOPS)."""
    step = 1024 if pow2 else 1000
    prefixes = ("", "K" if pow2 else "k", "M", "G", "T", "P", "E")
    x = max(float(value), 0.0)
    idx = 0
    while idx < len(prefixes) - 1 and len(str(int(x))) > digits:
        x /= step
        idx += 1
    if idx == 0:
        text = str(int(x))
    else:
        decimals = digits - len(str(int(x)))
        text = str(round(x)) if decimals <= 1 else f"{x:.{decimals - 1}f}"
    prefix = prefixes[idx]
    if not unit:
        return f"{text}{prefix}"
    return f"{text}{prefix}{'i' if pow2 and idx else ''}{unit}"


def fio_bytes(n: float, pow2: bool = True) -> str:
    """An amount of data as fio prints it: 4000KiB, 48.1MiB (pow2), 4096kB, 50.4MB (decimal)."""
    return fio_number(n, pow2, "B")


def fio_rate(bytes_per_s: float, pow2: bool = True) -> str:
    return fio_number(bytes_per_s, pow2, "B") + "/s"


def latency_unit(lo: int, hi: int) -> tuple[str, int]:
    """The unit fio prints a set of latencies in, from the smallest and largest: (name, divisor)."""
    if lo > 2_000_000 and hi > 99_999_999:
        return "msec", 1_000_000
    if lo > 2000 and hi > 99_999:
        return "usec", 1000
    return "nsec", 1


def ms(seconds: float) -> int:
    """A duration in whole milliseconds, as fio counts runtimes."""
    return int(round(seconds * 1000))


def ceil_div(value: int, divisor: int) -> int:
    """fio rounds percentile values up when it scales them to µs or ms."""
    return math.ceil(value / divisor) if divisor > 1 else value
