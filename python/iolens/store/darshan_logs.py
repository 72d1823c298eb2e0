"""Darshan logs as profile records, read with the `darshan` Python package (pip install 'iolens[darshan]').

Darshan's POSIX counters have iolens's names (docs/profile-log.md uses Darshan's where the meaning is the
same); they are mapped onto iolens's units: times (POSIX_F_*_TIME, seconds in Darshan) become integer ns,
timestamps (seconds since the job started) become ns + 1 (0: never), as the iolens runtime writes them.
Records of one file by several ranks are merged as iolens merges processes (sums; MAX_* the largest; start
timestamps the earliest, end timestamps the latest); a shared record (rank -1) is Darshan's own reduction.
The stored document has the shape of iolens's JSON profile report for what Darshan records (summary,
operations, access sizes and patterns, top files, mounts; no advice), with `origin` "darshan" and, for a log
with DXT tracing, a `timeline`.

The darshan library can crash on a damaged log (it did on a truncated one, after printing errors), so the
log is read in a child process: a crash or an error line from the library refuses the log.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from iolens.store.profiles import TIMELINE_BINS, small_ios
from iolens.store.records import ProfileFile, ProfileRecord, sha256

BUCKETS = (
    "0_100",
    "100_1K",
    "1K_10K",
    "10K_100K",
    "100K_1M",
    "1M_4M",
    "4M_10M",
    "10M_100M",
    "100M_1G",
    "1G_PLUS",
)
# Darshan counters that are not counts to add up.
SKIP = frozenset({"POSIX_MODE", "POSIX_RENAMED_FROM", "POSIX_FASTEST_RANK", "POSIX_FASTEST_RANK_BYTES",
                  "POSIX_SLOWEST_RANK", "POSIX_SLOWEST_RANK_BYTES", "POSIX_F_FASTEST_RANK_TIME",
                  "POSIX_F_SLOWEST_RANK_TIME", "POSIX_F_VARIANCE_RANK_TIME", "POSIX_F_VARIANCE_RANK_BYTES",
                  "POSIX_MEM_ALIGNMENT", "POSIX_FILE_ALIGNMENT"})  # fmt: skip
META_OPS = (
    "POSIX_OPENS",
    "POSIX_STATS",
    "POSIX_SEEKS",
    "POSIX_FSYNCS",
    "POSIX_FDSYNCS",
    "POSIX_RENAME_SOURCES",
)


# How long the child reading a log may take: the largest real logs take seconds; a damaged one that sends the
# library into a loop must not hang the import.
READ_TIMEOUT_S = 600.0


class DarshanImportError(ValueError):
    """A Darshan log that cannot be read; the message says why."""


def _merge(name: str, a: float, b: float) -> float:
    if name.endswith("_START_TIMESTAMP"):
        return min(x for x in (a, b) if x) if (a or b) else 0
    if name.endswith("_END_TIMESTAMP") or "_MAX_" in name or name.startswith("POSIX_MAX_"):
        return max(a, b)
    if "ACCESS" in name and name.endswith("_ACCESS") or "STRIDE" in name and name.endswith("_STRIDE"):
        return a or b
    return a + b


def _mount(path: str, mounts: list[tuple[str, str]]) -> tuple[str, str] | None:
    best = None
    for m, fs in mounts:
        if path == m or path.startswith(m.rstrip("/") + "/"):
            if best is None or len(m) > len(best[0]):
                best = (m, fs)
    return best


def read_log(path: str) -> dict[str, Any]:
    """Everything iolens takes from a Darshan log, as plain JSON-able data (runs in the child process)."""
    import darshan

    report = darshan.DarshanReport(path, read_all=True)
    meta = report.metadata
    job = meta.get("job", {})
    mounts = [(str(m), str(fs)) for m, fs in getattr(report, "mounts", [])]
    names = report.name_records
    files: dict[int, dict[str, float]] = {}
    ranks: dict[int, set[int]] = {}
    if "POSIX" in report.records and len(report.records["POSIX"]):
        df = report.records["POSIX"].to_df()
        for part, scale in (("counters", None), ("fcounters", 1e9)):
            frame = df[part]
            cols = [c for c in frame.columns if c not in ("id", "rank") and c not in SKIP]
            for rec_id, rank, *vals in frame[["id", "rank", *cols]].itertuples(index=False, name=None):
                f = files.setdefault(int(rec_id), {})
                ranks.setdefault(int(rec_id), set()).add(int(rank))
                for name, v in zip(cols, vals, strict=True):
                    v = float(v)
                    if v < 0 or math.isnan(v):
                        continue  # Darshan's -1: not recorded
                    if scale is not None:
                        # seconds → ns; timestamps ns since start + 1 (0: never), as iolens writes them
                        v = (
                            (round(v * scale) + 1)
                            if name.endswith("TIMESTAMP") and v > 0
                            else round(v * scale)
                        )
                    f[name] = _merge(name, f.get(name, 0), v)
    nprocs = int(job.get("nprocs") or 0)
    out_files = []
    for rec_id, counters in files.items():
        path = str(names.get(rec_id, f"<unknown {rec_id}>"))
        m = _mount(path, mounts)
        rk = ranks.get(rec_id, set())
        out_files.append(
            {
                "path": path,
                "mount": m[0] if m else None,
                "fs_type": m[1] if m else None,
                "processes": nprocs if -1 in rk else len(rk),
                "counters": {k: int(v) for k, v in counters.items() if v},
            }
        )
    timeline = None
    if "DXT_POSIX" in report.records and len(report.records["DXT_POSIX"]):
        timeline = _dxt_timeline(report.records["DXT_POSIX"].to_df(), float(job.get("run_time") or 0))
    return {
        "job": {k: v for k, v in job.items() if k != "metadata"} | {"metadata": job.get("metadata", {})},
        "exe": meta.get("exe", ""),
        "mounts": mounts,
        "files": out_files,
        "modules": sorted(report.records.keys()),
        "timeline": timeline,
    }


def _dxt_timeline(records: list[dict[str, Any]], run_s: float) -> dict[str, Any]:
    ends = [
        float(seg["end_time"].max())
        for r in records
        for seg in (r["read_segments"], r["write_segments"])
        if len(seg)
    ]
    span = max([run_s, *ends, 1e-6])
    width = span / TIMELINE_BINS
    read_b = [0.0] * TIMELINE_BINS
    write_b = [0.0] * TIMELINE_BINS
    read_n = [0] * TIMELINE_BINS
    write_n = [0] * TIMELINE_BINS
    for r in records:
        for seg, b, n in ((r["read_segments"], read_b, read_n), (r["write_segments"], write_b, write_n)):
            if not len(seg):
                continue
            for start, length in zip(seg["start_time"].tolist(), seg["length"].tolist(), strict=True):
                k = min(int(start / width), TIMELINE_BINS - 1)
                b[k] += length
                n[k] += 1
    return {
        "bin_s": width,
        "t_s": [round(i * width, 6) for i in range(TIMELINE_BINS)],
        "read_bytes": [int(x) for x in read_b],
        "write_bytes": [int(x) for x in write_b],
        "read_ops": read_n,
        "write_ops": write_n,
        "meta_ops": [0] * TIMELINE_BINS,
    }


def _child_read(path: Path) -> dict[str, Any]:
    try:
        import darshan  # noqa: F401
    except ImportError:
        raise DarshanImportError(
            f"{path}: reading Darshan logs needs the darshan package: pip install 'iolens[darshan]'"
        ) from None
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "iolens.store.darshan_logs", str(path)],
            capture_output=True,
            text=True,
            check=False,
            timeout=READ_TIMEOUT_S,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join(filter(None, [_package_root(), os.environ.get("PYTHONPATH")])),
            },
        )
    except subprocess.TimeoutExpired:
        # A damaged log can send the library into a loop: the child is killed (subprocess.run does it).
        raise DarshanImportError(
            f"{path}: not a readable Darshan log: the darshan reader did not finish in {READ_TIMEOUT_S:.0f} s"
        ) from None
    errors = [line.strip() for line in proc.stderr.splitlines() if line.strip().startswith("Error")]
    if proc.returncode != 0 or errors:
        why = "; ".join(errors[:3]) or (proc.stderr.strip().splitlines() or ["no message"])[-1]
        crash = f" (the darshan library crashed: signal {-proc.returncode})" if proc.returncode < 0 else ""
        raise DarshanImportError(f"{path}: not a readable Darshan log{crash}: {why}")
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise DarshanImportError(f"{path}: the darshan reader gave no result") from None


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def profile_record(path: Path) -> ProfileRecord:
    """The profile record of a Darshan log."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DarshanImportError(f"{path}: cannot read: {exc.strerror}") from None
    log = _child_read(path)
    job = log["job"]
    files = log["files"]
    # A job without POSIX records (only STDIO, say) is stored too, with no files.

    def total(name: str) -> int:
        return int(sum(f["counters"].get(name, 0) for f in files))

    start = float(job.get("start_time_sec", 0)) + float(job.get("start_time_nsec", 0)) / 1e9
    end = float(job.get("end_time_sec", 0)) + float(job.get("end_time_nsec", 0)) / 1e9
    run_s = float(job.get("run_time") or max(end - start, 0.0))
    read_s, write_s, meta_s = (
        total(n) / 1e9 for n in ("POSIX_F_READ_TIME", "POSIX_F_WRITE_TIME", "POSIX_F_META_TIME")
    )
    access_sizes = {
        "buckets": [b.replace("_PLUS", "+").replace("_", "-") for b in BUCKETS],
        "read": [total(f"POSIX_SIZE_READ_{b}") for b in BUCKETS],
        "write": [total(f"POSIX_SIZE_WRITE_{b}") for b in BUCKETS],
    }
    rows = [_file_row(f) for f in files]
    reads = [f for f in rows if f["reads"]]
    writes = [f for f in rows if f["writes"]]
    summary = {
        "start": None,
        "start_wall_ns": int(start * 1e9),
        "run_time_s": run_s,
        "processes": int(job.get("nprocs") or 0),
        "ranks": int(job.get("nprocs") or 0),
        "hosts": None,
        "files": {
            "total": len(rows),
            "read_only": sum(1 for f in rows if f["reads"] and not f["writes"]),
            "write_only": sum(1 for f in rows if f["writes"] and not f["reads"]),
            "read_write": sum(1 for f in rows if f["reads"] and f["writes"]),
        },
        "bytes_read": total("POSIX_BYTES_READ"),
        "bytes_written": total("POSIX_BYTES_WRITTEN"),
        "reads": total("POSIX_READS"),
        "writes": total("POSIX_WRITES"),
        "metadata_ops": sum(total(n) for n in META_OPS),
        "read_time_s": read_s,
        "write_time_s": write_s,
        "meta_time_s": meta_s,
        "io_time_s": read_s + write_s + meta_s,
    }
    del reads, writes
    by_bytes = sorted(rows, key=lambda f: -(f["bytes_read"] + f["bytes_written"]))[:10]
    by_time = sorted(rows, key=lambda f: -(f["read_time_s"] + f["write_time_s"] + f["meta_time_s"]))[:10]
    exe = str(log.get("exe") or "")
    report: dict[str, Any] = {
        "origin": "darshan",
        "job_id": str(job.get("jobid", "")),
        "summary": summary,
        "operations": {
            n[len("POSIX_") :]: total(n)
            for n in (
                "POSIX_OPENS",
                "POSIX_READS",
                "POSIX_WRITES",
                "POSIX_SEEKS",
                "POSIX_STATS",
                "POSIX_MMAPS",
                "POSIX_FSYNCS",
                "POSIX_FDSYNCS",
                "POSIX_RENAME_SOURCES",
                "POSIX_DUPS",
                "POSIX_FILENOS",
            )
        },  # fmt: skip
        "access_sizes": access_sizes,
        "access_patterns": {
            "reads": total("POSIX_READS"),
            "seq_reads": total("POSIX_SEQ_READS"),
            "consec_reads": total("POSIX_CONSEC_READS"),
            "writes": total("POSIX_WRITES"),
            "seq_writes": total("POSIX_SEQ_WRITES"),
            "consec_writes": total("POSIX_CONSEC_WRITES"),
            "rw_switches": total("POSIX_RW_SWITCHES"),
            "file_not_aligned": total("POSIX_FILE_NOT_ALIGNED"),
            "mem_not_aligned": total("POSIX_MEM_NOT_ALIGNED"),
        },
        "top_files_by_bytes": by_bytes,
        "top_files_by_time": by_time,
        "mounts": [{"mount": m, "fs_type": fs} for m, fs in log["mounts"]],
        "advice": [],
        "darshan": {
            "log_version": job.get("log_ver"),
            "modules": log["modules"],
            "metadata": job.get("metadata"),
        },
    }
    if log.get("timeline"):
        report["timeline"] = log["timeline"]
    return ProfileRecord(
        uid=sha256(b"darshan\0" + data),
        origin="darshan",
        summary=report,
        job_id=str(job.get("jobid", "")) or None,
        user_name=f"uid {job['uid']}" if "uid" in job else None,
        exe=exe.split(" ", 1)[0] or None,
        command=exe or None,
        processes=int(job.get("nprocs") or 0) or None,
        started_at=start or None,
        ended_at=end or None,
        runtime_s=run_s,
        files=len(rows),
        opens=total("POSIX_OPENS"),
        reads=summary["reads"],
        writes=summary["writes"],
        stats=total("POSIX_STATS"),
        seeks=total("POSIX_SEEKS"),
        fsyncs=total("POSIX_FSYNCS") + total("POSIX_FDSYNCS"),
        meta_ops=summary["metadata_ops"],
        bytes_read=summary["bytes_read"],
        bytes_written=summary["bytes_written"],
        read_time_s=read_s,
        write_time_s=write_s,
        meta_time_s=meta_s,
        small_ios=small_ios(access_sizes),
        truncated=False,
        source_path=str(path),
        file_rows=_profile_files(files),
    )


