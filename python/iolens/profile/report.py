"""The report of a profiled job: its figures as one JSON-ready dict (documented in docs/profile.md, "The
JSON report"), and the same dict shown as text with rich. The text view reads nothing but the dict, so the
two never disagree.

How each figure is computed is in docs/profile.md; in short: data figures over regular files (records of
every process merged per path), metadata from the processes' totals, rates against the slowest process.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from rich import box
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from iolens.profile import advice as advice_rules
from iolens.profile.job import (
    FILE_CODE,
    LAYERED,
    Job,
    code_rows,
    data_rows,
    io_column,
    io_sum,
    load_jobs,
    opened_rows,
)
from iolens.profile.layers import posix_files
from iolens.profile.merge import combine_top
from iolens.profile.places import code_mask
from iolens.profile.pnetcdf_view import pnetcdf_view
from iolens.profile.reader import FILE_EXCLUDED, FILE_NOT_REGULAR, ProfileLogError
from iolens.profile.stack import stacks
from iolens.render import human_bytes

SCHEMA = "iolens-profile-report"
SCHEMA_VERSION = 1
TOP_FILES = 10
# Advice panels are at most this wide (narrower on a narrow terminal): sentences read badly wider.
PANEL_WIDTH = 110

# Process counters that are metadata operations (the summary's "metadata operations").
META_OPS = (
    "OPENS", "STATS", "SEEKS", "FSYNCS", "MKDIRS", "RMDIRS", "UNLINKS", "RENAMES", "READDIRS", "OPENDIRS",
    "ACCESSES", "TRUNCATES", "FALLOCATES", "CHMODS", "LINKS",
)  # fmt: skip

# The counters of each layer the report shows (Darshan's names, with the layer's prefix), besides its bytes
# and times: the STDIO layer as Darshan's STDIO module has it, the POSIX layer's operation counts.
LAYERS: dict[str, tuple[str, ...]] = {
    "posix": ("OPENS", "READS", "WRITES", "SEEKS", "STATS", "FSYNCS", "FDSYNCS", "DUPS", "FILENOS", "MMAPS"),
    "stdio": ("OPENS", "FDOPENS", "READS", "WRITES", "SEEKS", "FLUSHES"),
}

READ_BUCKETS = "POSIX_SIZE_READ_"
WRITE_BUCKETS = "POSIX_SIZE_WRITE_"


def _s(ns: int | float) -> float:
    return float(ns) / 1e9


def _iso(ns: int) -> str:
    return (
        datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    )


def _col_sum(job: Job, name: str, mask: np.ndarray) -> int:
    return int(job.files.column(name)[mask].sum(dtype=np.uint64)) if mask.any() else 0


def _bucket_label(suffix: str) -> str:
    """POSIX_SIZE_READ_10K_100K -> "10K-100K", ..._1G_PLUS -> "1G+"."""
    if suffix.endswith("_PLUS"):
        return suffix[: -len("_PLUS")] + "+"
    return suffix.replace("_", "-")


def access_sizes(job: Job, data: np.ndarray) -> dict[str, Any]:
    """The access size histogram: the schema's POSIX_SIZE_READ_* and POSIX_SIZE_WRITE_* counters, in
    schema order (Darshan's ten buckets in version 1)."""
    names = job.files.names
    suffixes = [n[len(READ_BUCKETS) :] for n in names if n.startswith(READ_BUCKETS)]
    for n in names:
        if n.startswith(WRITE_BUCKETS) and n[len(WRITE_BUCKETS) :] not in suffixes:
            suffixes.append(n[len(WRITE_BUCKETS) :])
    return {
        "buckets": [_bucket_label(s) for s in suffixes],
        "read": [_col_sum(job, READ_BUCKETS + s, data) for s in suffixes],
        "write": [_col_sum(job, WRITE_BUCKETS + s, data) for s in suffixes],
    }


def _common(job: Job, data: np.ndarray, stem: str) -> list[list[int]]:
    """The four most common values of a topv/topc set (e.g. access sizes) over all regular files."""
    ts = next((t for t in job.files_plan.top_sets if t.name == stem), None)
    if ts is None or not data.any():
        return []
    names = job.files.names
    rows = np.flatnonzero(data)
    vals = job.files.columns([names[i] for i in ts.values], rows).ravel()
    cnts = job.files.columns([names[i] for i in ts.counts], rows).ravel()
    v, c = combine_top(np.zeros(vals.size, dtype=np.intp), vals, cnts, 1, len(ts.values))
    return [[int(a), int(b)] for a, b in zip(v[0].tolist(), c[0].tolist(), strict=True) if b]


def access_patterns(job: Job, data: np.ndarray) -> dict[str, Any]:
    def total(name: str) -> int:
        return _col_sum(job, name, data)

    t = job.files
    return {
        "reads": total("POSIX_READS"),
        # the first read of each (thread, file): it follows no read, so it is never sequential
        "first_reads": int(t.first_reads[data].sum(dtype=np.uint64)) if data.any() else 0,
        "seq_reads": total("POSIX_SEQ_READS"),
        "consec_reads": total("POSIX_CONSEC_READS"),
        "writes": total("POSIX_WRITES"),
        "first_writes": int(t.first_writes[data].sum(dtype=np.uint64)) if data.any() else 0,
        "seq_writes": total("POSIX_SEQ_WRITES"),
        "consec_writes": total("POSIX_CONSEC_WRITES"),
        "rw_switches": total("POSIX_RW_SWITCHES"),
        "file_not_aligned": total("POSIX_FILE_NOT_ALIGNED"),
        "mem_not_aligned": total("POSIX_MEM_NOT_ALIGNED"),
        "fsyncs": total("POSIX_FSYNCS"),
        "fdsyncs": total("POSIX_FDSYNCS"),
        "common_access_sizes": _common(job, data, "POSIX_ACCESS"),
        "common_strides": _common(job, data, "POSIX_STRIDE"),
    }


def layer(job: Job, data: np.ndarray, name: str) -> dict[str, Any]:
    """One layer's figures over the regular files (docs/profile.md, "Layers"): its counters by Darshan's names
    (lower case, without the prefix), the files it touched, its bytes and times."""
    prefix = name.upper() + "_"
    t = job.files
    out: dict[str, Any] = {
        "files": int(
            np.count_nonzero(
                data
                & (
                    (t.column(prefix + "OPENS") > 0)
                    | (t.column(prefix + "READS") > 0)
                    | (t.column(prefix + "WRITES") > 0)
                )
            )
        )
    }
    out.update({c.lower(): _col_sum(job, prefix + c, data) for c in LAYERS[name]})
    for what in ("BYTES_READ", "BYTES_WRITTEN"):
        out[what.lower()] = _col_sum(job, prefix + what, data)
    for what in ("READ", "WRITE", "META"):
        out[f"{what.lower()}_time_s"] = _s(_col_sum(job, f"{prefix}F_{what}_TIME", data))
    return out


def _file_row(job: Job, i: int) -> dict[str, Any]:
    t = job.files
    mount = t.mount_of(i)

    def c(what: str) -> int:  # io_column's figure, of this row only
        return sum(int(t.column(name)[i]) for name in LAYERED[what])

    return {
        "path": t.paths[i],
        "mount": mount[0] if mount else None,
        "fs_type": mount[1] if mount else None,
        "processes": int(job.procs[i]),
        # A file of a job log reduced over all ranks: how many (None: the records of each process are here).
        "reduced_over_ranks": _reduced_ranks(job).get(t.paths[i]),
        "opens": c("opens"),
        "bytes_read": c("bytes_read"),
        "bytes_written": c("bytes_written"),
        "reads": c("reads"),
        "writes": c("writes"),
        "read_time_s": _s(c("read_time_ns")),
        "write_time_s": _s(c("write_time_ns")),
        "meta_time_s": _s(c("meta_time_ns")),
    }


def _reduced_files(job: Job, mask: np.ndarray) -> list[dict[str, Any]]:
    """The reduced files among the rows of mask (data, neither code nor excluded), most bytes first."""
    t = job.files
    moved = io_column(t, "bytes_read") + io_column(t, "bytes_written")
    rows = [(f, t.row_of.get(f.path)) for f in job.reduced]
    kept = [(f, int(moved[r])) for f, r in rows if r is not None and mask[r]]
    kept.sort(key=lambda fm: (-fm[1], fm[0].path))
    return [f.to_json() for f, _ in kept]


def _reduced_ranks(job: Job) -> dict[str, int]:
    return {f.path: f.ranks for f in job.reduced}


def _top(job: Job, key: np.ndarray, mask: np.ndarray, n: int = TOP_FILES) -> list[dict[str, Any]]:
    """The n rows with the largest key, ties by path: the same table whatever order the logs came in."""
    rows = np.flatnonzero(mask & (key > 0))
    values = key[rows].astype(np.float64)
    if rows.size > n:
        # Only the rows at or above the n-th largest value are sorted (100k files: no full sort).
        kth = np.partition(values, rows.size - n)[rows.size - n]
        rows, values = rows[values >= kth], values[values >= kth]
    paths = job.files.paths
    order = sorted(range(rows.size), key=lambda k: (-values[k], paths[rows[k]]))[:n]
    return [_file_row(job, int(rows[k])) for k in order]


def code_and_libraries(job: Job) -> dict[str, Any]:
    """The regular files of code and libraries, as one line's figures: kept apart from the data, or (with
    --all-files) counted in it too."""
    t = job.files
    regular = (t.flags & (FILE_NOT_REGULAR | FILE_EXCLUDED)) == 0
    rows = regular & (code_mask(t.paths) if job.all_files else code_rows(t))
    ns = sum(_col_sum(job, n, rows) for n in ("POSIX_F_READ_TIME", "POSIX_F_WRITE_TIME", "POSIX_F_META_TIME"))
    return {
        "files": int(np.count_nonzero(rows)),
        "bytes_read": _col_sum(job, "POSIX_BYTES_READ", rows),
        "bytes_written": _col_sum(job, "POSIX_BYTES_WRITTEN", rows),
        "reads": _col_sum(job, "POSIX_READS", rows),
        "writes": _col_sum(job, "POSIX_WRITES", rows),
        "io_time_s": _s(ns),
        "counted_as_data": job.all_files,
    }


def _io_dict(t: Any) -> dict[str, Any]:
    return {
        "files": t.files,
        "bytes_read": t.bytes_read,
        "bytes_written": t.bytes_written,
        "reads": t.reads,
        "writes": t.writes,
        "read_time_s": _s(t.read_time_ns),
        "write_time_s": _s(t.write_time_ns),
        "meta_time_s": _s(t.meta_time_ns),
        "io_time_s": _s(t.io_time_ns),
    }


def _spread(values: Sequence[float], ranks: Sequence[int]) -> dict[str, Any]:
    i = max(range(len(values)), key=lambda k: (values[k], -ranks[k]))
    return {
        "min": min(values),
        "mean": sum(values) / len(values),
        "max": values[i],
        "max_rank": ranks[i],
    }


def rank_imbalance(ranks: list[dict[str, Any]]) -> dict[str, Any] | None:
    if len(ranks) < 2:
        return None
    ids = [r["rank"] for r in ranks]
    t = _spread([r["io_time_s"] for r in ranks], ids)
    b = _spread([r["bytes_read"] + r["bytes_written"] for r in ranks], ids)
    return {
        "ranks": len(ranks),
        "io_time_s": t,
        "io_time_max_over_mean": t["max"] / t["mean"] if t["mean"] else None,
        "bytes": b,
        "bytes_max_over_mean": b["max"] / b["mean"] if b["mean"] else None,
    }


def _processes(job: Job) -> list[dict[str, Any]]:
    out = []
    for n in job.nodes:
        log, h = n.log, n.log.header
        out.append(
            {
                "log": log.name,
                "pid": h.pid,
                "ppid": h.ppid,
                "rank": h.rank if h.rank >= 0 else None,
                "hostname": h.hostname,
                "exe": h.exe,
                "cmdline": h.cmdline,
                "parent": job.nodes[n.parent].log.name if n.parent is not None else None,
                "relation": n.relation,
                "children": [job.nodes[c].log.name for c in n.children],
                "start": _iso(h.start_wall_ns),
                "start_wall_ns": h.start_wall_ns,
                "run_time_s": log.run_time_s,
                "threads": log.threads,
                "clean": log.clean,
                "exit_status": h.exit_status if log.clean else None,
                "killed_by_signal": log.killed_by_signal,
                "exit_signal": h.exit_signal if log.killed_by_signal else None,
                "exec_replaced": log.exec_replaced,
                "truncated": log.truncated,
                "trace_events": int(log.trace_array.size),
                "trace_dropped": h.trace_dropped,
                **{k: v for k, v in _io_dict(n.totals).items()},
            }
        )
    return out


def job_report(job: Job) -> dict[str, Any]:
    """Every figure of the report of one job (docs/profile.md, "The JSON report")."""
    t = job.files
    flags = t.flags
    data = data_rows(t)
    # iolens's own figures: the program's I/O once, its POSIX calls and its stdio calls (job.io_column)
    reads, writes = io_column(t, "reads") > 0, io_column(t, "writes") > 0
    not_regular = ((flags & FILE_NOT_REGULAR) != 0) & ((flags & FILE_EXCLUDED) == 0)
    proc = job.proc
    meta_ns = proc.get("META_TIME", 0)
    read_ns = io_sum(t, "read_time_ns", data)
    write_ns = io_sum(t, "write_time_ns", data)
    io_ns = read_ns + write_ns + meta_ns
    slowest = max((n.totals.io_time_ns for n in job.nodes), default=0)
    run_s = job.run_time_s
    moved = io_sum(t, "bytes_read", data) + io_sum(t, "bytes_written", data)
    summary = {
        "start": _iso(job.start_wall_ns),
        "start_wall_ns": job.start_wall_ns,
        "run_time_s": run_s,
        "processes": job.processes,
        "logs": len(job.logs),
        "ranks": job.rank_count,
        "hosts": len({log.header.hostname for log in job.logs}),
        "threads": sum(log.threads for log in job.logs),
        "files": {
            "total": int(np.count_nonzero(data)),
            "read_only": int(np.count_nonzero(data & reads & ~writes)),
            "write_only": int(np.count_nonzero(data & writes & ~reads)),
            "read_write": int(np.count_nonzero(data & reads & writes)),
            "no_data": int(np.count_nonzero(data & ~reads & ~writes)),
            "opened": int(np.count_nonzero(data & opened_rows(t))),
            "not_regular": int(np.count_nonzero(not_regular)),
            "excluded": int(np.count_nonzero(flags & FILE_EXCLUDED)),
        },
        "bytes_read": io_sum(t, "bytes_read", data),
        "bytes_written": io_sum(t, "bytes_written", data),
        "reads": io_sum(t, "reads", data),
        "writes": io_sum(t, "writes", data),
        "metadata_ops": sum(proc.get(n, 0) for n in META_OPS),
        "read_time_s": _s(read_ns),
        "write_time_s": _s(write_ns),
        "meta_time_s": _s(meta_ns),
        "io_time_s": _s(io_ns),
        "slowest_process_io_time_s": _s(slowest),
        "io_time_share": _s(slowest) / run_s if run_s > 0 else None,
        "io_rate_bytes_per_s": moved / _s(slowest) if slowest > 0 else None,
        "code_and_libraries": code_and_libraries(job),
        "not_regular": {
            "files": int(np.count_nonzero(not_regular)),
            "bytes_read": io_sum(t, "bytes_read", not_regular),
            "bytes_written": io_sum(t, "bytes_written", not_regular),
        },
        "untracked_ops": proc.get("UNTRACKED_OPS", 0),
        "errors": proc.get("ERRORS", 0),
        "unclean_logs": sum(1 for log in job.logs if not log.clean and not log.exec_replaced),
        "truncated_logs": sum(1 for log in job.logs if log.truncated),
        "trace_events": sum(int(log.trace_array.size) for log in job.logs),
        "trace_dropped": sum(log.header.trace_dropped for log in job.logs),
    }
    ranks = [{"rank": r.rank, "logs": r.logs, **_io_dict(r.totals)} for r in job.ranks]
    listed = (flags & (FILE_EXCLUDED | FILE_CODE)) == 0  # top files: neither excluded nor code
    report: dict[str, Any] = {
        "job_id": job.job_id,
        "summary": summary,
        "operations": {
            n: v for n, v in proc.items() if not n.endswith("_TIME") and not n.startswith("BYTES_")
        },
        # Each layer's totals (POSIX and STDIO calls, which the summary adds up), then the layers above POSIX
        # file by file over the same files (before the advice: its rules may read them).
        "layers": {
            **{name: layer(job, data, name) for name in LAYERS},
            "mpiio": [f.to_json() for f in job.mpiio],
            "hdf5": [f.to_json() for f in job.hdf5],
            "pnetcdf": [f.to_json() for f in job.pnetcdf],
        },
        "access_sizes": access_sizes(job, data),
        "access_patterns": access_patterns(job, data),
        "top_files_by_bytes": _top(job, io_column(t, "bytes_read") + io_column(t, "bytes_written"), listed),
        "top_files_by_time": _top(
            job,
            io_column(t, "read_time_ns") + io_column(t, "write_time_ns") + io_column(t, "meta_time_ns"),
            listed,
        ),
        "mounts": [
            {"mount": m.dir, "fs_type": m.fs_type, **_io_dict(m.totals), "meta_time_s": _s(m.meta_time_ns)}
            for m in job.mounts
        ],
        "ranks": ranks,
        "rank_imbalance": rank_imbalance(ranks),
        # A job log's files reduced over all ranks, with Darshan's per-rank spread (profile/joblog.py).
        "reduced_files": _reduced_files(job, listed & data),
        "processes": _processes(job),
        "roots": [job.nodes[i].log.name for i in job.roots],
    }
    # The bottom of each file's stack: what POSIX did to the files of the layers above (the lists).
    upper = [e["path"] for files in report["layers"].values() if isinstance(files, list) for e in files]
    report["layers"]["posix_files"] = posix_files(job, upper)
    report["advice"] = [a.to_json() for a in advice_rules.advise(job, report)]
    report["messages"] = list(job.messages)
    darshan = getattr(job, "darshan", None)  # a job read from a Darshan log (profile/darshan_log)
    if darshan is not None:
        report["darshan"] = darshan
    return report


def build(jobs: Sequence[Job], source: str) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "source": source,
        "jobs": [job_report(j) for j in jobs],
    }


