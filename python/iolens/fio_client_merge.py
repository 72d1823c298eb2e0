"""fio's client-mode report from the clients' own results: the `client_stats` list of fio's JSON (every
client's entries with its hostname and port, then "All clients") and the "All clients" text block.

"All clients" sums every entry of every client as fio's client mode does (fio's sum_thread_stats): I/Os and
bytes add up, a direction's runtime is the longest, latencies pool their count, min, max, mean and standard
deviation (fio prints no percentiles there, and neither does iolens), the CPU shares are weighted by each
entry's runtime, and the latency distribution by its I/Os. fio adds it when more than one entry came in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from iolens import fio_json, fio_report

DIRECTIONS = ("read", "write", "trim")
_DIST_KEYS = (("latency_ns", "nsec"), ("latency_us", "usec"), ("latency_ms", "msec"))


def _pool(lats: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """{min, max, mean, stddev, N} of several such objects taken together."""
    used = [x for x in lats if x.get("N", 0)]
    n = sum(int(x["N"]) for x in used)
    if not n:
        return fio_json.zero_lat()
    mean = sum(x["N"] * x["mean"] for x in used) / n
    sq = sum((x["N"] - 1) * x["stddev"] ** 2 + x["N"] * (x["mean"] - mean) ** 2 for x in used)
    return {
        "min": min(int(x["min"]) for x in used),
        "max": max(int(x["max"]) for x in used),
        "mean": mean,
        "stddev": math.sqrt(sq / (n - 1)) if n > 1 else 0.0,
        "N": n,
    }


def _seconds(part: dict[str, Any]) -> float:
    if part.get("bw_bytes") and part.get("io_bytes"):
        return float(part["io_bytes"]) / float(part["bw_bytes"])
    return float(part.get("runtime", 0)) / 1000.0


def _direction(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    io_bytes = sum(int(p["io_bytes"]) for p in parts)
    ios = sum(int(p["total_ios"]) for p in parts)
    # The longest runtime, exact where the entry's rate gives it (`runtime` is in whole milliseconds).
    seconds = max((_seconds(p) for p in parts), default=0.0)
    out: dict[str, Any] = {
        "io_bytes": io_bytes,
        "io_kbytes": io_bytes // 1024,
        "bw_bytes": round(io_bytes / seconds) if seconds else 0,
        "bw": round(io_bytes / seconds / 1024) if seconds else 0,
        "iops": ios / seconds if seconds else 0.0,
        "runtime": max((int(p["runtime"]) for p in parts), default=0),
        "total_ios": ios,
        "short_ios": sum(int(p.get("short_ios", 0)) for p in parts),
        "drop_ios": sum(int(p.get("drop_ios", 0)) for p in parts),
    }
    for key in ("slat_ns", "clat_ns", "lat_ns"):
        out[key] = _pool([p[key] for p in parts if key in p])
    # fio takes no bandwidth or IOPS samples for the sum.
    for key in ("bw_min", "bw_max", "bw_samples", "iops_min", "iops_max", "iops_samples"):
        out[key] = 0
    for key in ("bw_agg", "bw_mean", "bw_dev", "iops_mean", "iops_stddev"):
        out[key] = 0.0
    return out


def _weighted(entries: Sequence[dict[str, Any]], key: str, weights: Sequence[float]) -> float:
    total = sum(weights)
    if not total:
        return 0.0
    return sum(float(e.get(key, 0.0)) * w for e, w in zip(entries, weights, strict=True)) / total


def _distribution(entries: Sequence[dict[str, Any]], key: str) -> dict[str, float]:
    ios = [sum(int(e[d]["total_ios"]) for d in DIRECTIONS if d in e) for e in entries]
    labels: list[str] = []
    for e in entries:
        labels.extend(k for k in e.get(key, {}) if k not in labels)
    return {k: _weighted([e.get(key, {}) for e in entries], k, ios) for k in labels}


def all_clients(entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """fio's "All clients" entry: every entry summed (the hostname and port of the last client, as fio)."""
    last = entries[-1]
    out: dict[str, Any] = {"jobname": "All clients", "groupid": last["groupid"], "error": 0}
    out["error"] = max(int(e.get("error", 0)) for e in entries)
    for d in DIRECTIONS:
        out[d] = _direction([e[d] for e in entries if d in e])
    syncs = [e["sync"] for e in entries if "sync" in e]
    sync_ios = sum(int(s["total_ios"]) for s in syncs)
    out["sync"] = {"total_ios": sync_ios, "lat_ns": _pool([s["lat_ns"] for s in syncs])}
    runtimes = [float(e.get("job_runtime", 0)) for e in entries]
    out["job_runtime"] = int(sum(runtimes))
    out["usr_cpu"] = _weighted(entries, "usr_cpu", runtimes)
    out["sys_cpu"] = _weighted(entries, "sys_cpu", runtimes)
    for key in ("ctx", "majf", "minf"):
        out[key] = sum(int(e.get(key, 0)) for e in entries)
    for key in ("iodepth_level", "iodepth_submit", "iodepth_complete"):
        out[key] = _distribution(entries, key)
    for key, _ in _DIST_KEYS:
        out[key] = _distribution(entries, key)
    out["hostname"] = last.get("hostname", "")
    out["port"] = last.get("port", 0)
    out["iolens"] = {"entries": len(entries)}
    return out


