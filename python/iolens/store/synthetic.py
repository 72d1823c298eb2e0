"""Synthetic content of a center's database, FOR BENCHMARKS ONLY (bench/web_load.py): jobs (profiles and a
few of their files), benchmark runs with their phases, and monitoring samples, written with bulk inserts.

Nothing in iolens uses this module: it fills a new, empty database with figures of a plausible shape (drawn
from a seeded generator, so a given shape always gives the same rows), much faster than storing records
one by one (Store.put_profile is one transaction per job). Rows get their ids here; on PostgreSQL the id
sequences are moved past them afterwards, so later writes (a token, an import) still work.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from iolens.store import rollup
from iolens.store.db import Database
from iolens.store.records import PhaseRow, ProfileFile, ProfileRecord
from iolens.store.store import Store, _batches

CHUNK = 20_000
SYSTEMS = ("lustre-scratch", "lustre-project", "gpfs-home")
PROGRAMS = (
    "wrf", "cp2k", "gromacs", "lammps", "namd", "vasp", "quantum-espresso", "openfoam", "nek5000", "icon",
    "cesm", "python3", "R", "matlab", "hmmer", "bwa", "samtools", "blast", "tensorflow", "pytorch-train",
    "ior", "h5bench", "paraview", "visit", "ncl", "cdo", "nco", "gadget4", "ramses", "enzo",
)  # fmt: skip
# A node's monitor series (per host): source, target, metric, unit. 58 in all.
_DEVICES = ("nvme0n1", "nvme1n1")
_DISK = ("read_bytes_per_s", "write_bytes_per_s", "reads_per_s", "writes_per_s", "read_bytes", "write_bytes",
         "io_time_share", "queue_depth")  # fmt: skip
_LUSTRE = ("read_bytes_per_s", "write_bytes_per_s", "open_per_s", "close_per_s", "getattr_per_s",
           "setattr_per_s", "statfs_per_s", "fsync_per_s", "read_bytes", "write_bytes")  # fmt: skip
_OSTS = tuple(f"scratch-OST{i:04x}" for i in range(8))


def _unit(metric: str) -> str:
    return "B/s" if metric.endswith("bytes_per_s") else "B" if metric.endswith("bytes") else "1/s"


_OSC = (("read_bytes_per_s", "B/s"), ("write_bytes_per_s", "B/s"), ("rpcs_in_flight", "1"))
_NODE = (
    ("cpu", "", "busy_share", "1"), ("cpu", "", "iowait_share", "1"), ("memory", "", "used_bytes", "B"),
    ("memory", "", "dirty_bytes", "B"), ("net", "ib0", "rx_bytes_per_s", "B/s"),
    ("net", "ib0", "tx_bytes_per_s", "B/s"), ("load", "", "load1", "1"), ("load", "", "procs_blocked", "1"),
)  # fmt: skip
SERIES: tuple[tuple[str, str, str, str], ...] = (
    *(("diskstats", d, m, _unit(m)) for d in _DEVICES for m in _DISK),
    *(("lustre_llite", "scratch", m, _unit(m)) for m in _LUSTRE),
    *(("lustre_osc", o, m, u) for o in _OSTS for m, u in _OSC),
    *_NODE,
)


@dataclass(frozen=True)
class Shape:
    """How much to make. Samples are spread over `hosts` × len(SERIES) series at 1 s up to `now`."""

    jobs: int = 100_000
    runs: int = 5_000
    samples: int = 2 * 58 * 86_400  # 10,022,400: 24 h at 1 s
    hosts: int = 2
    users: int = 400
    files_per_job: int = 3
    job_days: float = 90.0
    run_days: float = 365.0


def _insert(db: Database, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    n = 0
    for chunk in _batches(rows, CHUNK):
        with db.transaction():
            db.bulk_insert(table, columns, chunk)
        n += len(chunk)
    return n


def _log_uniform(r: random.Random, lo: float, hi: float) -> float:
    return math.exp(r.uniform(math.log(lo), math.log(hi)))


def fill(db: Database, shape: Shape, now: float, seed: int = 20) -> dict[str, int]:
    """Fill a new database (schema migrated, no jobs, runs or samples yet); what was made, by table."""
    store = Store(db)
    systems = [store.system_id(name) for name in SYSTEMS]
    made = {
        "profiles": _insert(db, "profiles", PROFILE_COLUMNS, _profiles(shape, systems, now, seed)),
        "profile_files": _insert(db, "profile_files", FILE_COLUMNS, _files(shape, now, seed)),
    }
    runs, phases = _runs(shape, systems, now, seed)
    made["runs"] = _insert(db, "runs", RUN_COLUMNS, runs)
    made["phases"] = _insert(db, "phases", PHASE_COLUMNS, phases)
    made["series"] = _insert(
        db, "series", ("id", "host", "source", "target", "metric", "unit"), _series(shape)
    )
    made["samples"] = _insert(db, "samples", ("series_id", "t", "value"), _samples(shape, now))
    if db.dialect == "postgresql":
        for table in ("profiles", "runs", "phases", "series"):
            db.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))"
            )
        # What autovacuum does soon after a load this size (PostgreSQL 13+ vacuums insert-only tables too):
        # statistics, and the visibility map that index-only scans need. Without it the first minutes of a
        # benchmark measure a database no center runs (and autovacuum working beside the clients).
        db.execute("VACUUM (ANALYZE)")
    return made


def without_rollup(db: Database) -> None:
    """Drop the triggers that keep the samples' per-minute rollup (store/rollup.py), and the rollup: the
    database as iolens stored samples before it (bench/rollup_cost.py's peer). Never on a real database:
    its dashboards would then read a rollup that no longer follows the samples."""
    with db.transaction():
        for trigger in rollup.TRIGGERS:
            db.execute(f"DROP TRIGGER {trigger}" + (" ON samples" if db.dialect == "postgresql" else ""))
        db.execute("DELETE FROM sample_minutes")


# --- jobs -------------------------------------------------------------------------------------------------

PROFILE_COLUMNS = ("id", "uid", "system_id", *ProfileRecord.COLUMNS, "source_path", "imported_at", "document")
FILE_COLUMNS = ("profile_id", "file_no", *ProfileFile.COLUMNS, "counters")


def user_name(n: int) -> str:
    return f"user{n:03d}"


def _profiles(shape: Shape, systems: list[int | None], now: float, seed: int) -> Iterator[tuple[Any, ...]]:
    r = random.Random(seed)
    for i in range(1, shape.jobs + 1):
        user = user_name(int(shape.users * r.random() ** 2))  # a few users run most jobs
        name = PROGRAMS[int(len(PROGRAMS) * r.random() ** 1.5)]
        exe = f"/apps/{name}/2025.1/bin/{name}"
        processes = 2 ** r.randint(0, 10)
        runtime = _log_uniform(r, 30, 86400)
        started = now - r.random() * shape.job_days * 86400
        io_time = runtime * processes * 0.6 * r.random() ** 2
        meta_time = io_time * r.random() ** 3
        rw = io_time - meta_time
        read_part = r.random()
        read_time, write_time = rw * read_part, rw * (1 - read_part)
        rate = _log_uniform(r, 1e6, 2e9)  # bytes per process-second of I/O
        bytes_read, bytes_written = int(rate * read_time), int(rate * write_time)
        xfer = 2 ** r.randint(12, 24)
        reads, writes = bytes_read // xfer, bytes_written // xfer
        files = int(_log_uniform(r, 1, 20_000))
        opens, stats = files * 2, files * 3
        meta_ops = opens + stats + files
        small = reads + writes if xfer <= 1 << 20 else 0
        origin = "darshan" if i % 5 == 0 else "iolens"
        doc = {
            "origin": origin,
            "job_id": str(1_000_000 + i),
            "summary": {
                "run_time_s": runtime, "processes": processes, "bytes_read": bytes_read,
                "bytes_written": bytes_written, "reads": reads, "writes": writes, "metadata_ops": meta_ops,
                "read_time_s": read_time, "write_time_s": write_time, "meta_time_s": meta_time,
                "files": {"total": files, "read_only": files // 3, "write_only": files // 3,
                          "read_write": files - 2 * (files // 3)},
            },
            "operations": {"OPENS": opens, "STATS": stats, "READS": reads, "WRITES": writes, "SEEKS": reads},
            "top_files_by_bytes": [
                {"path": f"/lus/scratch/{user}/{name}/run{i}/out.{k}", "bytes_read": bytes_read // 3,
                 "bytes_written": bytes_written // 3}
                for k in range(3)
            ],
            "advice": [{"id": "small-writes", "text": "Writes of a few KiB: buffer them."}] if small else [],
        }  # fmt: skip
        yield (
            i, f"synthetic-job-{i}", systems[i % len(systems)], origin, str(1_000_000 + i), user, exe,
            f"{exe} --input /lus/scratch/{user}/{name}/in.nml", max(1, processes // 64), processes, started,
            started + runtime, runtime, files, opens, reads, writes, stats, reads, files // 10, meta_ops,
            bytes_read, bytes_written, read_time, write_time, meta_time, small, False, None, now,
            json.dumps(doc, separators=(",", ":")),
        )  # fmt: skip


def _files(shape: Shape, now: float, seed: int) -> Iterator[tuple[Any, ...]]:
    r = random.Random(seed + 1)
    for i in range(1, shape.jobs + 1):
        for k in range(shape.files_per_job):
            b = int(_log_uniform(r, 1e3, 1e11))
            yield (
                i, k, f"/lus/scratch/job{i}/out.{k}", "lustre", 1 + i % 64, 2, b >> 20, b >> 20, 3, 0, 1,
                b // 2, b // 2, b / 4e9, b / 2e9, 0.01, 0.5, 100.0, '{"POSIX_OPENS":2}',
            )  # fmt: skip


# --- benchmark runs ---------------------------------------------------------------------------------------

RUN_COLUMNS = ("id", "uid", "system_id", "tool", "origin", "version", "command", "config", "config_hash",
               "started_at", "ended_at", "ranks", "nodes", "hostname", "file_system", "status", "valid",
               "score", "source_path", "imported_at", "document")  # fmt: skip
PHASE_COLUMNS = ("id", "run_id", "seq", *PhaseRow.COLUMNS)
IO500_PHASES = (
    ("ior-easy-write", "GiB/s", 20.0), ("mdtest-easy-write", "kIOPS", 150.0),
    ("ior-hard-write", "GiB/s", 1.5), ("mdtest-hard-write", "kIOPS", 40.0), ("find", "kIOPS", 900.0),
    ("ior-easy-read", "GiB/s", 25.0), ("mdtest-easy-stat", "kIOPS", 400.0), ("ior-hard-read", "GiB/s", 3.0),
    ("mdtest-hard-stat", "kIOPS", 200.0), ("mdtest-easy-delete", "kIOPS", 100.0),
    ("mdtest-hard-read", "kIOPS", 60.0), ("mdtest-hard-delete", "kIOPS", 30.0),
)  # fmt: skip


def _phase(
    name: str, kind: str, value: float, unit: str | None, nbytes: int | None, ops: int | None,
    seconds: float | None, start: float | None,
) -> tuple[Any, ...]:  # fmt: skip
    """A phases row after its id, run and seq: PhaseRow.COLUMNS' order, no latencies."""
    end = None if start is None or seconds is None else start + seconds
    return (name, 0, kind, value, unit, nbytes, ops, seconds, start, end, *([None] * 7), True, "ok")


def _runs(
    shape: Shape, systems: list[int | None], now: float, seed: int
) -> tuple[list[tuple[Any, ...]], Iterator[tuple[Any, ...]]]:
    r = random.Random(seed + 2)
    runs: list[tuple[Any, ...]] = []
    phases: list[tuple[Any, ...]] = []
    for i in range(1, shape.runs + 1):
        tool = ("ior", "mdtest", "io500")[i % 3]
        started = now - (shape.runs - i) / shape.runs * shape.run_days * 86400
        speed = 1.0 + 0.1 * r.gauss(0, 1) - (0.3 if i % 97 == 0 else 0.0)  # now and then a regression
        rows: list[tuple[Any, ...]] = []
        if tool == "ior":
            for seq, name in enumerate(("write", "read")):
                bw = 8e9 * speed * (1.2 if name == "read" else 1.0)
                rows.append(_phase(name, "phase", bw, "B/s", int(bw * 30), int(bw * 30) >> 20, 30.0,
                                   started + 30 * seq))  # fmt: skip
        elif tool == "mdtest":
            for seq, name in enumerate(("create", "stat", "read", "remove")):
                v = 50_000 * speed * (seq + 1)
                rows.append(_phase(name, "phase", v, "items/s", None, int(v * 10), 10.0, started + 10 * seq))
        else:
            for seq, (name, unit, base) in enumerate(IO500_PHASES):
                rows.append(_phase(name, "phase", base * speed, unit, None, None, 300.0, started + 300 * seq))
            for name, unit, v in (("BW", "GiB/s", 7.0 * speed), ("MD", "kIOPS", 120.0 * speed),
                                  ("SCORE", None, 29.0 * speed)):  # fmt: skip
                rows.append(_phase(name, "score", v, unit, None, None, None, None))
        ended = started + 40 * len(rows)
        doc = json.dumps({"tool": tool, "synthetic": True, "phases": [p[0] for p in rows]})
        runs.append((
            i, f"synthetic-run-{i}", systems[i % len(systems)], tool, "iolens", "iolens 0.1.0",
            f"iolens {tool} --np 64", '{"np":64}', f"cfg{i % 7}", started, ended, 64, 4, f"login{i % 2}",
            "/lus/scratch", "ok", True, 29.0 * speed if tool == "io500" else None, None, now, doc,
        ))  # fmt: skip
        phases += [(len(phases) + 1 + k, i, k, *p) for k, p in enumerate(rows)]
    return runs, iter(phases)


# --- monitoring -------------------------------------------------------------------------------------------


def hosts(shape: Shape) -> list[str]:
    return [f"node{h + 1:03d}" for h in range(shape.hosts)]


def _series(shape: Shape) -> Iterator[tuple[Any, ...]]:
    n = 0
    for host in hosts(shape):
        for source, target, metric, unit in SERIES:
            n += 1
            yield (n, host, source, target, metric, unit)


def sample_seconds(shape: Shape) -> int:
    """How many seconds of 1 s samples the shape's sample count covers."""
    return max(1, shape.samples // (shape.hosts * len(SERIES)))


def _samples(shape: Shape, now: float) -> Iterator[tuple[int, float, float]]:
    seconds = sample_seconds(shape)
    t0 = float(int(now) - seconds)
    for sid in range(1, shape.hosts * len(SERIES) + 1):
        metric = SERIES[(sid - 1) % len(SERIES)][2]
        scale = 1e9 if "bytes" in metric else 1e3 if metric.endswith("_per_s") else 1.0
        counter = metric.endswith(("read_bytes", "write_bytes"))
        total = 0.0
        for k in range(seconds):
            v = scale * (1.0 + math.sin((k + 97 * sid) / 600.0)) * (1.5 if (k // 900) % 4 == 0 else 0.5)
            if counter:
                total += v
                v = total
            yield (sid, t0 + k, v)