# --- text ---------------------------------------------------------------------------------------------------


def _secs(s: float) -> str:
    return f"{s:.3f} s" if s < 100 else f"{s:.1f} s"


def _bytes(n: float) -> str:
    return human_bytes(n)


def _table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str | Text]]) -> Table:
    t = Table(
        title=title, box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0), show_edge=False,
        title_justify="left", title_style="bold",
    )  # fmt: skip
    for i, h in enumerate(headers):
        t.add_column(h, justify="left" if i == 0 else "right", no_wrap=i != 0, overflow="fold")
    for row in rows:
        # Text cells: paths and names are never read as rich markup.
        t.add_row(*(c if isinstance(c, Text) else Text(c) for c in row))
    return t


def _summary_table(s: dict[str, Any]) -> Table:
    f = s["files"]
    rows: list[tuple[str, str]] = [
        ("run time", f"{_secs(s['run_time_s'])}, began {s['start']}"),
        (
            "processes",
            f"{s['processes']} ({s['logs']} logs) on {s['hosts']} host(s), {s['ranks']} rank(s), "
            f"{s['threads']} thread(s) doing I/O",
        ),
        (
            "files",
            f"{f['total']}: {f['read_only']} read-only, {f['write_only']} write-only, "
            f"{f['read_write']} read-write, {f['no_data']} without data",
        ),
        ("bytes read", f"{_bytes(s['bytes_read'])} in {s['reads']} reads"),
        ("bytes written", f"{_bytes(s['bytes_written'])} in {s['writes']} writes"),
        ("metadata operations", str(s["metadata_ops"])),
        (
            "cumulative time",
            f"read {_secs(s['read_time_s'])}, write {_secs(s['write_time_s'])}, "
            f"metadata {_secs(s['meta_time_s'])}: I/O {_secs(s['io_time_s'])}",
        ),
    ]
    if s["io_time_share"] is not None:
        rows.append(
            (
                "I/O share of run time",
                f"{100 * s['io_time_share']:.1f}% (slowest process: {_secs(s['slowest_process_io_time_s'])})",
            )
        )
    if s["io_rate_bytes_per_s"] is not None:
        rows.append(
            ("I/O rate", f"{_bytes(s['io_rate_bytes_per_s'])}/s (bytes / slowest process's I/O time)")
        )
    code = s.get("code_and_libraries")
    if code and code["files"]:
        rows.append(("code and libraries", code_line(code)))
    nr = s["not_regular"]
    if nr["files"]:
        rows.append(
            (
                "not regular files",
                f"{nr['files']} (pipes, sockets, ttys, devices): {_bytes(nr['bytes_read'])} read, "
                f"{_bytes(nr['bytes_written'])} written (not in the figures above)",
            )
        )
    if f["excluded"]:
        rows.append(("excluded", f"{f['excluded']} path(s) (IOLENS_PROFILE_EXCLUDE)"))
    if s["untracked_ops"]:
        rows.append(("untracked calls", f"{s['untracked_ops']} (sockets, pipes, excluded paths)"))
    if s["trace_events"] or s["trace_dropped"]:
        dropped = f", {s['trace_dropped']} dropped" if s["trace_dropped"] else ""
        rows.append(("trace", f"{s['trace_events']} events{dropped}"))
    t = Table(box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 0))
    t.add_column(style="bold", no_wrap=True)
    t.add_column(overflow="fold")
    for k, v in rows:
        t.add_row(k, Text(v))
    return t


