"""Darshan logs as profile records. The log is read by iolens.profile.darshan_log (iolens's own reader of
Darshan's format: no darshan library, no child process) and made an iolens job, so the stored document is
the job's JSON report exactly as for iolens's own logs (docs/profile.md, "The JSON report": summary,
operations, access sizes and patterns, top files, mounts, ranks, processes, advice), with `origin`
"darshan", the report's `darshan` member (the log's modules and their totals under Darshan's names, HDF5
datasets, PnetCDF variables) and, for a log with DXT tracing, a `timeline`. Every file is a row of
profile_files with its non-zero counters of every file-level module (POSIX, MPI-IO, STDIO, H5F,
PNETCDF_FILE), in iolens's units (docs/db.md).

A damaged or truncated log is refused with one line saying why; nothing is stored.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from iolens.profile.darshan_log import DarshanLog, load_darshan_job
from iolens.profile.reader import ProfileLogError
from iolens.store.profiles import TIMELINE_BINS, job_record
from iolens.store.records import ProfileRecord


class DarshanImportError(ValueError):
    """A Darshan log that cannot be read; the message says why."""


def profile_record(path: Path) -> ProfileRecord:
    """The profile record of a Darshan log."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DarshanImportError(f"{path}: cannot read: {exc.strerror}") from None
    # The uid is the one earlier iolens versions gave the same log: a log stored before stays stored.
    digest = hashlib.sha256(b"darshan\0")
    digest.update(data)
    try:
        job = load_darshan_job(path, data)
    except ProfileLogError as exc:
        raise DarshanImportError(str(exc)) from None
    del data
    log = job.log
    assert log is not None
    record = job_record(job, str(path), uid=digest.hexdigest())
    report = record.summary
    report["origin"] = "darshan"
    timeline = dxt_timeline(log)
    if timeline is not None:
        report["timeline"] = timeline
    return replace(
        record,
        origin="darshan",
        user_name=f"uid {log.uid}",
        job_id=str(log.jobid),
        processes=log.nprocs or None,
        hosts=None,
        started_at=log.start_s or None,
        ended_at=log.end_s or None,
        runtime_s=log.run_time_s,
        truncated=bool(log.partial),
    )


def dxt_timeline(log: DarshanLog) -> dict[str, Any] | None:
    """Bytes and operations per time bin from the DXT_POSIX segments (None: the log has no DXT trace)."""
    if not any(len(f.reads) or len(f.writes) for f in log.dxt):
        return None
    ends = [float(s["end"].max()) for f in log.dxt for s in (f.reads, f.writes) if len(s)]
    span = max([log.run_time_s, *ends, 1e-6])
    width = span / TIMELINE_BINS
    out: dict[str, Any] = {"bin_s": width, "t_s": [round(i * width, 6) for i in range(TIMELINE_BINS)]}
    for kind in ("read", "write"):
        segs = [f.reads if kind == "read" else f.writes for f in log.dxt]
        start = np.concatenate([s["start"] for s in segs]).astype(np.float64)
        length = np.concatenate([s["length"] for s in segs]).astype(np.float64)
        k = np.clip((start / width).astype(np.int64), 0, TIMELINE_BINS - 1)
        out[f"{kind}_bytes"] = [int(x) for x in np.bincount(k, weights=length, minlength=TIMELINE_BINS)]
        out[f"{kind}_ops"] = [int(x) for x in np.bincount(k, minlength=TIMELINE_BINS)]
    out["meta_ops"] = [0] * TIMELINE_BINS
    return out