def _lat_line(name: str, lat: dict[str, Any]) -> str:
    unit, div = fio_report.latency_unit(int(lat["min"]), int(lat["max"]))
    low = fio_report.fio_number(int(lat["min"]) // div, False, digits=6)
    high = fio_report.fio_number(int(lat["max"]) // div, False, digits=6)
    avg, sd = lat["mean"] / div, lat["stddev"] / div
    return f"    {name} ({unit}): min={low}, max={high}, avg={avg:5.2f}, stdev={sd:5.2f}"


def all_clients_text(entry: dict[str, Any]) -> list[str]:
    """The "All clients" block as fio prints it in client mode: the name line, each direction's IOPS,
    bandwidth, slat/clat/lat, the latency distribution and the CPU (no percentiles, as fio)."""
    err = entry.get("error", 0)
    lines = [f"All clients: (groupid={entry['groupid']}, jobs={entry['iolens']['entries']}): err={err:2d}:"]
    for d in DIRECTIONS:
        x = entry[d]
        if not x["total_ios"]:
            continue
        bw = f"{fio_report.fio_rate(x['bw_bytes'])} ({fio_report.fio_rate(x['bw_bytes'], False)})"
        amount = fio_report.fio_bytes(x["io_bytes"])
        iops = fio_report.fio_number(x["iops"], False)
        lines.append(f"  {d}: IOPS={iops}, BW={bw}({amount}/{x['runtime']}msec)")
        for key, name in (("slat_ns", "slat"), ("clat_ns", "clat"), ("lat_ns", " lat")):
            if x[key]["N"]:
                lines.append(_lat_line(name, x[key]))
    for key, unit in _DIST_KEYS:
        items = [f"{label}={pct:3.2f}%" for label, pct in entry[key].items() if pct > 0]
        for i in range(0, len(items), 5):
            lines.append(f"  lat ({unit})   : " + ", ".join(items[i : i + 5]))
    lines.append(
        f"  cpu          : usr={entry['usr_cpu']:.2f}%, sys={entry['sys_cpu']:.2f}%, ctx={entry['ctx']}, "
        f"majf={entry['majf']}, minf={entry['minf']}"
    )
    return lines


def client_stats(per_client: Sequence[tuple[dict[str, Any], str, int]]) -> list[dict[str, Any]]:
    """fio's client_stats: each client's entries (its fio-shaped document's `jobs`) with the client's
    hostname and port, in the clients' order, then "All clients" when more than one entry came in."""
    out: list[dict[str, Any]] = []
    for fio_doc, host, port in per_client:
        for e in fio_doc.get("jobs", []):
            # fio's client entries have no eta or elapsed.
            kept = {k: v for k, v in e.items() if k not in ("eta", "elapsed")}
            out.append({**kept, "hostname": host, "port": port})
    if len(out) > 1:
        out.append(all_clients(out))
    return out