def code_line(code: dict[str, Any]) -> str:
    """ "152 files, 14.2 MiB read, 0.021 s (not in the figures above)": the code and libraries' line."""
    where = (
        "counted as data: --all-files"
        if code.get("counted_as_data")
        else "not in the figures above; --all-files counts them as data"
    )
    return (
        f"{code['files']} files, {_bytes(code['bytes_read'])} read in {code['reads']} reads, "
        f"{_secs(code['io_time_s'])} ({where})"
    )


def _operations(ops: dict[str, int]) -> Table | None:
    rows = [(name.lower(), str(v)) for name, v in ops.items() if v]
    if not rows:
        return None
    # Two name/count pairs per line keep a long list short.
    half = (len(rows) + 1) // 2
    pairs = [(*rows[i], *(rows[i + half] if i + half < len(rows) else ("", ""))) for i in range(half)]
    return _table("Operations (calls on any file)", ["operation", "count", "  operation", "count"], pairs)


def _layers_table(layers: dict[str, dict[str, Any]]) -> Table | None:
    """The I/O of each layer, a row each (Darshan's modules: POSIX calls, stdio calls); the summary's figures
    are their sums."""
    rows = [
        (
            name.upper(),
            str(lay["files"]),
            str(lay["opens"]),
            f"{lay['reads']} / {lay['writes']}",
            _bytes(lay["bytes_read"]),
            _bytes(lay["bytes_written"]),
            _secs(lay["read_time_s"]),
            _secs(lay["write_time_s"]),
            _secs(lay["meta_time_s"]),
        )
        for name, lay in layers.items()
        if lay["files"]
    ]
    if not rows:
        return None
    return _table(
        "Layers (regular files; the summary adds them up)",
        [
            "layer",
            "files",
            "opens",
            "reads / writes",
            "read",
            "written",
            "read time",
            "write time",
            "meta time",
        ],
        rows,
    )


