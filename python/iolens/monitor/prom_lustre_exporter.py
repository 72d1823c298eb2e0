"""Lustre in the names, types and labels of lustre_exporter (`--prometheus-names lustre_exporter`).

Matched against GSI-HPC/lustre_exporter at commit 59a16042 (after tag v2.1.9; the maintained fork of
HewlettPackard/lustre_exporter, whose metric names it keeps), so that its Grafana dashboards and the
alerts written for it work on iolens's endpoint. Only what that exporter defines is written here: its
`component` values (`ost` for obdfilter and the OSTs' osd, `mdt`, `client` for llite, osc and mdc), its
label sets, its per-table counters with a `size` label (the printed bucket in bytes: `4K` → `4096`), its
fixed lists of operations, and its rule of leaving out job counters that are zero. Where it reads a file in
a way that is only a by-product of its parser, the result is kept too, because its dashboards show that
(an mdc's `lustre_rpcs_in_flight` is the first `rpcs in flight` table of the file, the modify RPCs since
Lustre 2.11, with operation="read"). docs/monitor.md has the table of what maps to what; the names are
checked against tests/data/lustre_exporter/metrics.txt.
"""

from __future__ import annotations

from iolens.monitor.common import Tree
from iolens.monitor.promtext import Exposition

# The operations lustre_exporter reads from stats / md_stats, and from job_stats.
STATS_OPS = (
    "open", "close", "getattr", "setattr", "getxattr", "setxattr", "statfs", "seek", "readdir", "truncate",
    "alloc_inode", "removexattr", "unlink", "inode_permission", "create", "get_info", "set_info_async",
    "connect", "ping",
)  # fmt: skip
JOB_OPS = (
    "open", "close", "mknod", "link", "unlink", "mkdir", "rmdir", "rename", "getattr", "setattr", "getxattr",
    "setxattr", "statfs", "sync", "samedir_rename", "crossdir_rename", "punch", "destroy", "create",
    "get_info", "set_info", "quotactl",
)  # fmt: skip
# (counter field, name part, kind, what)
RW_FIELDS = (
    ("samples", "samples_total", "counter", "{dir}s recorded"),
    ("min", "minimum_size_bytes", "gauge", "smallest {dir} in bytes"),
    ("max", "maximum_size_bytes", "gauge", "largest {dir} in bytes"),
    ("sum", "bytes_total", "counter", "bytes of all {dir}s"),
)
# Table title → (metric, kind, what): brw_stats of OSTs.
BRW_TABLES = {
    "pages per bulk r/w": ("lustre_pages_per_bulk_rw_total", "counter", "Bulk RPCs by pages per RPC (size)."),
    "discontiguous pages": (
        "lustre_discontiguous_pages_total", "counter", "Bulk RPCs by discontiguous pages in them (size).",
    ),
    "disk I/Os in flight": ("lustre_disk_io", "gauge", "Disk I/Os by the I/Os in flight at their start."),
    "I/O time (1/1000s)": (
        "lustre_io_time_milliseconds_total", "counter", "Disk I/Os by their time in milliseconds (size).",
    ),
    "disk I/O size": ("lustre_disk_io_total", "counter", "Disk I/Os by their size in bytes (size)."),
}  # fmt: skip


def _component(entry: Tree) -> str | None:
    """lustre_exporter's component of an entry, None for what it does not read."""
    comp, file, target = entry.get("component"), entry.get("file"), str(entry.get("target", ""))
    if "nid" in entry:
        return None
    if comp == "ost" and file in ("stats", "job_stats", "brw_stats"):
        return "ost"
    if comp == "osd" and file == "brw_stats" and "-OST" in target:
        return "ost"
    if comp == "mdt" and file in ("md_stats", "job_stats"):
        return "mdt"
    if (comp == "client" and file == "stats") or (comp in ("osc", "mdc") and file == "rpc_stats"):
        return "client"
    return None


def _rw(e: Exposition, prefix: str, labels: dict[str, str], counters: Tree, skip_zero: bool) -> None:
    for direction in ("read", "write"):
        c = counters.get(f"{direction}_bytes")
        if c is None:
            continue
        for key, part, kind, what in RW_FIELDS:
            value = c.get(key)
            if value is None or (skip_zero and value == 0):
                continue
            help_ = what.format(dir=direction).capitalize() + "."
            e.add(f"{prefix}{direction}_{part}", kind, help_, labels, value)


def _ops(e: Exposition, name: str, labels: dict[str, str], counters: Tree, ops: tuple[str, ...]) -> None:
    for op in ops:
        samples = counters.get(op, {}).get("samples")
        if samples is None or (name == "lustre_job_stats_total" and samples == 0):
            continue
        e.add(name, "counter", "Operations recorded.", {**labels, "operation": op}, samples)


def _table(
    e: Exposition,
    name: str,
    kind: str,
    help_: str,
    labels: dict[str, str],
    table: Tree,
    extra: dict[str, str],
) -> None:
    for bucket, row in table.get("buckets", {}).items():
        size = str(row["bytes"]) if "bytes" in row else bucket
        for op, count in row.items():
            if op == "bytes":
                continue
            # A one-column table (mdc's modify RPCs) is read as the read column.
            op_label = "read" if op == "modify" else op
            e.add(name, kind, help_, {**labels, "operation": op_label, "size": size, **extra}, count)


def _first_rpcs_in_flight(tables: Tree) -> Tree | None:
    for title, table in tables.items():
        if title in ("rpcs in flight", "modify rpcs in flight"):
            return table
    return None


def render(e: Exposition, data: Tree, jobs: bool) -> None:
    """The Lustre reading (`{PARAM: ENTRY}`) in lustre_exporter's names; per-job series only when `jobs`."""
    for entry in data.values():
        comp = _component(entry)
        if comp is None:
            continue
        labels = {"component": comp, "target": str(entry.get("target", ""))}
        file = entry.get("file")
        if file == "stats":
            counters = entry.get("counters", {})
            _rw(e, "lustre_", labels, counters, skip_zero=False)
            _ops(e, "lustre_stats_total", labels, counters, STATS_OPS)
        elif file == "md_stats":
            _ops(e, "lustre_stats_total", labels, entry.get("counters", {}), STATS_OPS)
        elif file == "job_stats" and jobs:
            for job_id, job in entry.get("jobs", {}).items():
                jl = {**labels, "jobid": job_id}
                counters = job.get("counters", {})
                if comp == "ost":
                    _rw(e, "lustre_job_", jl, counters, skip_zero=True)
                _ops(e, "lustre_job_stats_total", jl, counters, JOB_OPS)
        elif file == "brw_stats":
            for title, (name, kind, help_) in BRW_TABLES.items():
                table = entry.get("tables", {}).get(title)
                if table is not None:
                    _table(e, name, kind, help_, labels, table, {})
        elif file == "rpc_stats":
            tables = entry.get("tables", {})
            device = str(entry.get("component"))  # the exporter's `type`: the directory, osc or mdc
            if device == "osc" and "pages per rpc" in tables:
                _table(e, "lustre_pages_per_rpc_total", "counter", "RPCs by pages per RPC (size).", labels,
                       tables["pages per rpc"], {})  # fmt: skip
            rif = _first_rpcs_in_flight(tables)
            if rif is not None:
                _table(e, "lustre_rpcs_in_flight", "gauge", "RPCs by the RPCs in flight when sent (size).",
                       labels, rif, {"type": device})  # fmt: skip
            if device == "osc" and "offset" in tables:
                _table(e, "lustre_rpcs_offset", "gauge", "RPCs by their offset in pages (size).", labels,
                       tables["offset"], {})  # fmt: skip
