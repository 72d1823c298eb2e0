"""InfluxDB line protocol of sample records: one line per measured thing (a device, a process, a Lustre
counter …) and sample, `measurement,tag=v field=v,… TIMESTAMP_NS`, raw values as in the stream (integer
fields with the `i` suffix). Every line has a `host` tag. The measurements are listed in docs/monitor.md.

Escaping follows the protocol's table: a measurement escapes comma and space; tag keys, tag values and field
keys escape comma, equals sign and space; a string field value escapes double quote and backslash. What the
protocol cannot carry at all (a newline, any control character) or that its readers take differently (some
backslashes) is replaced by `\\xHH` before, as in the Prometheus labels (keytext.py), so one sample is
always exactly one line per measured thing and a value is the same key in both outputs. A value the
protocol cannot store (an integer outside the signed 64-bit range, a float that is NaN or infinite) is left
out of its line; a line left without a field is not written.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from iolens.monitor.common import Tree
from iolens.monitor.keytext import key_text

Row = tuple[str, dict[str, str], dict[str, Any]]
Commands = list[tuple[str, str, dict[str, int]]]

# What the protocol stores as an integer: a signed 64-bit value. A Lustre sumsq (an unsigned 64-bit counter)
# can be above it; written, it would make InfluxDB refuse the whole point.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


def _escape_key(text: str) -> str:
    """A tag key, tag value or field key: comma, equals sign and space escaped (the protocol's table)."""
    t = key_text(text)
    if "," in t or "=" in t or " " in t:
        t = t.replace(",", "\\,").replace("=", "\\=").replace(" ", "\\ ")
    return t


def _escape_measurement(text: str) -> str:
    """A measurement: comma and space escaped (an equals sign is an ordinary character there)."""
    return key_text(text).replace(",", "\\,").replace(" ", "\\ ")


def _field(value: Any) -> str | None:
    """A field value as the protocol writes it; None for a value it cannot hold (left out of the line)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}i" if INT_MIN <= value <= INT_MAX else None
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None  # no NaN or infinity in the protocol
    if isinstance(value, str):
        # Backslash and double quote escaped, which every reader unescapes alike; the same characters as in a
        # tag replaced first (key_text), so that a point stays one line.
        return '"' + key_text(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
    return None


def line(measurement: str, tags: dict[str, str], fields: dict[str, Any], ts_ns: int) -> str | None:
    """One line; None when there is no field to write."""
    parts = []
    for k, v in fields.items():
        f = _field(v)
        if f is not None:
            parts.append(f"{_escape_key(k)}={f}")
    if not parts:
        return None
    # Empty tag values are not allowed by the protocol: such tags are left out.
    tag_text = "".join(f",{_escape_key(k)}={_escape_key(v)}" for k, v in sorted(tags.items()) if v != "")
    return f"{_escape_measurement(measurement)}{tag_text} {','.join(parts)} {ts_ns}"


def _numbers(tree: Tree) -> dict[str, Any]:
    return {k: v for k, v in tree.items() if isinstance(v, int | float | str) and not isinstance(v, bool)}


def rows(data: Tree, pids: bool = True, commands: Commands | None = None) -> Iterator[Row]:
    """(measurement, tags, fields) for every source of a record's `data`; `commands`: the per-command process
    totals (proc_agg.py, measurement command_io), `pids`: also one proc_io line per process."""
    for dev, fields in data.get("diskstats", {}).items():
        yield "diskstats", {"device": dev}, _numbers(fields)
    for pid, fields in data.get("proc_io", {}).items() if pids else ():
        f = _numbers(fields)
        comm = str(f.pop("comm", ""))
        yield "proc_io", {"pid": pid, "comm": comm}, f
    for comm, job, totals in commands or ():
        yield "command_io", {"comm": comm, "job_id": job}, dict(totals)
    for cg, devices in data.get("cgroup_io", {}).items():
        for dev, fields in devices.items():
            yield "cgroup_io", {"cgroup": cg, "device": dev}, _numbers(fields)
    for kind, fields in data.get("pressure", {}).items():
        yield "pressure_io", {"kind": kind}, _numbers(fields)
    for name in ("meminfo", "loadavg", "stat"):
        if name in data:
            yield name, {}, _numbers(data[name])
    for mnt, m in data.get("mountstats", {}).items():
        tags = {"mountpoint": mnt, "export": str(m.get("export", ""))}
        yield "nfs_bytes", tags, _numbers(m.get("bytes", {}))
        yield "nfs_events", tags, _numbers(m.get("events", {}))
        xprt = dict(m.get("xprt", {}))
        proto = str(xprt.pop("protocol", ""))
        yield "nfs_xprt", {**tags, "protocol": proto}, _numbers(xprt)
        for op, fields in m.get("ops", {}).items():
            yield "nfs_ops", {**tags, "operation": op}, _numbers(fields)
    for param, entry in data.get("lustre", {}).items():
        yield from _lustre(param, entry)


def _lustre(param: str, entry: Tree) -> Iterator[Row]:
    base = {
        "param": param,
        "component": str(entry.get("component", "")),
        "target": str(entry.get("target", "")),
    }
    if "nid" in entry:
        base["nid"] = str(entry["nid"])
    kind = entry.get("kind")
    if kind == "stats":
        for name, c in entry.get("counters", {}).items():
            yield "lustre_stats", {**base, "counter": name}, _numbers(c)
    elif kind == "job_stats":
        for job_id, job in entry.get("jobs", {}).items():
            for name, c in job.get("counters", {}).items():
                fields = _numbers(c)
                for bucket, n in c.get("hist", {}).items():
                    fields[f"hist_{bucket}"] = n
                yield "lustre_job_stats", {**base, "job_id": job_id, "counter": name}, fields
    elif kind in ("rpc_stats", "brw_stats"):
        values = entry.get("values", {})
        if values:
            yield f"lustre_{kind}_values", base, _numbers(values)
        for title, table in entry.get("tables", {}).items():
            for bucket, row in table.get("buckets", {}).items():
                yield f"lustre_{kind}", {**base, "table": title, "bucket": bucket}, _numbers(row)


def lines(
    record: dict[str, Any], host: str, pids: bool = True, commands: Commands | None = None
) -> Iterator[str]:
    """The line-protocol lines of one sample record (rows() says what `pids` and `commands` are)."""
    # Sample times are kept to the microsecond; a float holds those exactly, not their nanoseconds.
    ts = int(round(float(record["time"]) * 1e6)) * 1000
    for measurement, tags, fields in rows(record.get("data", {}), pids, commands):
        text = line(measurement, {"host": host, **tags}, fields, ts)
        if text is not None:
            yield text
