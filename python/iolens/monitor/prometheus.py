"""The metrics of the latest sample, for Prometheus (the formats are in promtext.py, the HTTP server in
promhttp.py).

Linux sources use node_exporter's metric names and units (node_disk_read_bytes_total{device}, …,
node_pressure_io_waiting_seconds_total, node_load1, node_memory_Dirty_bytes, node_procs_blocked,
node_mountstats_nfs_*); Lustre is rendered by prom_lustre.py (iolens's names: lustre_exporter's style, and
real histograms for rpc_stats / brw_stats) or, with --prometheus-names lustre_exporter, by
prom_lustre_exporter.py (that exporter's exact names). /proc/<pid>/io and cgroup io.stat have no
node_exporter metric: they are iolens_command_* (per command, proc_agg.py), iolens_process_* (per process,
opt-in) and iolens_cgroup_io_*. The full list is in docs/monitor.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from iolens.monitor import prom_lustre, prom_lustre_exporter
from iolens.monitor.common import Tree
from iolens.monitor.mountstats import EVENTS
from iolens.monitor.promhttp import MetricsServer, parse_address
from iolens.monitor.promtext import CONTENT_TYPE, OPENMETRICS_TYPE, Exposition

__all__ = ["CONTENT_TYPE", "OPENMETRICS_TYPE", "NAMES", "Exposition", "MetricsServer", "build", "exposition",
           "parse_address"]  # fmt: skip

# --prometheus-names: whose names the Lustre metrics take.
NAMES = ("iolens", "lustre_exporter")


# --- Linux -------------------------------------------------------------------------------------------------

# diskstats field → (node_exporter name, kind, scale, help)
DISK = (
    ("reads_completed", "node_disk_reads_completed_total", "counter", 1, "Reads completed."),
    ("reads_merged", "node_disk_reads_merged_total", "counter", 1, "Adjacent reads merged."),
    ("read_bytes", "node_disk_read_bytes_total", "counter", 1, "Bytes read."),
    ("read_time_ms", "node_disk_read_time_seconds_total", "counter", 1e-3, "Seconds spent by all reads."),
    ("writes_completed", "node_disk_writes_completed_total", "counter", 1, "Writes completed."),
    ("writes_merged", "node_disk_writes_merged_total", "counter", 1, "Adjacent writes merged."),
    ("written_bytes", "node_disk_written_bytes_total", "counter", 1, "Bytes written."),
    ("write_time_ms", "node_disk_write_time_seconds_total", "counter", 1e-3, "Seconds spent by all writes."),
    ("ios_in_progress", "node_disk_io_now", "gauge", 1, "I/Os in progress now."),
    ("io_time_ms", "node_disk_io_time_seconds_total", "counter", 1e-3, "Seconds the device was busy."),
    ("weighted_io_time_ms", "node_disk_io_time_weighted_seconds_total", "counter", 1e-3,
     "Seconds spent doing I/Os, weighted by the I/Os in progress."),
    ("discards_completed", "node_disk_discards_completed_total", "counter", 1, "Discards completed."),
    ("discards_merged", "node_disk_discards_merged_total", "counter", 1, "Adjacent discards merged."),
    ("sectors_discarded", "node_disk_discarded_sectors_total", "counter", 1, "512-byte sectors discarded."),
    ("discard_time_ms", "node_disk_discard_time_seconds_total", "counter", 1e-3, "Seconds of all discards."),
    ("flushes_completed", "node_disk_flush_requests_total", "counter", 1, "Flush requests completed."),
    ("flush_time_ms", "node_disk_flush_requests_time_seconds_total", "counter", 1e-3,
     "Seconds spent by all flush requests."),
)  # fmt: skip

MEMINFO = {
    "dirty_bytes": "node_memory_Dirty_bytes",
    "writeback_bytes": "node_memory_Writeback_bytes",
    "nfs_unstable_bytes": "node_memory_NFS_Unstable_bytes",
    "writeback_tmp_bytes": "node_memory_WritebackTmp_bytes",
}
PROC_IO = (
    ("rchar", "iolens_process_read_chars_total", "Characters read through read() and similar calls."),
    ("wchar", "iolens_process_written_chars_total", "Characters written through write() and similar calls."),
    ("syscr", "iolens_process_read_syscalls_total", "Read system calls."),
    ("syscw", "iolens_process_write_syscalls_total", "Write system calls."),
    ("read_bytes", "iolens_process_read_bytes_total", "Bytes the process had fetched from storage."),
    ("write_bytes", "iolens_process_written_bytes_total", "Bytes the process had sent to storage."),
    ("cancelled_write_bytes", "iolens_process_cancelled_write_bytes_total",
     "Written bytes that never went to storage (truncated before writeback)."),
)  # fmt: skip
CGROUP_IO = (
    ("rbytes", "iolens_cgroup_io_read_bytes_total", "Bytes the cgroup read from the device."),
    ("wbytes", "iolens_cgroup_io_written_bytes_total", "Bytes the cgroup wrote to the device."),
    ("rios", "iolens_cgroup_io_reads_total", "Read I/Os of the cgroup on the device."),
    ("wios", "iolens_cgroup_io_writes_total", "Write I/Os of the cgroup on the device."),
    ("dbytes", "iolens_cgroup_io_discarded_bytes_total", "Bytes the cgroup discarded on the device."),
    ("dios", "iolens_cgroup_io_discards_total", "Discard I/Os of the cgroup on the device."),
)  # fmt: skip
NFS_BYTES = (
    ("normal_read_bytes", "read_bytes_total", "Bytes read by applications through read()."),
    ("normal_write_bytes", "write_bytes_total", "Bytes written by applications through write()."),
    ("direct_read_bytes", "direct_read_bytes_total", "Bytes read with O_DIRECT."),
    ("direct_write_bytes", "direct_write_bytes_total", "Bytes written with O_DIRECT."),
    ("server_read_bytes", "total_read_bytes_total", "Bytes read from the server."),
    ("server_write_bytes", "total_write_bytes_total", "Bytes written to the server."),
    ("read_pages", "read_pages_total", "Pages read through mmap."),
    ("write_pages", "write_pages_total", "Pages written through mmap."),
)  # fmt: skip
# Our event names → node_exporter's (congestion_wait has none).
NFS_EVENTS = {
    "inode_revalidate": "inode_revalidate", "dentry_revalidate": "dnode_revalidate",
    "data_invalidate": "data_invalidate", "attr_invalidate": "attribute_invalidate",
    "vfs_open": "vfs_open", "vfs_lookup": "vfs_lookup", "vfs_access": "vfs_access",
    "vfs_update_page": "vfs_update_page", "vfs_read_page": "vfs_read_page",
    "vfs_read_pages": "vfs_read_pages", "vfs_write_page": "vfs_write_page",
    "vfs_write_pages": "vfs_write_pages", "vfs_getdents": "vfs_getdents", "vfs_setattr": "vfs_setattr",
    "vfs_flush": "vfs_flush", "vfs_fsync": "vfs_fsync", "vfs_lock": "vfs_lock",
    "vfs_release": "vfs_file_release", "setattr_trunc": "truncation", "extend_write": "write_extension",
    "silly_rename": "silly_rename", "short_read": "short_read", "short_write": "short_write",
    "delay": "jukebox_delay", "pnfs_read": "pnfs_read", "pnfs_write": "pnfs_write",
}  # fmt: skip
assert set(NFS_EVENTS) <= set(EVENTS)
NFS_OPS = (
    ("ops", "requests_total", 1, "Requests of the operation."),
    ("transmissions", "transmissions_total", 1, "RPC transmissions of the operation (retries included)."),
    ("major_timeouts", "major_timeouts_total", 1, "Major timeouts of the operation."),
    ("bytes_sent", "sent_bytes_total", 1, "Bytes sent for the operation, RPC headers included."),
    ("bytes_received", "received_bytes_total", 1, "Bytes received for the operation, RPC headers included."),
    ("queue_ms", "queue_time_seconds_total", 1e-3, "Seconds requests waited in the queue before being sent."),
    ("rtt_ms", "response_time_seconds_total", 1e-3, "Seconds from sending a request to its reply."),
    ("execute_ms", "request_time_seconds_total", 1e-3, "Seconds from queueing a request to its completion."),
)  # fmt: skip
NFS_XPRT = (
    ("bind_count", "bind_total", "counter", "Times the transport was bound anew."),
    ("connect_count", "connect_total", "counter", "Connections made to the server."),
    ("idle_time", "idle_time_seconds", "gauge", "Seconds since the mount last had RPC traffic."),
    ("sends", "sends_total", "counter", "RPC requests sent."),
    ("recvs", "receives_total", "counter", "RPC replies received."),
    ("bad_xids", "bad_transaction_ids_total", "counter", "Replies with an unknown transaction id."),
    ("req_u", "backlog_queue_total", "counter", "Sum of the backlog queue length over requests."),
    ("max_slots", "maximum_rpc_slots", "gauge", "Most RPC slots ever in use at once."),
    ("sending_u", "sending_queue_total", "counter", "Sum of the sending queue length over requests."),
    ("pending_u", "pending_queue_total", "counter", "Sum of the pending queue length over requests."),
)  # fmt: skip


def _diskstats(e: Exposition, data: Tree) -> None:
    for key, name, kind, scale, help_ in DISK:
        for dev, fields in data.items():
            v = fields.get(key)
            if v is not None:
                e.add(name, kind, help_, {"device": dev}, v * scale if scale != 1 else v)


def _pressure(e: Exposition, data: Tree) -> None:
    some, full = data.get("some", {}), data.get("full", {})
    if "total_us" in some:
        e.add(
            "node_pressure_io_waiting_seconds_total",
            "counter",
            "Total time in seconds that processes have waited due to IO congestion",
            {},
            some["total_us"] / 1e6,
        )
    if "total_us" in full:
        e.add(
            "node_pressure_io_stalled_seconds_total",
            "counter",
            "Total time in seconds no process could make progress due to IO congestion",
            {},
            full["total_us"] / 1e6,
        )


def _loadavg(e: Exposition, data: Tree) -> None:
    for k in ("load1", "load5", "load15"):
        if k in data:
            e.add(f"node_{k}", "gauge", f"{k[4:]}m load average.", {}, data[k])


def _meminfo(e: Exposition, data: Tree) -> None:
    for key, name in MEMINFO.items():
        if key in data:
            e.add(name, "gauge", f"Memory information field {name[12:-6]}_bytes.", {}, data[key])


def _stat(e: Exposition, data: Tree) -> None:
    if "procs_blocked" in data:
        e.add(
            "node_procs_blocked",
            "gauge",
            "Number of processes blocked waiting for I/O to complete.",
            {},
            data["procs_blocked"],
        )
    if "procs_running" in data:
        e.add(
            "node_procs_running", "gauge", "Number of processes in runnable state.", {}, data["procs_running"]
        )
    if "processes" in data:
        e.add("node_forks_total", "counter", "Total number of forks.", {}, data["processes"])
    if "ctxt" in data:
        e.add("node_context_switches_total", "counter", "Total number of context switches.", {}, data["ctxt"])


def _proc_io(e: Exposition, data: Tree) -> None:
    for key, name, help_ in PROC_IO:
        for pid, fields in data.items():
            if key in fields:
                e.add(name, "counter", help_, {"pid": pid, "comm": str(fields.get("comm", ""))}, fields[key])


def _commands(e: Exposition, series: list[tuple[str, str, dict[str, int]]]) -> None:
    """iolens_command_*_total{comm[,jobid]}: per-command totals (proc_agg.py: the top N and `_other`)."""
    for key, name, help_ in PROC_IO:
        for comm, job, totals in series:
            labels = {"comm": comm, "jobid": job} if job else {"comm": comm}
            e.add(name.replace("_process_", "_command_", 1), "counter", f"{help_[:-1]}, per command.", labels,
                  totals.get(key))  # fmt: skip


def _cgroup_io(e: Exposition, data: Tree) -> None:
    for key, name, help_ in CGROUP_IO:
        for cg, devices in data.items():
            for dev, fields in devices.items():
                if key in fields:
                    e.add(name, "counter", help_, {"cgroup": cg, "device": dev}, fields[key])


def _mountstats(e: Exposition, data: Tree) -> None:
    p = "node_mountstats_nfs_"
    for mnt, m in data.items():
        proto = str(m.get("xprt", {}).get("protocol", ""))
        base = {
            "export": str(m.get("export", "")),
            "mountpoint": mnt,
            "protocol": proto,
            "mountaddr": str(m.get("mountaddr", "")),
        }
        if "age_s" in m:
            e.add(
                p + "age_seconds_total", "counter", "The age of the NFS mount in seconds.", base, m["age_s"]
            )
        for key, name, help_ in NFS_BYTES:
            if key in m.get("bytes", {}):
                e.add(p + name, "counter", help_, base, m["bytes"][key])
        for key, name in NFS_EVENTS.items():
            if key in m.get("events", {}):
                e.add(f"{p}event_{name}_total", "counter", f"NFS event count: {key}.", base, m["events"][key])
        for key, name, kind, help_ in NFS_XPRT:
            if key in m.get("xprt", {}):
                e.add(p + "transport_" + name, kind, help_, base, m["xprt"][key])
        for op, fields in m.get("ops", {}).items():
            labels = {**base, "operation": op}
            for key, name, scale, help_ in NFS_OPS:
                if key in fields:
                    v = fields[key]
                    e.add(p + "operations_" + name, "counter", help_, labels, v * scale if scale != 1 else v)


RENDERERS: dict[str, Callable[[Exposition, Tree], None]] = {
    "diskstats": _diskstats,
    "pressure": _pressure,
    "loadavg": _loadavg,
    "meminfo": _meminfo,
    "stat": _stat,
    "proc_io": _proc_io,
    "cgroup_io": _cgroup_io,
    "mountstats": _mountstats,
}


def exposition(record: dict[str, Any] | None, *args: Any, **kwargs: Any) -> str:
    """The Prometheus text (0.0.4) of one sample record (the latest): build()'s families, as text."""
    return build(record, *args, **kwargs).text()


