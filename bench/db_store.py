#!/usr/bin/env python3
"""The statistics database: storing monitoring samples, the trend and one-run time-series queries over a
database of 1M samples and 10k runs, and the HTML report of a profile with 100k files.

1. Store 1M monitoring samples into SQLite (100 series: 10 hosts × 10 metrics, 10 000 seconds):
   `Store.put_samples` of samples already in memory (what `iolens monitor` hands the store), and
   `iolens db import FILE.jsonl` of the same samples as narrow JSON lines (reading and parsing included).
2. Over a database holding those 1M samples and 10 000 runs (10 systems × 1000 ior-like runs of 4 phases):
   the trend query (`queries.trend`: one phase of one system, 1000 runs; and of every system, 10 000 runs)
   and the one-run time-series query (`queries.run_samples`: a 60 s run's window ± 10 s, 100 series, about
   8 000 samples). In-process times (the query and the rows in Python), then `iolens db trend` as a
   command (Python's start included) for reference.
3. `iolens report profile:ID --html FILE` of a profile with 100 000 files (the profile's log built by
   tests/profile_logs.py's many_files_spec, imported first): wall time and peak memory (ru_maxrss of the
   child, from wait4).

With --postgresql URL (an empty database), parts 1 (put_samples) and 2 run there too.

Targets: ≥ 100 000 samples/s into SQLite; each query ≤ 200 ms; the report ≤ 2 s and ≤ 200 MB.

    PYTHONPATH=python .venv/bin/python bench/db_store.py            # full run: bench/results/db_store.txt
    PYTHONPATH=python .venv/bin/python bench/db_store.py --quick    # smoke test (100k samples, 1k runs)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import benchlib as bl

sys.path.insert(0, str(bl.REPO_DIR / "python"))
sys.path.insert(0, str(bl.REPO_DIR))

from iolens.store import Store, queries  # noqa: E402
from iolens.store.records import PhaseRow, RunRecord, Sample  # noqa: E402

T0 = 1_780_000_000.0  # the samples' first second
HOSTS, METRICS = 10, 10
TARGET_RATE = 100_000
TARGET_QUERY_S = 0.200
TARGET_REPORT_S, TARGET_REPORT_MB = 2.0, 200


def samples(n: int) -> list[Sample]:
    per_series = n // (HOSTS * METRICS)
    out = []
    for h in range(HOSTS):
        for m in range(METRICS):
            host, metric = f"node{h:02d}", f"metric{m}_per_s"
            out += [
                Sample(T0 + i, host, "lustre", "scratch-OST0000", metric, float(i % 97), "1/s")
                for i in range(per_series)
            ]
    out.sort(key=lambda s: s.t)  # as a monitor hands them over: time order, all series interleaved
    return out


def runs(n: int, span_s: float) -> list[RunRecord]:
    out = []
    for i in range(n):
        start = T0 + (i / n) * span_s
        phases = [
            PhaseRow(
                name=name,
                value=(1 + (i % 13) / 10) * base,
                unit=unit,
                time_s=15.0,
                p50_ns=40_000,
                p99_ns=900_000,
            )
            for name, base, unit in (
                ("write", 2e9, "B/s"),
                ("read", 3e9, "B/s"),
                ("file-create", 1e5, "items/s"),
                ("file-stat", 4e5, "items/s"),
            )
        ]
        out.append(
            RunRecord(
                uid=f"bench-{i}",
                tool="ior",
                origin="iolens",
                status="ok",
                document="{}",
                config={"t": 1 << 20},
                config_hash="c0ffee",
                started_at=start,
                ended_at=start + 60,
                ranks=64,
                nodes=4,
                hostname=f"node{i % HOSTS:02d}",
                valid=True,
                phases=phases,
            )
        )
    return out


def timed(fn: Any, repeat: int) -> tuple[list[float], Any]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return times, result


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [str(bl.REPO_DIR / "python"), e.get("PYTHONPATH")]))
    for k in ("IOLENS_DB", "IOLENS_SYSTEM", "IOLENS_CONFIG"):
        e.pop(k, None)
    return e


def fresh_postgres(url: str) -> None:
    """Empty the benchmark's PostgreSQL database (the schema is made again on open)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(p, default_runs=3)
    p.add_argument(
        "--postgresql", default=None, help="also run parts 1 and 2 on this (empty) PostgreSQL database"
    )
    p.add_argument(
        "--scratch", default="/var/tmp", help="where the SQLite files go (default /var/tmp, a disk)"
    )
    a = p.parse_args()
    runs_n = a.runs or (1 if a.quick else 3)
    n_samples = 100_000 if a.quick else 1_000_000
    n_runs = 1_000 if a.quick else 10_000
    n_files = 10_000 if a.quick else 100_000
    repeat = 5 if a.quick else 20

    rep = bl.Report("db_store", "iolens statistics database: storing samples, queries, profile report")
    rep.header += bl.machine_lines(paths=[Path(a.scratch)])
    import sqlite3

    rep.header.append(f"sqlite:  {sqlite3.sqlite_version} (Python {sys.version.split()[0]})")
    rep.header.append(
        f"setup:   {n_samples} samples (100 series), {n_runs} runs (10 systems, 4 phases each), "
        f"{n_files}-file profile; {runs_n} run(s) of each store, {repeat} of each query"
        + (" (quick)" if a.quick else " (full run)")
    )
    data = samples(n_samples)
    span = n_samples / (HOSTS * METRICS)
    backends = [("sqlite", None)] + ([("postgresql", a.postgresql)] if a.postgresql else [])

    with bl.scratch_dir(Path(a.scratch), "db") as d:
        # --- 1. storing samples ---------------------------------------------------------------------------
        store_rows = []
        db_path = d / "bench.db"
        for backend, url in backends:
            rates = []
            for r in range(runs_n):
                if backend == "sqlite":
                    target = str(d / f"samples-{r}.db")
                else:
                    assert url is not None
                    fresh_postgres(url)
                    target = url
                with Store.open(target) as store:
                    t = time.perf_counter()
                    store.put_samples(data, f"bench-{r}")
                    dt = time.perf_counter() - t
                rates.append(n_samples / dt)
                bl.progress(f"{backend}: put_samples {n_samples} in {dt:.2f} s")
                if backend == "sqlite" and r == 0:
                    os.replace(target, db_path)
                    for suffix in ("-wal", "-shm"):
                        if os.path.exists(target + suffix):
                            os.replace(target + suffix, str(db_path) + suffix)
                elif backend == "sqlite":
                    os.unlink(target)
            store_rows.append(
                [f"{backend}: Store.put_samples", n_samples, bl.median(rates), bl.spread(rates)]
            )
        rep.command(["Store.open(DB).put_samples(samples, uid)"])

        jsonl = d / "samples.jsonl"
        with open(jsonl, "w") as f:
            for s in data:
                f.write(
                    json.dumps(
                        {
                            "t": s.t,
                            "host": s.host,
                            "source": s.source,
                            "target": s.target,
                            "metric": s.metric,
                            "value": s.value,
                            "unit": s.unit,
                        }
                    )
                    + "\n"
                )
        rates = []
        for r in range(runs_n):
            cmd = [
                sys.executable,
                "-m",
                "iolens",
                "db",
                "import",
                str(jsonl),
                "--db",
                str(d / f"import-{r}.db"),
            ]
            wall, _, _ = bl.peak(cmd, env())
            rates.append(n_samples / wall)
            rep.command(cmd)
            bl.progress(f"sqlite: iolens db import {n_samples} samples in {wall:.2f} s")
            os.unlink(d / f"import-{r}.db")
        store_rows.append(
            ["sqlite: iolens db import FILE.jsonl", n_samples, bl.median(rates), bl.spread(rates)]
        )
        rep.section(
            f"1. Storing monitoring samples (target ≥ {TARGET_RATE} samples/s into SQLite)",
            bl.table(["how", "samples", "samples/s (median)", "range"], store_rows),
        )
        rep.add(
            f"\nTarget: {store_rows[0][2]:.0f} samples/s: "
            + ("ok" if store_rows[0][2] >= TARGET_RATE else "MISSED")
        )

        # --- 2. queries over 1M samples and 10k runs --------------------------------------------------------
        query_rows = []
        for backend, url in backends:
            target = str(db_path) if backend == "sqlite" else url
            assert target is not None
            if backend == "postgresql":
                with Store.open(target) as store:  # part 1 left its last run's samples there
                    pass
            with Store.open(target) as store:
                t = time.perf_counter()
                records = runs(n_runs, span * 100)
                with store.db.transaction():
                    for i, rec in enumerate(records):
                        store.put_run(rec, f"system-{i % 10}")
                bl.progress(f"{backend}: {n_runs} runs stored in {time.perf_counter() - t:.1f} s")
                c = queries.counts(store.db)
                # A run inside the samples' span: its window holds 100 series × 80 s.
                inside = store.db.query_one(
                    "SELECT id FROM runs WHERE started_at >= ? ORDER BY started_at LIMIT 1", (T0 + span / 2,)
                )
                assert inside is not None
                cases = [
                    (
                        "trend: one system, phase write",
                        lambda s=store: queries.trend(s.db, "write", "system-3"),
                    ),
                    ("trend: every system, phase read", lambda s=store: queries.trend(s.db, "read")),
                    (
                        "one run's samples (window ± 10 s)",
                        lambda s=store, i=inside[0]: queries.run_samples(s.db, i),
                    ),
                    ("regressions (every series)", lambda s=store: queries.regressions(s.db)),
                ]
                for label, fn in cases:
                    times, result = timed(fn, repeat)
                    query_rows.append([backend, label, len(result), bl.median(times) * 1e3, max(times) * 1e3])
                    bl.progress(f"{backend}: {label}: {bl.median(times) * 1e3:.1f} ms ({len(result)} rows)")
            rep.add("")
            rep.add(
                f"{backend}: the database holds {c['samples']} samples in {c['series']} series, "
                f"{c['runs']} runs, "
                f"{c['phases']} phase rows"
            )
        if True:
            cmd = [
                sys.executable,
                "-m",
                "iolens",
                "db",
                "trend",
                "--system",
                "system-3",
                "--phase",
                "write",
                "--db",
                str(db_path),
            ]
            walls = [bl.peak(cmd, env())[0] for _ in range(min(repeat, 5))]
            rep.command(cmd)
            query_rows.append(
                [
                    "sqlite",
                    "iolens db trend (the command, Python start included)",
                    "-",
                    bl.median(walls) * 1e3,
                    max(walls) * 1e3,
                ]
            )
        rep.section(
            f"2. Queries over {n_samples} samples and {n_runs} runs "
            f"(target ≤ {TARGET_QUERY_S * 1e3:.0f} ms each)",
            bl.table(["backend", "query", "rows", "ms (median)", "ms (max)"], query_rows),
        )
        worst = max(r[3] for r in query_rows if r[1].startswith(("trend", "one run")))
        rep.add(
            f"\nTarget: slowest trend/time-series median {worst:.1f} ms: "
            + ("ok" if worst <= TARGET_QUERY_S * 1e3 else "MISSED")
        )

        # --- 3. the HTML report of a 100k-file profile ------------------------------------------------------
        from tests.profile_logs import many_files_spec, write_log

        logs = d / "logs"
        logs.mkdir()
        write_log(logs, many_files_spec(n_files))
        pdb = d / "profile.db"
        cmd = [sys.executable, "-m", "iolens", "db", "import", str(logs), "--db", str(pdb)]
        import_wall, import_mb, _ = bl.peak(cmd, env())
        rep.command(cmd)
        report_rows = [["iolens db import (the log, once)", import_wall, "-", import_mb, "-"]]
        walls, mbs = [], []
        for r in range(max(runs_n, 3)):
            out = d / f"report-{r}.html"
            cmd = [
                sys.executable,
                "-m",
                "iolens",
                "report",
                "profile:1",
                "--html",
                str(out),
                "--db",
                str(pdb),
            ]
            wall, mb, _ = bl.peak(cmd, env())
            walls.append(wall)
            mbs.append(mb)
            rep.command(cmd)
            size = out.stat().st_size
        report_rows.append(
            ["iolens report profile:1 --html", bl.median(walls), max(walls), bl.median(mbs), max(mbs)]
        )
        rep.section(
            f"3. HTML report of a profile with {n_files} files "
            f"(target ≤ {TARGET_REPORT_S:.0f} s and ≤ {TARGET_REPORT_MB} MB)",
            bl.table(
                ["command", "wall s (median)", "wall s (max)", "peak RSS MiB (median)", "peak RSS MiB (max)"],
                report_rows,
            ),
        )
        ok = max(walls) <= TARGET_REPORT_S and max(mbs) <= TARGET_REPORT_MB
        rep.add(
            f"\nThe report file: {size / 1e6:.1f} MB (plotly.js, embedded, is 4.8 MB of it). Target: "
            + ("ok" if ok else "MISSED")
        )
    rep.notes(
        "Samples are stored narrow (one row per value) in a WITHOUT ROWID table keyed by (series, time); the "
        "labels of a series (host, source, target, metric) are stored once in `series`. put_samples writes "
        "in batches of 20 000 rows (executemany on SQLite, COPY into a temporary table then INSERT … "
        "ON CONFLICT DO NOTHING on PostgreSQL), one transaction for the whole batch.",
        "The import row includes reading and parsing the JSON lines; the put_samples row starts from samples "
        "already in memory, as `iolens monitor --db` hands them over.",
        "Query times are medians of repeated calls in one process, the rows turned into Python objects "
        "included; the first call of each is included too (the database file is in the page cache).",
    )
    rep.emit(a.out, a.quick)
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