def _stdio_line(stdio: dict[str, Any]) -> Text | None:
    if not stdio["files"]:
        return None
    return Text(
        f"STDIO: {stdio['fdopens']} fdopen(s), {stdio['seeks']} seek(s), {stdio['flushes']} flush(es); "
        "stdio's buffered data reaches the files through calls the C library makes itself, not counted again "
        "in POSIX",
        style="dim",
    )


def _sizes(sizes: dict[str, Any], patterns: dict[str, Any]) -> list[RenderableType]:
    out: list[RenderableType] = []
    if sum(sizes["read"]) + sum(sizes["write"]):
        rows = [
            (label, str(r), str(w))
            for label, r, w in zip(sizes["buckets"], sizes["read"], sizes["write"], strict=True)
        ]
        out.append(_table("Access sizes (POSIX)", ["size", "reads", "writes"], rows))
    p = patterns
    parts = []
    for kind in ("read", "write"):
        n = p[f"{kind}s"] - p[f"first_{kind}s"]  # those that follow another (of the file, by the thread)
        if n > 0:
            parts.append(
                f"{kind}s after the first: {100 * p[f'seq_{kind}' + 's'] / n:.0f}% sequential, "
                f"{100 * p[f'consec_{kind}' + 's'] / n:.0f}% consecutive"
            )
    if p["reads"] + p["writes"]:
        parts.append(
            f"{100 * p['file_not_aligned'] / (p['reads'] + p['writes']):.0f}% at unaligned file offsets"
        )
    if p["common_access_sizes"]:
        parts.append("most common sizes: " + ", ".join(f"{v} ({c}x)" for v, c in p["common_access_sizes"]))
    if parts:
        out.append(Text("; ".join(parts), style="dim"))
    return out


