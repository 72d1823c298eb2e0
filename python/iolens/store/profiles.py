"""iolens profile logs as profile records: one per job, read by iolens.profile (the logs' own reader).

The stored document is the job's JSON report (docs/profile.md, "The JSON report": summary, operations,
access sizes and patterns, top files, mounts, ranks, processes, advice) with two more members: `origin`
("iolens") and, when the job was traced, `timeline` (what the job did over time, in at most TIMELINE_BINS
bins). Every file of the job is a row of profile_files, with all its non-zero counters.
"""

from __future__ import annotations

import pwd
from collections.abc import Iterator, Sequence
from itertools import repeat
from operator import add, truediv
from pathlib import Path
from typing import Any

from iolens.profile.sizes import bucket_upper
from iolens.store.records import FileColumns, ProfileRecord, file_sha256, sha256

TIMELINE_BINS = 200
# An access is small when its size bucket ends at or below 1 MiB. Darshan's buckets include their upper bound
# (100K_1M holds 102401..1048576 bytes: DARSHAN_BUCKET_INC in darshan-runtime, and iolens's runtime alike),
# so a transfer of exactly 1 MiB is small: the label says "up to".
SMALL_IO_BYTES = 1 << 20
SMALL_IOS_LABEL = "small I/Os (up to 1 MiB)"

READ_OPS = frozenset("read pread readv preadv fread fgets fscanf aio_read".split())
WRITE_OPS = frozenset("write pwrite writev pwritev fwrite fputs fprintf aio_write".split())
AIO_TRANSFER_OPS = frozenset(("aio_read", "aio_write"))


class ProfileImportError(ValueError):
    """Logs that cannot be read; the message names the file and says why."""


def small_ios(access_sizes: dict[str, Any]) -> int:
    """Reads and writes of at most SMALL_IO_BYTES (up to and including 1 MiB)."""
    labels = access_sizes.get("buckets") or []
    total = 0
    for direction in ("read", "write"):
        for label, count in zip(labels, access_sizes.get(direction) or [], strict=False):
            if bucket_upper(label) <= SMALL_IO_BYTES:
                total += int(count)
    return total


def document_top_files(doc: dict[str, Any], key: str) -> list[dict[str, Any]] | None:
    """A stored profile's own top-file table (`top_files_by_bytes`, `top_files_by_time`: data files only, ties
    by path, as its report shows them); None when the document has none (then list the stored files)."""
    rows = doc.get(key)
    if not isinstance(rows, list):
        return None
    return [r for r in rows if isinstance(r, dict) and isinstance(r.get("path"), str)]


def iolens_jobs(path: Path | list[Path]) -> list[ProfileRecord]:
    """Every job in a log file, a directory of logs, or a list of log files."""
    from iolens.profile.job import load_jobs
    from iolens.profile.reader import ProfileLogError

    try:
        jobs = load_jobs(path)
    except ProfileLogError as exc:
        raise ProfileImportError(str(exc)) from None
    where = str(path) if isinstance(path, Path) else str(path[0].parent) if path else None
    return [job_record(job, where) for job in jobs]


