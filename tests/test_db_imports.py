"""Imports on both backends: the result directory of a real `iolens io500` run, iolens profile logs (built
to docs/profile-log.md by tests/profile_logs.py and read by iolens.profile), real Darshan logs (the examples
the darshan package ships, read by iolens's own reader and checked against the darshan library), and
monitoring streams (made by iolens.monitor's sampler, and narrow records); idempotent re-imports, damaged
input refused with nothing stored, killed writers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from iolens import results
from iolens.io500.results_files import read_result
from iolens.store import Store, queries

from .conftest import sample_document
from .db_helpers import iolens, iolens_env, tiny_io500
from .profile_logs import TRACE_ON, FileSpec, LogSpec, MountSpec, TraceSpec, poke, write_log

MiB = 1 << 20
S = 10**9


def counts(url: str) -> dict[str, int]:
    with Store.open(url, create=False) as store:
        return queries.counts(store.db)


def run_import(
    url: str, tmp_path: Path, *paths: Path | str, system: str | None = None
) -> subprocess.CompletedProcess[str]:
    extra = ["--system", system] if system else []
    return iolens("db", "import", *map(str, paths), "--db", url, *extra, env=iolens_env(home=tmp_path))


# --- iolens io500 result directories ---------------------------------------------------------------------


def test_iolens_io500_result_directory_is_imported_from_its_document(
    engine: Path, tmpfs_dir: Path, tmp_path: Path, db_url: str
) -> None:
    """A directory `iolens io500` wrote holds the app's files and iolens-io500.json: the run is stored from
    the document (per-phase bytes and latencies, which result.txt lacks), once, and its per-phase documents
    are part of it, not runs of their own."""
    r, rd = tiny_io500(tmpfs_dir, env=iolens_env({"IOLENS_BENCH": str(engine)}, home=tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "stored" not in r.stderr and len(list(rd.glob("*.json"))) > 10  # no database: nothing stored

    imp = run_import(db_url, tmp_path, tmpfs_dir, system="lustre")  # the parent: the result dir is found
    assert imp.returncode == 0, imp.stderr
    assert imp.stdout.strip() == f"{rd}: stored as run 1"
    raw = json.loads((rd / "iolens-io500.json").read_text())
    doc = results.parse(raw)
    assert isinstance(doc, results.Io500Document) and doc.io500 is not None
    with Store.open(db_url, create=False) as store:
        run = queries.get_run(store.db, 1, document=True)
    assert (run["tool"], run["origin"], run["system"], run["ranks"]) == ("io500", "iolens", "lustre", 2)
    assert json.loads(run["document"]) == raw and run["source_path"] == str(rd / "iolens-io500.json")

    phases = [p for p in run["phases"] if p["kind"] == "phase"]
    assert [p["name"] for p in phases] == [p.name for p in doc.io500.phases]
    printed = read_result(rd / "result.txt").phase_scores()
    for row, phase in zip(phases, doc.io500.phases, strict=True):
        assert (row["value"], row["unit"], row["valid"]) == (phase.score, phase.unit, phase.valid)
        assert row["bytes"] == phase.figures.get("bytes")
        assert row["p50_ns"] == phase.figures.get("latency_p50_ns")
        if phase.name != "timestamp":
            assert row["value"] == pytest.approx(printed[phase.name], abs=1e-6)  # what result.txt says
    assert {p["name"]: p["bytes"] for p in phases}["ior-easy-write"] == 2 * MiB
    assert {p["name"]: p["ops"] for p in phases}["mdtest-easy-write"] == 2 * 50
    scores = {p["name"]: p["value"] for p in run["phases"] if p["kind"] == "score"}
    s = doc.io500.score
    assert scores == {"bw": s.bw_gib_per_s, "md": s.md_kiops, "score": s.score}
    assert run["score"] == s.score > 0 and run["valid"] is False
    assert run["config_hash"] == read_result(rd / "result.txt").config_hash

    before = counts(db_url)
    for path in (rd, tmpfs_dir):
        again = run_import(db_url, tmp_path, path)
        assert again.returncode == 0 and again.stdout.strip() == f"{rd}: already stored as run 1"
    assert counts(db_url) == before and before["runs"] == 1


# --- iolens profile logs ----------------------------------------------------------------------------------


def _proc(
    pid: int, rank: int, files: dict[str, dict[str, int]], start_s: int = 0, job_id: str = "job-77", **kw: Any
) -> LogSpec:
    specs = [FileSpec(i, p, 1) for i, p in enumerate(files, 1)]
    return LogSpec(
        pid=pid,
        rank=rank,
        job_id=job_id,
        files=specs,
        mounts=[MountSpec(1, "/lus", "lustre")],
        file_recs=[(0, i, c) for i, c in enumerate(files.values(), 1)],
        start_wall_ns=1_700_000_000 * S + start_s * S,
        end_ns=10 * S,
        **kw,
    )


def profile_job(directory: Path, traced: bool = False) -> Path:
    """Two ranks of one job: both read /lus/in (1 MiB reads), rank 0 writes 1000 small pieces of /lus/out."""
    directory.mkdir(parents=True, exist_ok=True)
    trace = [
        TraceSpec(start_ns=i * S // 10, dur_ns=1000, op="pwrite", file_id=2, size=100, result=100)
        for i in range(50)
    ]
    # An MPI-IO call above ten of them: the timeline counts the POSIX calls beneath it, not it as well
    trace += [
        TraceSpec(start_ns=i * S // 10, dur_ns=2000, op="MPI_File_write_at", file_id=2, size=100, result=100)
        for i in range(10)
    ]
    inp = dict(
        POSIX_OPENS=1, POSIX_STATS=40, POSIX_READS=8, POSIX_BYTES_READ=8 * MiB, POSIX_F_READ_TIME=2 * S,
        POSIX_SIZE_READ_1M_4M=8, POSIX_F_OPEN_START_TIMESTAMP=S + 1, POSIX_F_READ_END_TIMESTAMP=3 * S + 1,
    )  # fmt: skip
    out = dict(
        POSIX_OPENS=1, POSIX_WRITES=1000, POSIX_BYTES_WRITTEN=100_000, POSIX_F_WRITE_TIME=S,
        POSIX_SIZE_WRITE_100_1K=1000, POSIX_F_META_TIME=S // 2, POSIX_FSYNCS=1,
    )  # fmt: skip
    a = _proc(
        10,
        0,
        {"/lus/in": inp, "/lus/out": out},
        proc_recs=[(0, dict(OPENS=2, STATS=5, READS=8, WRITES=1000, META_TIME=3 * S))],
        flags=1 | (TRACE_ON if traced else 0),
        trace=trace if traced else [],
    )
    b = _proc(
        11, 1,
        {"/lus/in": dict(POSIX_OPENS=1, POSIX_READS=2, POSIX_BYTES_READ=2 * MiB, POSIX_F_READ_TIME=S,
                         POSIX_SIZE_READ_1M_4M=2)},
        start_s=1,
        proc_recs=[(0, dict(OPENS=1, READS=2, META_TIME=S))],
    )  # fmt: skip
    write_log(directory, a)
    write_log(directory, b)
    return directory


def test_profile_logs_are_stored_as_one_profile_per_job_with_every_file(db_url: str, tmp_path: Path) -> None:
    logs = profile_job(tmp_path / "logs", traced=True)
    r = run_import(db_url, tmp_path, logs, system="cluster")
    assert r.returncode == 0, r.stderr
    assert "stored as profile:1 (2 files)" in r.stdout
    again = run_import(db_url, tmp_path, logs)
    assert "already stored as profile:1" in again.stdout
    with Store.open(db_url, create=False) as store:
        p = queries.get_profile(store.db, 1)
        files = {f["path"]: f for f in queries.profile_files(store.db, 1)}
        raw = store.db.query_one("SELECT counters FROM profile_files WHERE path = '/lus/out'")
    assert (p["origin"], p["job_id"], p["system"], p["processes"], p["hosts"]) == (
        "iolens",
        "job-77",
        "cluster",
        2,
        1,
    )
    assert (p["bytes_read"], p["bytes_written"], p["reads"], p["writes"]) == (10 * MiB, 100_000, 10, 1000)
    assert p["read_time_s"] == pytest.approx(3.0) and p["write_time_s"] == pytest.approx(1.0)
    assert p["meta_time_s"] == pytest.approx(4.0)  # the processes' META_TIME
    assert p["opens"] == 3 and p["stats"] == 5 and p["small_ios"] == 1000 and p["files"] == 2
    assert p["started_at"] == 1_700_000_000 and p["runtime_s"] == pytest.approx(11.0)
    assert files["/lus/in"]["processes"] == 2 and files["/lus/in"]["bytes_read"] == 10 * MiB
    assert files["/lus/in"]["fs_type"] == "lustre" and files["/lus/in"]["first_s"] == pytest.approx(1.0)
    assert files["/lus/out"]["fsyncs"] == 1 and files["/lus/out"]["meta_time_s"] == pytest.approx(0.5)
    assert json.loads(raw[0])["POSIX_SIZE_WRITE_100_1K"] == 1000
    doc = p["document"]  # the profile's own JSON report, kept whole
    assert doc["summary"]["bytes_read"] == 10 * MiB and doc["advice"] is not None
    assert doc["access_sizes"]["write"][1] == 1000
    tl = doc["timeline"]  # traced: 50 writes of 100 bytes over the first 5 s
    assert sum(tl["write_ops"]) == 50 and sum(tl["write_bytes"]) == 5000 and len(tl["t_s"]) == 200
    assert sum(tl["meta_ops"]) == 0


def test_reimport_with_another_system_changes_nothing(db_url: str, tmp_path: Path) -> None:
    logs = profile_job(tmp_path / "logs")
    doc = tmp_path / "run.json"
    doc.write_text(json.dumps(sample_document()))
    assert run_import(db_url, tmp_path, logs, doc, system="lustre").returncode == 0
    before = counts(db_url)
    again = run_import(db_url, tmp_path, logs, doc, system="other")
    assert again.returncode == 0, again.stderr
    assert "already stored as profile:1" in again.stdout and "already stored as run 1" in again.stdout
    assert counts(db_url) == before
    with Store.open(db_url, create=False) as store:
        assert [s["name"] for s in queries.list_systems(store.db)] == ["lustre"]  # no empty "other"
        assert queries.get_run(store.db, 1)["system"] == "lustre"
        assert queries.get_profile(store.db, 1)["system"] == "lustre"


def test_profile_uid_is_the_hash_of_its_log_files_not_of_the_report(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    from iolens.profile import report as profile_report
    from iolens.store import profiles

    logs = profile_job(tmp_path / "logs")
    digests = sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in logs.iterdir())
    expected = hashlib.sha256(("iolens-logs\0" + "\n".join(digests)).encode()).hexdigest()
    with Store.open(db_url) as store:
        first = store.put_profile(profiles.iolens_jobs(logs)[0])
        assert first.new
        assert store.db.query_one("SELECT uid FROM profiles WHERE id = ?", (first.id,)) == (expected,)
        # A newer iolens whose report of the same logs differs finds the job stored.
        original = profile_report.job_report

        def newer_report(job: Any) -> dict[str, Any]:
            return {**original(job), "added_by_a_newer_iolens": 1}

        monkeypatch.setattr(profile_report, "job_report", newer_report)
        again = profiles.iolens_jobs(logs)[0]
        assert "added_by_a_newer_iolens" in again.summary
        assert store.put_profile(again).new is False
        # The same logs under other names, listed in another order: the same job.
        renamed = tmp_path / "renamed"
        renamed.mkdir()
        for i, p in enumerate(sorted(logs.iterdir(), reverse=True)):
            (renamed / f"copy{i}-{p.name}").write_bytes(p.read_bytes())
        assert store.put_profile(profiles.iolens_jobs(sorted(renamed.iterdir()))[0]).new is False
        # Other bytes in one log: another job record.
        changed = profile_job(tmp_path / "changed", traced=True)
        assert store.put_profile(profiles.iolens_jobs(changed)[0]).new is True
        assert queries.counts(store.db)["profiles"] == 2


def test_db_show_profile_prints_its_summary_top_files_and_advice(db_url: str, tmp_path: Path) -> None:
    logs = profile_job(tmp_path / "logs")
    assert run_import(db_url, tmp_path, logs, system="cluster").returncode == 0
    r = iolens("db", "show", "profile:1", "--db", db_url, env=iolens_env(home=tmp_path))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "profile:1 (iolens)" in out and "job job-77" in out and "cluster" in out
    assert "2 on 1 host(s)" in out and "/lus/in" in out and "/lus/out" in out
    # Each rule that fired: its title, its finding and its suggestion, as words (not a Python dict).
    assert "{'rule'" not in out and "'finding'" not in out
    # (Random access stays silent: 999 writes after each file's first are below its 1000-access floor.)
    for title in ("Small transfers", "Metadata-bound", "Imbalance across ranks"):
        assert title in out
    assert "Random access" not in out
    flat = " ".join(out.split())
    assert "1000 of 1010 reads and writes (99%) moved at most 100 KiB each" in flat
    assert "Aggregate into transfers of 1 MiB or more" in flat
    assert "rank 0 spent 6.00 s in I/O, 1.5x the mean 4.00 s of 2 ranks." in flat


def test_damaged_profile_log_is_refused_and_nothing_stored(db_url: str, tmp_path: Path) -> None:
    logs = profile_job(tmp_path / "logs")
    log = sorted(logs.iterdir())[0]
    broken = tmp_path / log.name
    broken.write_bytes(log.read_bytes())
    poke(broken, 0, b"NOTAZLOG")
    r = run_import(db_url, tmp_path, broken)
    assert r.returncode == 1 and "(nothing stored)" in r.stderr
    assert counts(db_url)["profiles"] == 0 and counts(db_url)["profile_files"] == 0


KILLED_PROFILE_WRITER = textwrap.dedent(
    """
    import sys, time
    from iolens.store import Store
    from iolens.store.records import ProfileFile, ProfileRecord

    def files():
        for i in range(50_000):
            if i == 30_000:
                print("inside", flush=True)
                time.sleep(60)
            yield ProfileFile(path=f"/scratch/f{i}", bytes_read=i)

    store = Store.open(sys.argv[1])
    store.put_profile(ProfileRecord(uid="killed", origin="iolens", summary={}, file_rows=files()), "victim")
    """
)


def test_writer_killed_in_the_middle_of_a_profile_leaves_nothing_of_it(db_url: str, tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(KILLED_PROFILE_WRITER)
    proc = subprocess.Popen(
        [sys.executable, str(script), db_url],
        stdout=subprocess.PIPE,
        text=True,
        env=iolens_env(home=tmp_path),
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "inside"  # 30 000 files written in the open transaction
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    c = counts(db_url)
    assert c["profiles"] == 0 and c["profile_files"] == 0


# --- Darshan logs -----------------------------------------------------------------------------------------


def darshan_example(name: str) -> Path:
    darshan = pytest.importorskip("darshan")
    return Path(darshan.__file__).parent / "examples" / "example_logs" / name


def test_darshan_posix_counters_map_onto_iolens_counters(db_url: str, tmp_path: Path) -> None:
    import darshan

    log = darshan_example("sample-badost.darshan")
    r = run_import(db_url, tmp_path, log)
    assert r.returncode == 0, r.stderr
    # 2048 files of the POSIX module, and the STDIO module's three (its input file, <STDOUT>, <STDERR>).
    assert "stored as profile:1 (2051 files)" in r.stdout
    assert "already stored as profile:1" in run_import(db_url, tmp_path, log).stdout

    report = darshan.DarshanReport(str(log), read_all=True)
    c = report.records["POSIX"].to_df()["counters"]
    f = report.records["POSIX"].to_df()["fcounters"]
    with Store.open(db_url, create=False) as store:
        p = queries.get_profile(store.db, 1)
        top = queries.profile_files(store.db, 1, "time", limit=1)[0]
        counters = json.loads(
            store.db.query_one(
                "SELECT counters FROM profile_files WHERE profile_id = 1 AND path = ?", (top["path"],)
            )[0]
        )
    job = report.metadata["job"]
    assert (p["origin"], p["job_id"], p["processes"]) == ("darshan", str(job["jobid"]), job["nprocs"])
    assert p["bytes_written"] == int(c["POSIX_BYTES_WRITTEN"].sum()) == 512 * 1024**3
    assert p["writes"] == int(c["POSIX_WRITES"].sum()) and p["opens"] == int(c["POSIX_OPENS"].sum())
    assert p["write_time_s"] == pytest.approx(float(f["POSIX_F_WRITE_TIME"].sum()), rel=1e-9)
    assert p["started_at"] == job["start_time_sec"] + job["start_time_nsec"] / 1e9
    # The slowest file: its counters in iolens's units (times in ns, timestamps in ns since start + 1).
    row = f.loc[(f["POSIX_F_WRITE_TIME"] + f["POSIX_F_META_TIME"]).idxmax()]
    assert counters["POSIX_F_WRITE_TIME"] == round(row["POSIX_F_WRITE_TIME"] * 1e9)
    assert counters["POSIX_F_OPEN_START_TIMESTAMP"] == round(row["POSIX_F_OPEN_START_TIMESTAMP"] * 1e9) + 1
    assert top["fs_type"] == "lustre" and top["path"].startswith("/scratch1/")
    doc = p["document"]
    assert doc["origin"] == "darshan" and doc["access_sizes"]["buckets"][-1] == "1G+"


def test_darshan_dxt_trace_gives_a_timeline(db_url: str, tmp_path: Path) -> None:
    r = run_import(db_url, tmp_path, darshan_example("dxt.darshan"))
    assert r.returncode == 0, r.stderr
    with Store.open(db_url, create=False) as store:
        tl = queries.get_profile(store.db, 1)["document"]["timeline"]
    assert sum(tl["read_ops"]) + sum(tl["write_ops"]) > 0


def test_truncated_darshan_log_is_refused_and_nothing_stored(db_url: str, tmp_path: Path) -> None:
    cut = tmp_path / "cut.darshan"
    cut.write_bytes(darshan_example("example.darshan").read_bytes()[:3000])
    junk = tmp_path / "junk.darshan"
    junk.write_bytes(b"not a darshan log" * 50)
    r = run_import(db_url, tmp_path, cut, junk)
    assert r.returncode == 1
    assert "cut.darshan: not a readable Darshan log" in r.stderr
    assert "junk.darshan: not a readable Darshan log" in r.stderr
    assert counts(db_url)["profiles"] == 0


# --- monitoring samples -----------------------------------------------------------------------------------


def monitor_stream(path: Path, samples: int = 3, host: str = "node07") -> Path:
    """A stream as `iolens monitor` writes it: a header, then sample records from the real sampler."""
    from iolens.monitor.sampler import Sampler, make_collectors

    sampler = Sampler(make_collectors(["loadavg", "meminfo", "stat", "diskstats"]))
    lines = [json.dumps({"type": "header", "host": host})]
    for _ in range(samples):
        record, _events = sampler.sample()
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_monitor_stream_is_stored_as_narrow_samples(db_url: str, tmp_path: Path) -> None:
    stream = monitor_stream(tmp_path / "mon.jsonl")
    records = [json.loads(line) for line in stream.read_text().splitlines()[1:]]
    r = run_import(db_url, tmp_path, stream)
    assert r.returncode == 0, r.stderr
    assert "stored as sample import 1" in r.stdout
    before = counts(db_url)
    assert "already stored" in run_import(db_url, tmp_path, stream).stdout
    assert counts(db_url) == before
    with Store.open(db_url, create=False) as store:
        rows = queries.samples(store.db, 0, 1e12, hosts=["node07"], metrics=["load1"])
        ctxt = queries.samples(store.db, 0, 1e12, metrics=["ctxt_per_s"])
    assert [(t, host, source, target, value) for t, host, source, target, _m, value, _u in rows] == [
        (rec["time"], "node07", "loadavg", "", rec["data"]["loadavg"]["load1"]) for rec in records
    ]
    assert len(ctxt) == 2  # rates from the second sample on
    assert ctxt[0][5] == pytest.approx(records[1]["rates"]["stat"]["ctxt"])


def test_narrow_samples_and_run_windows(db_url: str, tmp_path: Path) -> None:
    from .db_helpers import ior_document

    lines = [
        json.dumps({"t": 1777600000 + i, "host": "n1", "source": "lustre", "target": "OST0001",
                    "metric": "write_bytes_per_s", "value": 1e9 + i, "unit": "B/s"})
        for i in range(-60, 120)
    ]  # fmt: skip
    (tmp_path / "narrow.ndjson").write_text("\n".join(lines) + "\n")
    doc = ior_document(1 << 30, started="2026-05-01T02:00:00Z")  # 1777600800: the run lasts 30 s
    doc["started_at"], doc["ended_at"] = "2026-05-01T01:46:40Z", "2026-05-01T01:47:10Z"  # 1777600000 .. +30
    (tmp_path / "run.json").write_text(json.dumps(doc))
    r = run_import(db_url, tmp_path, tmp_path / "narrow.ndjson", tmp_path / "run.json")
    assert r.returncode == 0, r.stderr
    with Store.open(db_url, create=False) as store:
        window = queries.run_samples(store.db, 1, margin_s=10)
    assert [row[0] - 1777600000 for row in window] == list(range(-10, 41))
    assert window[0][6] == "B/s" and window[0][3] == "OST0001"


def test_truncated_or_bad_sample_stream_is_refused_and_nothing_stored(db_url: str, tmp_path: Path) -> None:
    stream = monitor_stream(tmp_path / "mon.jsonl", samples=4)
    text = stream.read_text()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(text[: len(text) - 40])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text + '{"t": "yesterday", "host": "h", "source": "s", "metric": "m", "value": 1}\n')
    r = run_import(db_url, tmp_path, cut, bad)
    assert r.returncode == 1
    assert "cut.jsonl:5: not a JSON object (the file ends in the middle of a line: truncated?)" in r.stderr
    assert "bad.jsonl:6: t: expected a number" in r.stderr
    c = counts(db_url)
    assert c["samples"] == 0 and c["series"] == 0


def _read_position(pid: int, path: Path) -> int | None:
    """Where process pid is in reading path (its open file's offset), None when it has it not open."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != str(path):
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                for line in info:
                    if line.startswith("pos:"):
                        return int(line.split()[1])
        except OSError:
            continue
    return None


def _writer_in_transaction(url: str) -> bool:
    """Whether another connection has a transaction open (SQLite: holds the write lock)."""
    if url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
            ).fetchone()
        return bool(row and row[0])
    import sqlite3

    conn = sqlite3.connect(url, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:  # database is locked: the writer's transaction
        return True
    finally:
        conn.close()


def test_db_import_killed_in_the_middle_of_a_sample_file_leaves_nothing_and_a_reimport_stores_it_all(
    db_url: str, tmp_path: Path
) -> None:
    big = tmp_path / "n1.jsonl"
    with open(big, "w") as f:  # 500 000 samples: 5000 records of 100 series
        f.write(json.dumps({"type": "header", "host": "n1"}) + "\n")
        for i in range(5000):
            data = {f"cpu{c}": {f"m{m}": i * m + c for m in range(10)} for c in range(10)}
            f.write(json.dumps({"type": "sample", "time": 1_700_000_000 + i, "data": {"stat": data}}) + "\n")
    size = big.stat().st_size
    Store.open(db_url).close()  # the schema is there: the import's only transaction is the file's
    proc = subprocess.Popen(
        [sys.executable, "-m", "iolens", "db", "import", str(big), "--db", db_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=iolens_env(home=tmp_path),
    )
    # The file is hashed before the transaction begins, then read again inside it: the import is half-way
    # when its transaction is open and it has read between a third and two thirds of the file.
    caught = None
    while proc.poll() is None:
        pos = _read_position(proc.pid, big)
        if pos is not None and size // 3 < pos < 2 * size // 3 and _writer_in_transaction(db_url):
            os.kill(proc.pid, signal.SIGKILL)
            caught = pos
            break
        time.sleep(0.01)
    proc.communicate(timeout=60)
    assert caught is not None, "the import ended before it was caught half-way"
    assert proc.returncode == -signal.SIGKILL
    with Store.open(db_url, create=False) as store:
        assert store.db.query_one("SELECT COUNT(*) FROM sample_imports") == (0,)
    c = counts(db_url)
    assert (c["samples"], c["series"], c["runs"]) == (0, 0, 0)

    again = run_import(db_url, tmp_path, big)
    assert again.returncode == 0, again.stderr
    assert "(500000 samples in 100 series)" in again.stdout and "already" not in again.stdout
    c = counts(db_url)
    assert (c["samples"], c["series"]) == (500_000, 100)
    with Store.open(db_url, create=False) as store:
        assert store.db.query_one("SELECT samples, series, t_min, t_max FROM sample_imports") == (
            500_000,
            100,
            1_700_000_000,
            1_700_004_999,
        )


def test_jobs_are_ranked_by_bytes_metadata_share_and_small_ios(db_url: str, tmp_path: Path) -> None:
    profile_job(tmp_path / "a")
    heavy = tmp_path / "b"
    heavy.mkdir()
    write_log(
        heavy,
        _proc(20, 0, {"/lus/big": dict(POSIX_OPENS=1, POSIX_WRITES=4, POSIX_BYTES_WRITTEN=4 << 30,
                                       POSIX_F_WRITE_TIME=8 * S, POSIX_SIZE_WRITE_1G_PLUS=4)},
              proc_recs=[(0, dict(OPENS=1, WRITES=4, META_TIME=S // 10))], job_id="big"),
    )  # fmt: skip
    assert run_import(db_url, tmp_path, tmp_path / "a", heavy).returncode == 0
    env = iolens_env(home=tmp_path)
    by_bytes = iolens("db", "jobs", "--db", db_url, env=env).stdout
    by_meta = iolens("db", "jobs", "--by", "meta", "--db", db_url, env=env).stdout
    by_small = iolens("db", "jobs", "--by", "small", "--db", db_url, env=env).stdout

    def order(text: str) -> list[str]:
        return [line.split()[0] for line in text.splitlines() if line.startswith("profile:")]

    assert order(by_bytes) == ["profile:2", "profile:1"]
    assert order(by_meta) == ["profile:1", "profile:2"]  # 4 s of 8 s against 0.1 of 8.1
    assert order(by_small) == ["profile:1", "profile:2"]
    assert "50.0%" in by_meta and "1,000" in by_small
    assert iolens("db", "jobs", "--by", "size", "--db", db_url, env=env).returncode == 2


def test_python_api_jobs_since(db_url: str, tmp_path: Path) -> None:
    from iolens.store import api

    profile_job(tmp_path / "a")  # started 2023-11-14T22:13:20Z (epoch 1 700 000 000)
    later = tmp_path / "b"
    later.mkdir()
    write_log(later, _proc(20, 0, {"/lus/x": dict(POSIX_OPENS=1)}, start_s=86400, job_id="next-day"))
    assert run_import(db_url, tmp_path, tmp_path / "a", later).returncode == 0
    store = api.open_store(db_url)
    try:
        assert list(api.jobs(store)["job_id"]) == ["job-77", "next-day"]
        assert list(api.jobs(store, since=1_700_000_000 + 3600)["job_id"]) == ["next-day"]
        assert list(api.jobs(store, since="2023-11-01")["job_id"]) == ["job-77", "next-day"]
        assert api.jobs(store, since="7d").empty  # both are years old
    finally:
        store.close()


def test_document_with_monitor_samples_stores_them_and_the_phase_windows(db_url: str, tmp_path: Path) -> None:
    """A run with --monitor has a "monitor" object (made here by iolens.monitor's own RunMonitor): the phase
    windows go on the phase rows, the samples of the sampled node into the samples."""
    from iolens.monitor.attach import MonitorRequest, RunMonitor

    from .db_helpers import ior_document

    mon = RunMonitor(MonitorRequest(0.05), "ior", ["loadavg", "stat"]).start()
    time.sleep(0.4)
    mon.stop()
    doc = ior_document(1 << 30)
    doc["started_at"] = datetime.fromtimestamp(mon.started, timezone.utc).isoformat().replace("+00:00", "Z")
    doc["ended_at"] = datetime.fromtimestamp(mon.ended, timezone.utc).isoformat().replace("+00:00", "Z")
    doc["monitor"] = mon.section(doc)
    # Under MPI, another node's own samples (written by its local rank 0) are stored under its host.
    other = {"type": "sample", "time": mon.started + 0.1, "data": {"loadavg": {"load1": 7.5}}, "rates": {}}
    node = {"host": "node-b", "interval": "1 s", "complete": True, "sources": {}, "events": [], "windows": []}
    doc["monitor"]["nodes"] = {"node-b": {**node, "samples": [other]}}
    windows = {w["name"]: (w["start"], w["end"]) for w in doc["monitor"]["windows"]}
    host = doc["monitor"]["host"]
    path = tmp_path / "monitored.json"
    path.write_text(json.dumps(doc))
    r = run_import(db_url, tmp_path, path)
    assert r.returncode == 0, r.stderr
    with Store.open(db_url, create=False) as store:
        run = queries.get_run(store.db, 1)
        rows = queries.samples(store.db, mon.started - 1, mon.ended + 1, hosts=[host], metrics=["load1"])
        span = (mon.started - 1, mon.ended + 1)
        node_rows = queries.samples(store.db, *span, hosts=["node-b"], metrics=["load1"])
    assert [row[5] for row in node_rows] == [7.5]
    assert {p["name"]: (p["started_at"], p["ended_at"]) for p in run["phases"]} == windows
    records = [rec for rec in doc["monitor"]["samples"] if "loadavg" in rec["data"]]
    assert len(records) >= 3
    assert [row[5] for row in rows] == [rec["data"]["loadavg"]["load1"] for rec in records]
    assert "already stored as run 1" in run_import(db_url, tmp_path, path).stdout