def _files_table(title: str, rows: list[dict[str, Any]]) -> Table:
    return _table(
        title,
        ["path", "fs", "procs", "read", "written", "read time", "write time", "meta time"],
        [
            (
                Text(r["path"]),
                r["fs_type"] or "?",
                f"all {r['reduced_over_ranks']}" if r.get("reduced_over_ranks") else str(r["processes"]),
                _bytes(r["bytes_read"]),
                _bytes(r["bytes_written"]),
                _secs(r["read_time_s"]),
                _secs(r["write_time_s"]),
                _secs(r["meta_time_s"]),
            )
            for r in rows
        ],
    )


def _rank_cell(sp: dict[str, Any], which: str) -> str:
    return f"{sp[which + '_rank']}: {_secs(sp[which + '_rank_time_s'])}, {_bytes(sp[which + '_rank_bytes'])}"


def _reduced_table(files: list[dict[str, Any]]) -> Table:
    """A job log's files reduced over all ranks: the spread of each layer (Darshan's fastest and slowest rank
    by the layer's I/O time on the file, their bytes, the standard deviation over the ranks)."""
    rows: list[tuple[str | Text, ...]] = []
    for f in files[:TOP_FILES]:
        for name in ("posix", "mpiio"):
            sp = f[name]
            if sp is None:
                continue
            rows.append(
                (
                    Text(f["path"]),
                    f"all {f['ranks']}",
                    name.upper(),
                    _rank_cell(sp, "fastest"),
                    _rank_cell(sp, "slowest"),
                    _secs(sp["variance_rank_time_s2"] ** 0.5),
                    _bytes(sp["variance_rank_bytes"] ** 0.5),
                )
            )
    return _table(
        "Files reduced over all ranks (one record each: the per-rank spread)"
        + (f", the first {TOP_FILES} of {len(files)}" if len(files) > TOP_FILES else ""),
        ["path", "ranks", "layer", "fastest rank", "slowest rank", "time sd", "bytes sd"],
        rows,
    )