def _file_row(f: dict[str, Any]) -> dict[str, Any]:
    c = f["counters"]
    return {
        "path": f["path"],
        "mount": f["mount"],
        "fs_type": f["fs_type"],
        "processes": f["processes"],
        "bytes_read": c.get("POSIX_BYTES_READ", 0),
        "bytes_written": c.get("POSIX_BYTES_WRITTEN", 0),
        "reads": c.get("POSIX_READS", 0),
        "writes": c.get("POSIX_WRITES", 0),
        "read_time_s": c.get("POSIX_F_READ_TIME", 0) / 1e9,
        "write_time_s": c.get("POSIX_F_WRITE_TIME", 0) / 1e9,
        "meta_time_s": c.get("POSIX_F_META_TIME", 0) / 1e9,
    }


def _profile_files(files: list[dict[str, Any]]) -> Iterator[ProfileFile]:
    for f in files:
        c = f["counters"]
        starts = [v for k, v in c.items() if k.endswith("_START_TIMESTAMP") and v]
        ends = [v for k, v in c.items() if k.endswith("_END_TIMESTAMP") and v]
        yield ProfileFile(
            path=f["path"],
            fs_type=f["fs_type"],
            processes=f["processes"],
            opens=c.get("POSIX_OPENS", 0),
            reads=c.get("POSIX_READS", 0),
            writes=c.get("POSIX_WRITES", 0),
            stats=c.get("POSIX_STATS", 0),
            seeks=c.get("POSIX_SEEKS", 0),
            fsyncs=c.get("POSIX_FSYNCS", 0) + c.get("POSIX_FDSYNCS", 0),
            bytes_read=c.get("POSIX_BYTES_READ", 0),
            bytes_written=c.get("POSIX_BYTES_WRITTEN", 0),
            read_time_s=c.get("POSIX_F_READ_TIME", 0) / 1e9,
            write_time_s=c.get("POSIX_F_WRITE_TIME", 0) / 1e9,
            meta_time_s=c.get("POSIX_F_META_TIME", 0) / 1e9,
            first_s=(min(starts) - 1) / 1e9 if starts else None,
            last_s=(max(ends) - 1) / 1e9 if ends else None,
            counters=c,
        )


def _main(argv: list[str]) -> int:
    data = read_log(argv[0])
    sys.stdout.write(json.dumps(data, default=str))
    sys.stdout.flush()
    # The library has crashed while tearing a report down: leave without tearing anything down.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