def user_of_uid(uid: int) -> str:
    """A numeric user id as its login name on this machine, else `uid N` (a log read elsewhere)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError, ValueError):
        return f"uid {uid}"


def owner_names(user: str) -> tuple[str, ...]:
    """What a user's jobs are stored under: their name, and `uid N` (a Darshan log names its user by uid
    only, and is stored so: the same log must give the same record on any machine) with their uid here."""
    try:
        return (user, f"uid {pwd.getpwnam(user).pw_uid}")
    except KeyError:
        return (user,)


def logs_owner(logs: Sequence[Any]) -> str | None:
    """The user a job belongs to: the owner of its first log. The runtime creates each log as the process
    that writes it, so the file's owner is the user who ran the program (the portal shows a job only to
    them). None when the log cannot be looked at."""
    for log in logs:
        try:
            return user_of_uid(Path(log.path).stat().st_uid)
        except (OSError, TypeError, AttributeError):
            continue
    return None


def logs_uid(logs: Sequence[Any]) -> str:
    """A job's uid: the hash of its logs' content hashes, sorted. It depends on the logs' bytes only, not on
    their names or order nor on the report this iolens derives from them (a newer iolens whose report differs
    still finds the job stored)."""
    digests = []
    # A job log's members share its file: hashed once.
    for path in dict.fromkeys(log.path for log in logs):
        try:
            digests.append(file_sha256(path))
        except OSError as exc:
            raise ProfileImportError(f"{path}: cannot read: {exc.strerror}") from None
    return sha256("iolens-logs\0" + "\n".join(sorted(digests)))


def job_record(job: Any, source_path: str | None = None, uid: str | None = None) -> ProfileRecord:
    """The record of one iolens.profile.job.Job (uid: the hash of its logs, unless given)."""
    from iolens.profile.report import job_report

    report = job_report(job)
    report["origin"] = "iolens"
    timeline = _timeline(job)
    if timeline is not None:
        report["timeline"] = timeline
    s = report["summary"]
    ops = report.get("operations") or {}
    root = job.nodes[job.roots[0]].log.header if job.roots else job.logs[0].header
    return ProfileRecord(
        uid=uid or logs_uid(job.logs),
        origin="iolens",
        summary=report,
        job_id=job.job_id,
        user_name=logs_owner(job.logs),
        exe=root.exe or None,
        command=" ".join(root.cmdline) or None,
        hosts=s.get("hosts"),
        processes=s.get("processes"),
        started_at=job.start_wall_ns / 1e9,
        ended_at=job.end_wall_ns / 1e9,
        runtime_s=s.get("run_time_s"),
        files=int((s.get("files") or {}).get("total") or 0),
        opens=int(ops.get("OPENS", 0)),
        reads=int(s.get("reads") or 0),
        writes=int(s.get("writes") or 0),
        stats=int(ops.get("STATS", 0)),
        seeks=int(ops.get("SEEKS", 0)),
        fsyncs=int(ops.get("FSYNCS", 0)),
        meta_ops=int(s.get("metadata_ops") or 0),
        bytes_read=int(s.get("bytes_read") or 0),
        bytes_written=int(s.get("bytes_written") or 0),
        read_time_s=float(s.get("read_time_s") or 0.0),
        write_time_s=float(s.get("write_time_s") or 0.0),
        meta_time_s=float(s.get("meta_time_s") or 0.0),
        small_ios=small_ios(report.get("access_sizes") or {}),
        truncated=bool(s.get("truncated_logs") or s.get("unclean_logs") or s.get("trace_dropped")),
        source_path=source_path,
        file_columns=_file_rows(job),
    )


# Files are turned into rows this many at a time: numpy finds each batch's non-zero counters, so a 100k-file
# job is neither 100k × every counter in Python objects nor all of its JSON at once.
FILE_BATCH = 4096
# The row's figures: iolens's own (job.LAYERED: POSIX + STDIO) where there is one, else the POSIX counter.
_FIXED = (
    "opens", "reads", "writes", "POSIX_STATS", "seeks", "POSIX_FSYNCS", "POSIX_FDSYNCS", "bytes_read",
    "bytes_written", "read_time_ns", "write_time_ns", "meta_time_ns",
)  # fmt: skip


def _file_rows(job: Any) -> Iterator[FileColumns]:
    """Every file the job recorded (not the excluded paths), its counters merged over processes, as batches
    of columns (ProfileFile.COLUMNS, then `counters`: the JSON object of its non-zero counters, in schema
    order). The figures are iolens's own: a file's POSIX and stdio calls together (job.io_column). The values
    are Python's, made as a row at a time would make them (ints from the counters, / 1e9 for seconds)."""
    import numpy as np

    from iolens.profile.job import LAYERED, io_column
    from iolens.profile.reader import FILE_EXCLUDED

    t = job.files
    names = list(t.names)
    stamps = [
        [n for n in names if n.endswith("_START_TIMESTAMP")],
        [n for n in names if n.endswith("_END_TIMESTAMP")],
    ]
    mounts = [m[1] for m in t.mount_list] + [None]  # index -1: no mount
    keep = np.flatnonzero((t.flags & FILE_EXCLUDED) == 0)
    never = np.iinfo(np.uint64).max
    # Each figure once for every kept file (io_column adds two whole columns: not once a batch).
    fixed_all = [(io_column(t, n) if n in LAYERED else t.column(n))[keep] for n in _FIXED]
    templates: dict[bytes, tuple[np.ndarray, str]] = {}
    paths, procs_all, mount_all = t.paths, job.procs, t.mount
    for at in range(0, keep.size, FILE_BATCH):
        rows = keep[at : at + FILE_BATCH]
        opens, reads, writes, stats, seeks, fsyncs, fdsyncs, br, bw, rt, wt, mt = (
            c[at : at + FILE_BATCH].tolist() for c in fixed_all
        )
        zero = np.zeros((rows.size, 1), np.uint64)
        first = np.where((f := t.columns(stamps[0], rows) if stamps[0] else zero) > 0, f, never).min(axis=1)
        last = (t.columns(stamps[1], rows) if stamps[1] else zero).max(axis=1)
        counters = _counters_json(np.hstack([b[rows] for b in t.blocks]), names, templates)
        rows_l = rows.tolist()
        yield FileColumns((
            list(map(paths.__getitem__, rows_l)),
            list(map(mounts.__getitem__, mount_all[rows].tolist())),
            list(map(int, procs_all[rows].tolist())),
            opens, reads, writes, stats, seeks,
            list(map(add, fsyncs, fdsyncs)),
            br, bw,
            list(map(truediv, rt, repeat(1e9))),
            list(map(truediv, wt, repeat(1e9))),
            list(map(truediv, mt, repeat(1e9))),
            # Timestamps are ns since the process started, + 1 (0: never).
            [(f0 - 1) / 1e9 if f0 != never else None for f0 in first.tolist()],
            [(l0 - 1) / 1e9 if l0 else None for l0 in last.tolist()],
            counters,
        ))  # fmt: skip