def _mounts_table(mounts: list[dict[str, Any]]) -> Table:
    return _table(
        "Per mount (regular files)",
        ["mount", "fs", "files", "read", "written", "read time", "write time", "meta time"],
        [
            (
                Text(m["mount"]),
                m["fs_type"],
                str(m["files"]),
                _bytes(m["bytes_read"]),
                _bytes(m["bytes_written"]),
                _secs(m["read_time_s"]),
                _secs(m["write_time_s"]),
                _secs(m["meta_time_s"]),
            )
            for m in mounts
        ],
    )


def _ranks(ranks: list[dict[str, Any]], imb: dict[str, Any] | None) -> list[RenderableType]:
    out: list[RenderableType] = [
        _table(
            "Per rank",
            ["rank", "logs", "files", "read", "written", "I/O time"],
            [
                (
                    str(r["rank"]),
                    str(r["logs"]),
                    str(r["files"]),
                    _bytes(r["bytes_read"]),
                    _bytes(r["bytes_written"]),
                    _secs(r["io_time_s"]),
                )
                for r in ranks
            ],
        )
    ]
    if imb is not None:
        t, b = imb["io_time_s"], imb["bytes"]
        ratio_t = f"{imb['io_time_max_over_mean']:.2f}x" if imb["io_time_max_over_mean"] else "-"
        ratio_b = f"{imb['bytes_max_over_mean']:.2f}x" if imb["bytes_max_over_mean"] else "-"
        out.append(
            Text(
                f"I/O time per rank: min {_secs(t['min'])}, mean {_secs(t['mean'])}, max {_secs(t['max'])} "
                f"(rank {t['max_rank']}, {ratio_t} the mean); bytes per rank: max {_bytes(b['max'])} "
                f"(rank {b['max_rank']}, {ratio_b} the mean)",
                style="dim",
            )
        )
    return out


def _by_kind(ops: dict[str, dict[str, int]], what: str) -> str:
    return "/".join(
        str(ops[k][what]) for k in ("independent", "collective", "split collective", "non-blocking")
    )