def build(
    record: dict[str, Any] | None,
    sources: dict[str, Any] | None = None,
    jobs: bool = False,
    samples: int = 0,
    names: str = "iolens",
    pids: bool = True,
    commands: list[tuple[str, str, dict[str, int]]] | None = None,
) -> Exposition:
    """The metric families of one sample record; `names` is iolens or lustre_exporter (the Lustre names),
    `commands` the per-command process series (proc_agg.py), `pids` whether the per-process ones too."""
    e = Exposition()
    data = (record or {}).get("data", {})
    for name, reading in data.items():
        if name == "lustre":
            if names == "lustre_exporter":
                prom_lustre_exporter.render(e, reading, jobs)
            else:
                prom_lustre.render(e, reading, jobs)
        elif name == "proc_io" and not pids:
            continue
        elif name in RENDERERS:
            RENDERERS[name](e, reading)
    if commands:
        _commands(e, commands)
    for name in sources or {}:
        e.add(
            "iolens_monitor_source_up",
            "gauge",
            "1 when the source was read at the last sample.",
            {"source": name},
            1 if name in data else 0,
        )
    for name, info in (sources or {}).items():
        if isinstance(info, dict) and info.get("unreadable"):
            e.add(
                "iolens_monitor_unreadable_parts",
                "gauge",
                "Parts of the source that could not be read (a Lustre parameter or root: permission denied).",
                {"source": name},
                len(info["unreadable"]),
            )
    for name, n in (record or {}).get("skipped_lines", {}).items():
        e.add(
            "iolens_monitor_skipped_lines_total",
            "counter",
            "Malformed lines skipped by the parsers.",
            {"source": name},
            n,
        )
    e.add("iolens_monitor_samples_total", "counter", "Samples taken since the monitor started.", {}, samples)
    if record is not None:
        e.add(
            "iolens_monitor_last_sample_timestamp_seconds",
            "gauge",
            "When the values were read (Unix time).",
            {},
            record.get("time"),
        )
    return e