# A group of at least this many rows has the counters it holds the same in every row written into its format
# string once (a 100k-file job's files mostly differ only in their times): fewer numbers formatted a row.
_BAKE_ROWS = 16


def _counters_json(values: Any, names: list[str], templates: dict[bytes, tuple[Any, str]]) -> list[Any]:
    """Each row's non-zero counters as a JSON object (None for none). Rows with the same non-zero counters
    share one format string (the files of a job mostly do), so a row is one C-level formatting."""
    import numpy as np

    packed = np.packbits(values != 0, axis=1)
    # Rows grouped by their pattern of non-zero counters: the pattern's bits as 64-bit words, sorted.
    words = np.pad(packed, ((0, 0), (0, -packed.shape[1] % 8))).view(np.uint64)
    order = np.lexsort(words.T[::-1]) if words.shape[1] else np.arange(values.shape[0])
    sw = words[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = (sw[1:] != sw[:-1]).any(axis=1)
    bounds = [*np.flatnonzero(new).tolist(), order.size]
    out = np.empty(values.shape[0], dtype=object)
    for g in range(len(bounds) - 1):
        rows = order[bounds[g] : bounds[g + 1]]
        bits = packed[rows[0]]
        key = bits.tobytes()
        if key not in templates:
            cols = np.flatnonzero(np.unpackbits(bits)[: len(names)])
            templates[key] = (cols, "{" + ",".join(f'"{names[c]}":%d' for c in cols.tolist()) + "}")
        cols, template = templates[key]
        if not cols.size:
            continue
        group = values[np.ix_(rows, cols)]
        if rows.size >= _BAKE_ROWS:
            same = (group == group[0]).all(axis=0)
            if same.any():
                first = group[0].tolist()
                # Counter names need no escaping, nor hold a %.
                template = "{" + ",".join(
                    f'"{names[c]}":' + (f"{int(first[k])}" if same[k] else "%d")
                    for k, c in enumerate(cols.tolist())
                ) + "}"  # fmt: skip
                group = group[:, ~same]
        if group.shape[1]:
            out[rows] = list(map(template.__mod__, map(tuple, group.tolist())))
        else:
            out[rows] = template
    return out.tolist()  # type: ignore[no-any-return]


def _timeline(job: Any) -> dict[str, Any] | None:
    """Bytes read and written and operations per time bin over the job, from the traces (None: untraced)."""
    import numpy as np

    from iolens.profile.reader import OP_NAMES

    traced = [log for log in job.logs if log.trace_array.size]
    if not traced:
        return None
    run_s = max(job.run_time_s, 1e-6)
    bins = TIMELINE_BINS
    width = run_s / bins
    # 0 metadata, 1 read, 2 write, 3 a call of a layer above POSIX (MPI-IO, HDF5): not counted, its bytes and
    # its metadata are the POSIX calls it made, traced beneath it
    op_kind = np.zeros(max(OP_NAMES) + 1, dtype=np.int8)
    # An AIO read or write is one record, written when aio_return collected it, from its submission to that
    # aio_return (docs/profile-log.md): it counts at its end, when the counters count it, with the bytes
    # aio_return gave (its submission moved none).
    at_end = np.zeros(len(op_kind), dtype=bool)
    for code, name in OP_NAMES.items():
        upper = name.startswith(("MPI_File_", "H5"))
        op_kind[code] = 3 if upper else 1 if name in READ_OPS else 2 if name in WRITE_OPS else 0
        at_end[code] = name in AIO_TRANSFER_OPS
    read_b = np.zeros(bins)
    write_b = np.zeros(bins)
    counts = np.zeros((3, bins))
    for log in traced:
        a = log.trace_array
        ops = np.clip(a["op"].astype(np.int64), 0, len(op_kind) - 1)
        when = np.where(at_end[ops], a["start_ns"] + a["dur_ns"], a["start_ns"])
        t = (when.astype(np.float64) + (log.header.start_wall_ns - job.start_wall_ns)) / 1e9
        k = np.clip((t / width).astype(np.int64), 0, bins - 1)
        kind = op_kind[ops]
        moved = np.where(a["result"] > 0, a["result"], 0).astype(np.float64)
        read_b += np.bincount(k, weights=np.where(kind == 1, moved, 0), minlength=bins)
        write_b += np.bincount(k, weights=np.where(kind == 2, moved, 0), minlength=bins)
        for j in range(3):
            counts[j] += np.bincount(k, weights=(kind == j).astype(np.float64), minlength=bins)
    return {
        "bin_s": width,
        "t_s": [round(i * width, 6) for i in range(bins)],
        "read_bytes": [int(x) for x in read_b],
        "write_bytes": [int(x) for x in write_b],
        "read_ops": [int(x) for x in counts[1]],
        "write_ops": [int(x) for x in counts[2]],
        "meta_ops": [int(x) for x in counts[0]],
    }