def _mpiio_view(files: list[dict[str, Any]]) -> list[RenderableType]:
    """The MPI-IO layer, above the POSIX calls of the same files: per file its calls by kind, bytes, time,
    ranks, hints, and whether collective buffering shows (fewer ranks wrote POSIX than MPI-IO)."""
    if not files:
        return []
    rows = [
        [
            f["path"], str(len(f["ranks"])), f"{f['opens']['independent']}/{f['opens']['collective']}",
            _by_kind(f["ops"], "reads"), _by_kind(f["ops"], "writes"), _bytes(f["bytes_read"]),
            _bytes(f["bytes_written"]), _secs(f["read_time_s"] + f["write_time_s"] + f["meta_time_s"]),
            f"{f['posix']['writes']} ({len(f['posix']['writer_ranks'])})",
        ]
        for f in files
    ]  # fmt: skip
    out: list[RenderableType] = [
        _table(
            "MPI-IO layer (calls by kind: independent/collective/split/non-blocking; POSIX writes beneath)",
            [
                "file",
                "ranks",
                "opens i/c",
                "reads",
                "writes",
                "read",
                "written",
                "time",
                "POSIX writes (ranks)",
            ],
            rows,
        )
    ]
    for f in files:
        notes = []
        cb = f["collective_buffering"]
        for what in ("write", "read"):
            if cb and what in cb:
                e = cb[what]
                notes.append(
                    f"collective buffering: {e['mpiio_ranks']} ranks made collective MPI-IO {what}s, "
                    f"{e['posix_ranks']} (ranks {', '.join(map(str, e['aggregators']))}) "
                    f"made the POSIX {what}s"
                )
        if f["hints"]:
            shown = ", ".join(f"{k}={v}" for k, v in sorted(f["hints"].items()))
            notes.append(
                f"hints{' (rank differences: lowest rank shown)' if f['hints_differ'] else ''}: {shown}"
            )
        if notes:
            out.append(Text(f"{f['path']}: " + "; ".join(notes), style="dim", overflow="fold"))
    return out


def _selections(d: dict[str, Any]) -> str:
    """Reads and writes by the kind of their file selection: all/regular/irregular hyperslab/points."""
    sel = d["selections"]
    return "/".join(str(sel[k]) for k in ("all", "regular_hyperslab", "irregular_hyperslab", "points"))


def _hdf5_view(files: list[dict[str, Any]]) -> list[RenderableType]:
    """The HDF5 layer, above MPI-IO and POSIX: per dataset its calls, bytes, selections, chunking and
    whether its transfers were collective; per file its opens, driver and alignment."""
    if not files:
        return []
    rows = []
    for f in files:
        for d in f["datasets"]:
            chunks = "x".join(map(str, d["chunk_shape"])) if d["chunked"] else "contiguous"
            coll = d["collective"]
            rows.append(
                [
                    f"{f['path']}:{d['name']}", str(len(d["ranks"])), f"{d['opens']}",
                    f"{d['reads']} ({coll['reads']})", f"{d['writes']} ({coll['writes']})",
                    _bytes(d["bytes_read"]), _bytes(d["bytes_written"]), _selections(d), chunks,
                    _secs(d["read_time_s"] + d["write_time_s"] + d["meta_time_s"]),
                ]
            )  # fmt: skip
    out: list[RenderableType] = []
    if rows:
        out.append(
            _table(
                "HDF5 datasets (reads, writes: all (collective); selections: all/regular/irregular/points)",
                [
                    "dataset",
                    "ranks",
                    "opens",
                    "reads",
                    "writes",
                    "read",
                    "written",
                    "selections",
                    "chunks",
                    "time",
                ],
                rows,
            )  # fmt: skip
        )
    for f in files:
        driver = "MPI-IO driver" if f["use_mpiio"] else "non-MPI driver"
        align = (
            f"alignment {f['alignment']} (threshold {f['align_threshold']})"
            if f["alignment"] > 1
            else "unaligned"
        )
        fs = f" on {f['fs_type']}" if f["fs_type"] else ""
        out.append(
            Text(
                f"HDF5 file {f['path']}{fs}: {f['opens']} opens ({f['creates']} creates), "
                f"{f['flushes']} flushes, {f['closes']} closes, {driver}, {align}, ranks {len(f['ranks'])}, "
                f"meta {_secs(f['meta_time_s'])}",
                style="dim",
                overflow="fold",
            )
        )
    return out


def stack_view(layers: dict[str, Any]) -> list[RenderableType]:
    """Each file of the layers above POSIX with its layers stacked (profile/stack.py), and the sentence
    saying what its writes and reads became beneath and whether collective buffering happened."""
    out: list[RenderableType] = []
    for st in stacks(layers):
        rows = [
            (Text(level.layer if i == 0 else "", style="bold"), Text(label), Text(value))
            for level in st.levels
            for i, (label, value) in enumerate(level.rows)
        ]
        t = _table(f"Layers of {st.path}", ["layer", "what", "figures"], rows)
        for column in t.columns[1:]:
            column.justify, column.no_wrap = "left", False
        out.append(t)
        if st.sentence:
            out.append(Text(st.sentence, overflow="fold"))
    return out


def _node_label(p: dict[str, Any]) -> Text:
    t = Text()
    name = os.path.basename(p["exe"]) or (p["cmdline"][0] if p["cmdline"] else "?")
    t.append(name, style="bold")
    t.append(f"  pid {p['pid']}")
    if p["relation"] == "exec":
        t.append(" (after exec)")
    if p["rank"] is not None:
        t.append(f"  rank {p['rank']}")
    t.append(f"  {p['hostname']}  {_secs(p['run_time_s'])}")
    t.append(f"  read {_bytes(p['bytes_read'])}, written {_bytes(p['bytes_written'])}")
    if p["exec_replaced"]:
        t.append("  exec'd", style="dim")
    elif p["killed_by_signal"]:
        t.append(f"  killed by signal {p['exit_signal']}", style="red")
    elif not p["clean"]:
        t.append("  did not end cleanly", style="yellow")
    elif p["exit_status"]:
        t.append(f"  exit {p['exit_status']}", style="yellow")
    if p["truncated"]:
        t.append("  log truncated", style="yellow")
    if p["cmdline"]:
        t.append(f"\n{shlex.join(p['cmdline'])}", style="dim")
    return t


