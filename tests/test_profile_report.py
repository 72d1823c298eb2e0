"""The profile report: its figures (exact, from synthetic logs), every advice rule firing with its evidence
and staying quiet just below its threshold, the JSON structure that docs/profile.md documents, the text
view, and a 100k-file log read and reported (its speed and memory are bench/profile_report.py's)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from iolens.profile import advice
from iolens.profile.job import Job, load_job
from iolens.profile.report import build, job_report, print_report

from .conftest import REPO
from .profile_logs import (
    EXEC,
    NOT_REGULAR,
    FileSpec,
    LogSpec,
    MountSpec,
    log_name,
    many_files_spec,
    write_log,
)

MiB = 1 << 20
S = 10**9  # ns per second


def proc_log(pid: int, files: dict[str, dict[str, int]], rank: int = -1, **kw: Any) -> LogSpec:
    """A one-thread process with the given files (counters by name), all on /lus (lustre)."""
    proc = kw.pop("proc", {})
    specs = [FileSpec(i, p, 1) for i, p in enumerate(files, 1)]
    return LogSpec(
        pid=pid,
        rank=rank,
        files=specs,
        mounts=[MountSpec(1, "/lus", "lustre")],
        file_recs=[(0, i, c) for i, c in enumerate(files.values(), 1)],
        proc_recs=[(0, proc)],
        **kw,
    )


def report_of(tmp_path: Path, *specs: LogSpec) -> tuple[Job, dict[str, Any]]:
    d = tmp_path / f"job{len(list(tmp_path.iterdir()))}"
    d.mkdir()
    for s in specs:
        write_log(d, s)
    job = load_job(d)
    return job, job_report(job)


def fired(r: dict[str, Any], rule: str) -> dict[str, Any] | None:
    return next((a for a in r["advice"] if a["rule"] == rule), None)


# --- figures ------------------------------------------------------------------------------------------------


def figures_job(tmp_path: Path) -> tuple[Job, dict[str, Any]]:
    a = proc_log(
        10,
        {
            "/lus/in": dict(
                POSIX_OPENS=1, POSIX_READS=8, POSIX_BYTES_READ=8 * MiB, POSIX_F_READ_TIME=2 * S,
                POSIX_SIZE_READ_1M_4M=8, POSIX_SEQ_READS=8, POSIX_CONSEC_READS=6,
                POSIX_ACCESS1_ACCESS=MiB, POSIX_ACCESS1_COUNT=8,
            ),
            "/lus/out": dict(
                POSIX_OPENS=1, POSIX_WRITES=4, POSIX_BYTES_WRITTEN=400, POSIX_F_WRITE_TIME=S,
                POSIX_SIZE_WRITE_100_1K=4, POSIX_F_META_TIME=S // 2, POSIX_FSYNCS=1,
            ),
            "/lus/both": dict(
                POSIX_OPENS=1, POSIX_READS=1, POSIX_WRITES=1, POSIX_BYTES_READ=10, POSIX_BYTES_WRITTEN=20,
                POSIX_SIZE_READ_0_100=1, POSIX_SIZE_WRITE_0_100=1, POSIX_ACCESS1_ACCESS=10,
                POSIX_ACCESS1_COUNT=1, POSIX_ACCESS2_ACCESS=20, POSIX_ACCESS2_COUNT=1,
            ),
            "/lus/stat-only": {"POSIX_STATS": 3},
        },
        rank=0,
        proc=dict(OPENS=4, STATS=3, READS=9, WRITES=5, MKDIRS=2, META_TIME=S, UNTRACKED_OPS=7),
        start_wall_ns=1_700_000_000 * S,
        end_ns=10 * S,
    )  # fmt: skip
    b = proc_log(
        11,
        {"/lus/in": {"POSIX_OPENS": 1, "POSIX_READS": 2, "POSIX_BYTES_READ": 2 * MiB, "POSIX_F_READ_TIME": S,
                     "POSIX_SIZE_READ_1M_4M": 2, "POSIX_ACCESS1_ACCESS": MiB, "POSIX_ACCESS1_COUNT": 2}},
        rank=1,
        proc={"OPENS": 1, "READS": 2, "META_TIME": S // 4},
        start_wall_ns=1_700_000_000 * S + 2 * S, end_ns=9 * S,
    )  # fmt: skip
    b.files.append(FileSpec(9, "/dev/pts/1", 2, NOT_REGULAR))
    b.mounts.append(MountSpec(2, "/dev/pts", "devpts"))
    b.file_recs.append((0, 9, {"POSIX_WRITES": 3, "POSIX_BYTES_WRITTEN": 333}))
    return report_of(tmp_path, a, b)


def test_summary_figures(tmp_path: Path) -> None:
    _, r = figures_job(tmp_path)
    s = r["summary"]
    assert s["run_time_s"] == pytest.approx(11.0)  # first start to last end: 0 .. 2 + 9
    assert (s["processes"], s["logs"], s["ranks"], s["hosts"]) == (2, 2, 2, 1)
    assert s["files"] == {
        "total": 4, "read_only": 1, "write_only": 1, "read_write": 1, "no_data": 1, "opened": 3,
        "not_regular": 1, "excluded": 0,
    }  # fmt: skip
    assert s["bytes_read"] == 10 * MiB + 10 and s["bytes_written"] == 420
    assert s["reads"] == 11 and s["writes"] == 5
    assert s["metadata_ops"] == 4 + 3 + 2 + 1  # opens, stats, mkdirs of both processes
    assert s["read_time_s"] == pytest.approx(3.0) and s["write_time_s"] == pytest.approx(1.0)
    assert s["meta_time_s"] == pytest.approx(1.25) and s["io_time_s"] == pytest.approx(5.25)
    # Slowest process: rank 0 with 2 s read + 1 s write + 1 s metadata.
    assert s["slowest_process_io_time_s"] == pytest.approx(4.0)
    assert s["io_time_share"] == pytest.approx(4.0 / 11.0)
    assert s["io_rate_bytes_per_s"] == pytest.approx((10 * MiB + 10 + 420) / 4.0)
    assert s["not_regular"] == {"files": 1, "bytes_read": 0, "bytes_written": 333}
    assert s["untracked_ops"] == 7 and s["unclean_logs"] == 0 and s["truncated_logs"] == 0


def test_operations_sizes_and_patterns(tmp_path: Path) -> None:
    _, r = figures_job(tmp_path)
    assert r["operations"]["OPENS"] == 5 and r["operations"]["MKDIRS"] == 2
    assert "READ_TIME" not in r["operations"] and "BYTES_READ" not in r["operations"]
    sizes = r["access_sizes"]
    assert sizes["buckets"] == [
        "0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M", "10M-100M", "100M-1G", "1G+"
    ]  # fmt: skip
    assert sizes["read"] == [1, 0, 0, 0, 0, 10, 0, 0, 0, 0] and sizes["write"] == [
        1,
        4,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ]
    p = r["access_patterns"]
    assert (p["reads"], p["seq_reads"], p["consec_reads"], p["fsyncs"]) == (11, 8, 6, 1)
    assert p["common_access_sizes"] == [[MiB, 10], [10, 1], [20, 1]]


def test_top_files_mounts_ranks_and_tree(tmp_path: Path) -> None:
    _, r = figures_job(tmp_path)
    by_bytes = [f["path"] for f in r["top_files_by_bytes"]]
    assert by_bytes == ["/lus/in", "/lus/out", "/dev/pts/1", "/lus/both"]
    top = r["top_files_by_bytes"][0]
    assert top["processes"] == 2 and top["bytes_read"] == 10 * MiB and top["fs_type"] == "lustre"
    assert top["read_time_s"] == pytest.approx(3.0)
    assert [f["path"] for f in r["top_files_by_time"]] == ["/lus/in", "/lus/out"]
    (m,) = r["mounts"]
    assert (m["mount"], m["fs_type"], m["files"]) == ("/lus", "lustre", 3)
    assert m["bytes_read"] == 10 * MiB + 10 and m["meta_time_s"] == pytest.approx(0.5)
    assert [(x["rank"], x["files"], x["io_time_s"]) for x in r["ranks"]] == [(0, 3, 4.0), (1, 1, 1.25)]
    imb = r["rank_imbalance"]
    assert imb["io_time_s"]["max_rank"] == 0 and imb["io_time_max_over_mean"] == pytest.approx(4.0 / 2.625)
    assert [p["pid"] for p in r["processes"]] == [10, 11] and len(r["roots"]) == 2


# --- advice: each rule fires with its evidence, and not without ---------------------------------------------


def one(tmp_path: Path, counters: dict[str, int], **kw: Any) -> dict[str, Any]:
    return report_of(tmp_path, proc_log(1, {"/lus/f": counters}, **kw))[1]


def test_small_transfers(tmp_path: Path) -> None:
    r = one(tmp_path, {"POSIX_READS": 1000, "POSIX_SIZE_READ_1K_10K": 600, "POSIX_SIZE_READ_1M_4M": 400})
    a = fired(r, "small_transfers")
    assert a is not None and a["evidence"]["small_accesses"] == 600 and a["evidence"]["accesses"] == 1000
    assert a["evidence"]["small_share"] == pytest.approx(0.6) and "600 of 1000" in a["finding"]
    assert a["thresholds"]["small_access_bytes"] == 100 * 1024 and "1 MiB" in a["suggestion"]
    r = one(tmp_path, {"POSIX_READS": 1000, "POSIX_SIZE_READ_10K_100K": 499, "POSIX_SIZE_READ_100K_1M": 501})
    assert fired(r, "small_transfers") is None
    assert (
        fired(one(tmp_path, {"POSIX_READS": 999, "POSIX_SIZE_WRITE_0_100": 999}), "small_transfers") is None
    )
    half = one(tmp_path, {"POSIX_SIZE_READ_0_100": 500, "POSIX_SIZE_READ_100K_1M": 500})
    assert fired(half, "small_transfers") is not None  # the threshold is "at least half"


def test_metadata_bound(tmp_path: Path) -> None:
    r = one(tmp_path, {"POSIX_F_READ_TIME": 2 * S}, proc={"META_TIME": 3 * S // 2, "OPENS": 5000, "STATS": 9})
    a = fired(r, "metadata_bound")
    assert a is not None and a["evidence"]["meta_time_s"] == pytest.approx(1.5)
    assert a["evidence"]["meta_share"] == pytest.approx(1.5 / 3.5) and a["evidence"]["opens"] == 5000
    below_share = one(tmp_path, {"POSIX_F_READ_TIME": 3 * S}, proc={"META_TIME": 6 * S // 5})
    assert fired(below_share, "metadata_bound") is None  # 1.2 of 4.2 s: 29%
    too_short = one(tmp_path, {"POSIX_F_READ_TIME": S // 10}, proc={"META_TIME": 9 * S // 10})
    assert fired(too_short, "metadata_bound") is None  # 90% but under a second


def small_files_job(tmp_path: Path, n_small: int, n_big: int) -> dict[str, Any]:
    # MAX_BYTE is the offset of the last byte (Darshan's meaning): files of 4 KiB and of 8 MiB
    files = {f"/lus/s{i}": {"POSIX_WRITES": 1, "POSIX_MAX_BYTE_WRITTEN": 4095} for i in range(n_small)}
    files |= {f"/lus/b{i}": {"POSIX_READS": 1, "POSIX_MAX_BYTE_READ": 8 * MiB - 1} for i in range(n_big)}
    return report_of(tmp_path, proc_log(1, files))[1]


def test_many_small_files(tmp_path: Path) -> None:
    a = fired(small_files_job(tmp_path, 100, 0), "many_small_files")
    assert (
        a is not None and a["evidence"]["small_files"] == 100 and a["evidence"]["median_file_bytes"] == 4096
    )
    assert fired(small_files_job(tmp_path, 99, 0), "many_small_files") is None
    assert fired(small_files_job(tmp_path, 49, 51), "many_small_files") is None
    a = fired(small_files_job(tmp_path, 50, 50), "many_small_files")
    assert a is not None and a["evidence"]["small_share"] == pytest.approx(0.5)


def test_random_access(tmp_path: Path) -> None:
    # The first read of each (thread, file) follows no other and is left out: 1001 reads are 1000 that count.
    a = fired(one(tmp_path, {"POSIX_READS": 1001, "POSIX_SEQ_READS": 400}), "random_access")
    assert a is not None
    assert a["evidence"] == {"reads": 1001, "first_reads": 1, "seq_reads": 400, "seq_read_share": 0.4}
    assert "600 of 1000 reads after the first of each file (60%)" in a["finding"]
    assert fired(one(tmp_path, {"POSIX_READS": 1001, "POSIX_SEQ_READS": 500}), "random_access") is None
    assert fired(one(tmp_path, {"POSIX_WRITES": 1000}), "random_access") is None
    a = fired(one(tmp_path, {"POSIX_WRITES": 2000, "POSIX_SEQ_WRITES": 10}), "random_access")
    assert a is not None and "seq_write_share" in a["evidence"] and "reads" not in a["evidence"]


def test_files_accessed_once_each_are_not_random_access(tmp_path: Path) -> None:
    """1200 files written once each, 1200 read once each: no access has a previous one to follow."""
    files = {f"/lus/w{i}": {"POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": 10} for i in range(1200)}
    files |= {f"/lus/r{i}": {"POSIX_READS": 1, "POSIX_BYTES_READ": 10} for i in range(1200)}
    _, rep = report_of(tmp_path, proc_log(1, files))
    p = rep["access_patterns"]
    assert (p["writes"], p["first_writes"], p["reads"], p["first_reads"]) == (1200, 1200, 1200, 1200)
    assert fired(rep, "random_access") is None


def test_each_thread_and_process_has_its_own_first_access(tmp_path: Path) -> None:
    """One file read 600 times at random by each of two threads of a process, and by another process: three
    first reads, 1797 that count, none sequential."""
    spec = proc_log(1, {"/lus/f": {}})
    spec.file_recs = [(0, 1, {"POSIX_READS": 600}), (1, 1, {"POSIX_READS": 600})]
    _, rep = report_of(tmp_path, spec, proc_log(2, {"/lus/f": {"POSIX_READS": 600}}))
    assert rep["access_patterns"]["first_reads"] == 3
    a = fired(rep, "random_access")
    assert a is not None and "1797 of 1797 reads after the first" in a["finding"]


def test_misaligned(tmp_path: Path) -> None:
    a = fired(one(tmp_path, {"POSIX_WRITES": 1000, "POSIX_FILE_NOT_ALIGNED": 500}), "misaligned")
    assert a is not None and a["evidence"]["fs_types"] == ["lustre"] and "on lustre" in a["finding"]
    assert fired(one(tmp_path, {"POSIX_WRITES": 1000, "POSIX_FILE_NOT_ALIGNED": 499}), "misaligned") is None


def test_fsync_heavy(tmp_path: Path) -> None:
    a = fired(one(tmp_path, {"POSIX_WRITES": 1000, "POSIX_FSYNCS": 60, "POSIX_FDSYNCS": 40}), "fsync_heavy")
    assert a is not None and a["evidence"]["syncs"] == 100 and a["evidence"]["writes_per_sync"] == 10.0
    assert fired(one(tmp_path, {"POSIX_WRITES": 99, "POSIX_FSYNCS": 99}), "fsync_heavy") is None
    assert fired(one(tmp_path, {"POSIX_WRITES": 1010, "POSIX_FSYNCS": 100}), "fsync_heavy") is None


def test_shared_read_after_write(tmp_path: Path) -> None:
    # Timestamps are ns since each process's start + 1; both logs start at the same wall-clock time here.
    def w(at: int) -> dict[str, int]:
        return {"POSIX_WRITES": 5, "POSIX_BYTES_WRITTEN": 5 * MiB, "POSIX_F_WRITE_START_TIMESTAMP": at}

    def r(at: int) -> dict[str, int]:
        return {"POSIX_READS": 5, "POSIX_BYTES_READ": 5 * MiB, "POSIX_F_READ_START_TIMESTAMP": at}

    _, rep = report_of(tmp_path, proc_log(1, {"/lus/x": w(100)}), proc_log(2, {"/lus/x": r(200)}))
    a = fired(rep, "shared_read_after_write")
    assert a is not None and a["evidence"]["files"] == 1
    assert a["evidence"]["examples"] == [{"path": "/lus/x", "processes": 2, "writers": 1, "readers": 1}]
    # Read first, then overwritten by another process (`cat a; cp b a`): no reader saw the writer's data.
    _, rep = report_of(tmp_path, proc_log(1, {"/lus/x": r(100)}), proc_log(2, {"/lus/x": w(200)}))
    assert fired(rep, "shared_read_after_write") is None
    # One process writes and reads its own file; the other only reads another one.
    _, rep = report_of(tmp_path, proc_log(1, {"/lus/x": w(100) | r(200)}), proc_log(2, {"/lus/y": r(300)}))
    assert fired(rep, "shared_read_after_write") is None
    # Two readers, no writer.
    _, rep = report_of(tmp_path, proc_log(1, {"/lus/x": r(100)}), proc_log(2, {"/lus/x": r(200)}))
    assert fired(rep, "shared_read_after_write") is None
    # A process that writes and reads, and another that reads later.
    _, rep = report_of(tmp_path, proc_log(1, {"/lus/x": w(100) | r(150)}), proc_log(2, {"/lus/x": r(200)}))
    a = fired(rep, "shared_read_after_write")
    assert a is not None and a["evidence"]["examples"][0]["readers"] == 2
    # The earliest writer reads after a second writer's first write: that read may see the other's data.
    _, rep = report_of(tmp_path, proc_log(1, {"/lus/x": w(100) | r(300)}), proc_log(2, {"/lus/x": w(200)}))
    assert fired(rep, "shared_read_after_write") is not None
    # A read whose time the log does not have is taken as the earliest it can be: no advice on a guess.
    no_time = {"POSIX_READS": 5, "POSIX_BYTES_READ": 5 * MiB}
    _, rep = report_of(tmp_path, proc_log(1, {"/lus/x": w(100)}), proc_log(2, {"/lus/x": no_time}))
    assert fired(rep, "shared_read_after_write") is None


def test_a_process_that_execs_is_one_process(tmp_path: Path) -> None:
    """`sh -c 'echo hello > ef; exec cat ef'`: the shell's log (ended by exec) and cat's log, which goes on
    under the same pid, are one process: it wrote and then read its own file."""
    sh = proc_log(10, {"/lus/ef": {"POSIX_WRITES": 1, "POSIX_F_WRITE_START_TIMESTAMP": 100}}, flags=EXEC)
    cat = proc_log(10, {"/lus/ef": {"POSIX_READS": 2, "POSIX_F_READ_START_TIMESTAMP": 50}})
    cat.parent_log = log_name(sh, compressed=False)
    cat.start_wall_ns = sh.start_wall_ns + 1000
    d = tmp_path / "exec"
    d.mkdir()
    write_log(d, sh)
    write_log(d, cat, n=1)
    job = load_job(d)
    rep = job_report(job)
    assert fired(rep, "shared_read_after_write") is None
    ef = job.files.row_of["/lus/ef"]
    assert (job.procs[ef], job.writers[ef], job.readers[ef], job.both[ef]) == (1, 1, 1, 1)
    assert rep["summary"]["processes"] == 1


def ranks_job(tmp_path: Path, times_s: list[float], bytes_: list[int] | None = None) -> dict[str, Any]:
    specs = []
    for rank, t in enumerate(times_s):
        moved = bytes_[rank] if bytes_ else 0
        specs.append(
            proc_log(
                100 + rank,
                {
                    f"/lus/r{rank}": {
                        "POSIX_WRITES": 1,
                        "POSIX_F_WRITE_TIME": int(t * S),
                        "POSIX_BYTES_WRITTEN": moved,
                    }
                },
                rank=rank,
            )
        )
    return report_of(tmp_path, *specs)[1]


def test_rank_imbalance(tmp_path: Path) -> None:
    a = fired(ranks_job(tmp_path, [1, 1, 1, 3]), "rank_imbalance")
    assert a is not None and a["evidence"]["ranks"] == 4
    assert a["evidence"]["io_time_s"]["max_rank"] == 3 and a["evidence"]["io_time_s"][
        "mean"
    ] == pytest.approx(1.5)
    assert "rank 3 spent 3.00 s" in a["finding"] and "bytes" not in a["evidence"]
    assert fired(ranks_job(tmp_path, [1, 1, 1, 1.6]), "rank_imbalance") is None  # 1.39x the mean
    assert fired(ranks_job(tmp_path, [0.1, 0.1, 0.1, 0.5]), "rank_imbalance") is None  # under a second
    a = fired(ranks_job(tmp_path, [1, 1], [0, 128 * MiB]), "rank_imbalance")
    assert a is not None and a["evidence"]["bytes"]["max_rank"] == 1 and "io_time_s" not in a["evidence"]
    assert fired(ranks_job(tmp_path, [5.0]), "rank_imbalance") is None  # one rank: nothing to compare


def test_a_quiet_job_gets_no_advice(tmp_path: Path) -> None:
    quiet = dict(POSIX_READS=5000, POSIX_SEQ_READS=5000, POSIX_SIZE_READ_1M_4M=5000, POSIX_F_READ_TIME=10 * S)
    r = one(tmp_path, quiet, proc={"META_TIME": S})
    assert r["advice"] == []
    assert "no rule fired" in render({"jobs": [r]})
    # The figures job's ranks differ by 1.52x: that alone fires.
    _, r = figures_job(tmp_path)
    assert [a["rule"] for a in r["advice"]] == ["rank_imbalance"]


def test_every_rule_is_documented_with_its_thresholds() -> None:
    doc = (REPO / "docs" / "profile.md").read_text()
    for rule in advice.RULES:
        assert f"`{rule.__name__}`" in doc, rule.__name__
    for name in ("MIN_ACCESSES", "SMALL_ACCESS_SHARE", "META_SHARE", "MIN_META_TIME_S", "MIN_FILES",
                 "SMALL_FILE_SHARE", "SEQ_SHARE", "MISALIGNED_SHARE", "MIN_SYNCS", "SYNCS_PER_WRITE",
                 "IMBALANCE_RATIO", "MIN_IMBALANCE_TIME_S"):  # fmt: skip
        value = getattr(advice, name)
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        assert re.search(rf"\b{re.escape(shown)}\b", doc), f"{name} = {shown} is not in docs/profile.md"


# --- JSON and text ------------------------------------------------------------------------------------------


def _keys(obj: Any, prefix: str = "") -> set[str]:
    out: set[str] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.add(k)
            out |= _keys(v, k)
    elif isinstance(obj, list) and obj:
        out |= _keys(obj[0], prefix)
    return out


def everything_job(tmp_path: Path) -> dict[str, Any]:
    """A job on which every rule fires."""
    files = {
        "/lus/x": dict(
            POSIX_WRITES=2000, POSIX_SIZE_WRITE_1K_10K=2000, POSIX_FILE_NOT_ALIGNED=2000, POSIX_FSYNCS=300,
            POSIX_F_WRITE_TIME=5 * S, POSIX_BYTES_WRITTEN=2000 * 4096, POSIX_F_WRITE_START_TIMESTAMP=100,
        ),
        **{f"/lus/small{i}": {"POSIX_WRITES": 1, "POSIX_MAX_BYTE_WRITTEN": 100} for i in range(100)},
    }  # fmt: skip
    r0 = proc_log(1, files, rank=0, proc={"META_TIME": 10 * S, "OPENS": 101})
    r1 = proc_log(
        2,
        {"/lus/x": {"POSIX_READS": 10, "POSIX_F_READ_TIME": S // 10, "POSIX_F_READ_START_TIMESTAMP": 200}},
        rank=1,
    )
    return report_of(tmp_path, r0, r1)[1]


def test_json_structure_is_documented(tmp_path: Path) -> None:
    job, _ = figures_job(tmp_path)
    doc = build([job], str(tmp_path))
    doc["jobs"].append(everything_job(tmp_path))
    assert sorted(a["rule"] for a in doc["jobs"][1]["advice"]) == sorted(r.__name__ for r in advice.RULES)
    text = json.dumps(doc)
    assert json.loads(text)["schema"] == "iolens-profile-report" and doc["schema_version"] == 1
    documented = (REPO / "docs" / "profile.md").read_text()
    keys = _keys(doc)
    for a in doc["jobs"][1]["advice"]:
        keys |= _keys(a)
    counter_like = re.compile(r"^[A-Z][A-Z0-9_]+$")  # counter names in "operations": the schema's own
    missing = sorted(k for k in keys if not counter_like.match(k) and f"`{k}`" not in documented)
    assert missing == [], f"keys of the JSON report not documented in docs/profile.md: {missing}"


def render(doc: dict[str, Any], width: int = 120) -> str:
    buf = io.StringIO()
    print_report(doc, Console(file=buf, width=width, force_terminal=False, highlight=False))
    return buf.getvalue()


def test_text_report_shows_the_figures(tmp_path: Path) -> None:
    odd = "/lus/[bold]weird[/bold] name"
    _, rep = report_of(
        tmp_path,
        proc_log(
            1,
            {odd: dict(POSIX_WRITES=2000, POSIX_BYTES_WRITTEN=3 * MiB, POSIX_SIZE_WRITE_1K_10K=2000)},
            cmdline=["my app", "--x"],
        ),
    )  # fmt: skip
    text = render({"jobs": [rep]})
    assert odd in text  # not taken for rich markup
    assert "3.00 MiB in 2000 writes" in text and "Small transfers" in text and "2000 of 2000" in text
    assert "'my app' --x" in text and "lustre" in text and "1K-10K" in text
    narrow = render({"jobs": [rep]}, width=80)
    assert "3.00 MiB" in narrow


# --- a 100k-file log ----------------------------------------------------------------------------------------


def test_100k_file_log_is_read_and_reported(tmp_path: Path) -> None:
    """A log naming 100 000 files (FILE_REC and FILE_DATA records, as the runtime writes them) reads whole
    and its report adds up. How fast, and in how much memory, is bench/profile_report.py's to say."""
    spec = many_files_spec(100_000)
    path = write_log(tmp_path, spec)
    job = load_job(path)
    assert len(job.files) == 100_000 and job.file("/scratch/run/out/part-054321.dat")["POSIX_OPENS"] == 2
    rep = job_report(job)
    _, values = spec.bulk_file_recs or (None, None)
    names = [n for n, _ in spec.file_counters] + [n for n, _ in spec.file_data_counters]
    assert values is not None
    written = int(values[:, names.index("POSIX_BYTES_WRITTEN")].sum())
    assert rep["summary"]["bytes_written"] == rep["summary"]["bytes_read"] == written
    assert rep["summary"]["files"]["total"] == 100_000
    buf = io.StringIO()
    print_report(build([job], str(tmp_path)), Console(file=buf, width=200))
    assert "part-" in buf.getvalue()


def test_exec_notes_are_one_line_with_a_count(tmp_path: Path) -> None:
    """A shell script (or a pyenv shim) execs again and again: the report says so once, with the count."""
    specs = [proc_log(20 + i, {"/lus/f": {"POSIX_OPENS": 1}}, flags=EXEC) for i in range(38)]
    job, rep = report_of(tmp_path, *specs, proc_log(99, {"/lus/f": {"POSIX_OPENS": 1}}))
    notes = [m for m in rep["messages"] if "exec" in m]
    assert notes == ["38 logs end where the process called exec: it goes on in its successor's log"]
    buf = io.StringIO()
    print_report(build([job], str(tmp_path)), Console(file=buf, width=200))
    assert buf.getvalue().count("called exec") == 1