def _tree(job: dict[str, Any]) -> Tree:
    procs = {p["log"]: p for p in job["processes"]}
    tree = Tree(Text("Processes", style="bold"), guide_style="dim")

    def add(parent: Tree, name: str) -> None:
        p = procs[name]
        branch = parent.add(_node_label(p))
        for child in p["children"]:
            add(branch, child)

    for root in job["roots"]:
        add(tree, root)
    return tree


def advice_panels(items: list[dict[str, Any]]) -> list[RenderableType]:
    """The advice of a job report: a panel per rule that fired (title, finding, suggestion)."""
    if not items:
        return [Text("Advice: no rule fired (thresholds in docs/profile.md).", style="dim")]
    out: list[RenderableType] = [Text("Advice", style="bold")]
    for a in items:
        body = Text(str(a.get("finding") or ""))
        body.append("\n" + str(a.get("suggestion") or ""), style="dim")
        title = str(a.get("title") or a.get("rule") or "")
        out.append(Panel(body, title=title, title_align="left", border_style="cyan", width=PANEL_WIDTH))
    return out


def job_view(job: dict[str, Any]) -> Group:
    s = job["summary"]
    head = Text(overflow="fold")
    head.append(f"iolens profile: job {job['job_id'] or '(no job id)'}", style="bold")
    if job["roots"]:
        first = next(p for p in job["processes"] if p["log"] == job["roots"][0])
        if first["cmdline"]:
            head.append(f"\ncommand: {shlex.join(first['cmdline'])}")
    parts: list[RenderableType] = [head, _summary_table(s)]
    layers = job.get("layers") or {}
    totals = {name: layers[name] for name in LAYERS if name in layers}
    lt = _layers_table(totals) if totals else None
    if lt is not None:
        parts.append(lt)
        line = _stdio_line(layers["stdio"]) if "stdio" in layers else None
        if line is not None:
            parts.append(line)
    ops = _operations(job["operations"])
    if ops is not None:
        parts.append(ops)
    parts.extend(_sizes(job["access_sizes"], job["access_patterns"]))
    if job["top_files_by_bytes"]:
        parts.append(_files_table("Top files by bytes", job["top_files_by_bytes"]))
    if job["top_files_by_time"]:
        parts.append(_files_table("Top files by time", job["top_files_by_time"]))
    if job["mounts"]:
        parts.append(_mounts_table(job["mounts"]))
    if job["ranks"]:
        parts.extend(_ranks(job["ranks"], job["rank_imbalance"]))
    if job.get("reduced_files"):
        parts.append(_reduced_table(job["reduced_files"]))
    parts.extend(pnetcdf_view(job.get("layers", {}).get("pnetcdf", []), _table, _bytes, _secs))
    parts.extend(_hdf5_view(job.get("layers", {}).get("hdf5", [])))
    parts.extend(_mpiio_view(job.get("layers", {}).get("mpiio", [])))
    parts.extend(stack_view(job.get("layers", {})))
    if job.get("darshan"):
        from iolens.profile.darshan_log.view import darshan_view

        parts.extend(darshan_view(job["darshan"], _table, _bytes, _secs))
    parts.append(_tree(job))
    parts.extend(advice_panels(job["advice"]))
    for m in job["messages"]:
        parts.append(Text(f"note: {m}", style="yellow"))
    return Group(*parts)


def print_report(report: dict[str, Any], console: Console) -> None:
    for i, job in enumerate(report["jobs"]):
        if i:
            console.print(Text(""))
        console.print(job_view(job))


# --- the command ------------------------------------------------------------------------------------------


def _load(source: str | Path | Sequence[Path], all_files: bool = False) -> list[Job]:
    """iolens logs, or one Darshan log (read as a job of its own: profile/darshan_log)."""
    from iolens.profile import darshan_log

    if isinstance(source, str | Path) and Path(source).is_file() and darshan_log.is_darshan_log(source):
        return [darshan_log.load_darshan_job(source, all_files=all_files)]
    return load_jobs(source if isinstance(source, str | Path) else list(source), all_files)


def report_command(
    source: str | Path | Sequence[Path],
    as_json: bool,
    out: Console,
    err: Callable[[str, int], int],
    all_files: bool = False,
) -> int:
    """`iolens profile report PATH [--json] [--all-files]`: 0, or err(message, status)'s status."""
    try:
        jobs = _load(source, all_files)
    except ProfileLogError as exc:
        return err(str(exc), 1)
    where = str(source) if isinstance(source, str | Path) else os.path.commonpath([str(p) for p in source])
    doc = build(jobs, where)
    if as_json:
        out.file.write(json.dumps(doc, indent=1) + "\n")
        out.file.flush()
    else:
        print_report(doc, out)
    return 0
