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
from iolens.profile.job import Job, load_job, load_jobs
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
    """A one-process job of 10 s with one file on /lus (lustre; mount="/shm" puts it on a tmpfs)."""
    mount = kw.pop("mount", None)
    spec = proc_log(1, {"/lus/f": counters}, **kw)
    if mount == "/shm":
        spec.mounts = [MountSpec(1, "/lus", "tmpfs")]
    return report_of(tmp_path, spec)[1]


def test_small_transfers(tmp_path: Path) -> None:
    r = one(tmp_path, {"POSIX_READS": 1000, "POSIX_SIZE_READ_1K_10K": 600, "POSIX_SIZE_READ_1M_4M": 400,
                       "POSIX_F_READ_TIME": 2 * S})  # fmt: skip
    a = fired(r, "small_transfers")
    assert a is not None and a["evidence"]["small_accesses"] == 600 and a["evidence"]["accesses"] == 1000
    assert a["evidence"]["small_share"] == pytest.approx(0.6) and "600 of 1000" in a["finding"]
    assert a["thresholds"]["small_access_bytes"] == 100 * 1024 and "1 MiB" in a["suggestion"]
    # The saving: the file's read time in the share of its calls that were small; 1.2 s of the 10 s run.
    assert a["evidence"]["saving_s"] == pytest.approx(1.2) and a["evidence"]["saving_share"] == pytest.approx(
        0.12
    )
    assert "At most 1.20 s of the 10.00 s run could be saved" in a["finding"]
    # A serial program without stdio is told neither about MPI-IO nor about setvbuf.
    assert "MPI" not in a["suggestion"] and "setvbuf" not in a["suggestion"]
    r = one(tmp_path, {"POSIX_READS": 1000, "POSIX_SIZE_READ_10K_100K": 499, "POSIX_SIZE_READ_100K_1M": 501,
                       "POSIX_F_READ_TIME": 2 * S})  # fmt: skip
    assert fired(r, "small_transfers") is None
    assert (
        fired(one(tmp_path, {"POSIX_READS": 999, "POSIX_SIZE_WRITE_0_100": 999}), "small_transfers") is None
    )
    half = {"POSIX_READS": 1000, "POSIX_SIZE_READ_0_100": 500, "POSIX_SIZE_READ_100K_1M": 500,
            "POSIX_F_READ_TIME": 2 * S}  # fmt: skip
    assert fired(one(tmp_path, half), "small_transfers") is not None  # the threshold is "at least half"
    # 2000 files written in one call each: each call moved the whole file, it cannot be larger.
    whole = {f"/lus/w{i}": {"POSIX_WRITES": 1, "POSIX_SIZE_WRITE_1K_10K": 1, "POSIX_F_WRITE_TIME": S // 1000}
             for i in range(2000)}  # fmt: skip
    assert fired(report_of(tmp_path, proc_log(1, whole))[1], "small_transfers") is None
    stdio = one(tmp_path, {"POSIX_WRITES": 1000, "POSIX_SIZE_WRITE_0_100": 1000, "POSIX_F_WRITE_TIME": S,
                           "STDIO_WRITES": 1000})  # fmt: skip
    a = fired(stdio, "small_transfers")
    assert a is not None and "setvbuf" in a["suggestion"] and a["evidence"]["stdio_calls"] == 1000


def test_every_rule_is_gated_on_the_time_it_could_save(tmp_path: Path) -> None:
    small = {"POSIX_READS": 1000, "POSIX_SIZE_READ_0_100": 1000}
    # 0.45 s of a 10 s run: 4.5%, under MIN_SAVING_SHARE.
    assert fired(one(tmp_path, small | {"POSIX_F_READ_TIME": 45 * S // 100}), "small_transfers") is None
    assert fired(one(tmp_path, small | {"POSIX_F_READ_TIME": 50 * S // 100}), "small_transfers") is not None
    # 0.2 s of a 0.3 s run: 67% of it, but under MIN_SAVING_S.
    short = small | {"POSIX_F_READ_TIME": S // 5}
    assert fired(one(tmp_path, short, end_ns=3 * S // 10), "small_transfers") is None
    assert (
        fired(one(tmp_path, small | {"POSIX_F_READ_TIME": S // 4}, end_ns=S // 2), "small_transfers")
        is not None
    )
    # Two processes of 10 s: 0.8 s is 4% of the 20 s they ran (the share is of the processes' time).
    slow = small | {"POSIX_F_READ_TIME": 8 * S // 10}
    _, r = report_of(tmp_path, proc_log(1, {"/lus/f": slow}), proc_log(2, {"/lus/g": {"POSIX_OPENS": 1}}))
    assert fired(r, "small_transfers") is None
    assert advice.MIN_SAVING_S == 0.25 and advice.MIN_SAVING_SHARE == 0.05


def test_metadata_bound(tmp_path: Path) -> None:
    polled = {"POSIX_F_READ_TIME": 2 * S, "POSIX_OPENS": 5000, "POSIX_STATS": 2}
    r = one(tmp_path, polled, proc={"META_TIME": 3 * S // 2, "OPENS": 5000, "STATS": 9})
    a = fired(r, "metadata_bound")
    assert a is not None and a["evidence"]["meta_time_s"] == pytest.approx(1.5)
    assert a["evidence"]["meta_share"] == pytest.approx(1.5 / 3.5) and a["evidence"]["opens"] == 5000
    assert "Open each file once" in a["suggestion"] and "stat once" not in a["suggestion"]
    below_share = one(tmp_path, polled | {"POSIX_F_READ_TIME": 3 * S}, proc={"META_TIME": 6 * S // 5})
    assert fired(below_share, "metadata_bound") is None  # 1.2 of 4.2 s: 29%
    too_little = one(tmp_path, polled | {"POSIX_F_READ_TIME": S // 10}, proc={"META_TIME": 4 * S // 10})
    assert fired(too_little, "metadata_bound") is None  # 80% of the I/O time, but 4% of the run
    # The file is opened once: nothing to do less often (packing files is many_small_files' advice).
    once = one(tmp_path, {"POSIX_F_READ_TIME": 2 * S, "POSIX_OPENS": 1}, proc={"META_TIME": 3 * S})
    assert fired(once, "metadata_bound") is None
    # The metadata time of a synced file is its syncs' (fsync_heavy's), not metadata-bound.
    synced = polled | {"POSIX_FSYNCS": 50, "POSIX_F_META_TIME": 3 * S // 2}
    assert fired(one(tmp_path, synced, proc={"META_TIME": 3 * S // 2}), "metadata_bound") is None


def small_files_job(tmp_path: Path, n_small: int, n_big: int, fs: str = "lustre") -> dict[str, Any]:
    # MAX_BYTE is the offset of the last byte (Darshan's meaning): files of 4 KiB and of 8 MiB
    files = {
        f"/lus/s{i}": {"POSIX_WRITES": 1, "POSIX_MAX_BYTE_WRITTEN": 4095, "POSIX_F_META_TIME": S // 50}
        for i in range(n_small)
    }
    files |= {f"/lus/b{i}": {"POSIX_READS": 1, "POSIX_MAX_BYTE_READ": 8 * MiB - 1} for i in range(n_big)}
    spec = proc_log(1, files)
    spec.mounts = [MountSpec(1, "/lus", fs)]
    return report_of(tmp_path, spec)[1]


def test_many_small_files(tmp_path: Path) -> None:
    a = fired(small_files_job(tmp_path, 100, 0), "many_small_files")
    assert (
        a is not None and a["evidence"]["small_files"] == 100 and a["evidence"]["median_file_bytes"] == 4096
    )
    assert a["evidence"]["saving_s"] == pytest.approx(2.0) and "node-local" in a["suggestion"]
    assert fired(small_files_job(tmp_path, 99, 0), "many_small_files") is None
    assert fired(small_files_job(tmp_path, 49, 51), "many_small_files") is None
    a = fired(small_files_job(tmp_path, 50, 50), "many_small_files")
    assert a is not None and a["evidence"]["small_share"] == pytest.approx(0.5)
    # Already in memory (/dev/shm) or on the node's own disk: no "use node-local storage".
    for fs in ("tmpfs", "ext4"):
        a = fired(small_files_job(tmp_path, 100, 0, fs), "many_small_files")
        assert a is not None and "node-local" not in a["suggestion"] and "/dev/shm" not in a["suggestion"]


def test_random_access(tmp_path: Path) -> None:
    # The first read of each (thread, file) follows no other and is left out: 1001 reads are 1000 that count.
    a = fired(
        one(tmp_path, {"POSIX_READS": 1001, "POSIX_SEQ_READS": 400, "POSIX_F_READ_TIME": 2 * S}),
        "random_access",
    )
    assert a is not None
    assert {k: a["evidence"][k] for k in ("reads", "first_reads", "seq_reads", "seq_read_share")} == {
        "reads": 1001, "first_reads": 1, "seq_reads": 400, "seq_read_share": 0.4
    }  # fmt: skip
    assert "600 of 1000 reads after the first of each file (60%)" in a["finding"]
    assert "node-local or flash" in a["suggestion"]  # on lustre
    # Uniformly random offsets are at or after the previous end half the time: 60% is still random.
    assert fired(
        one(tmp_path, {"POSIX_READS": 1001, "POSIX_SEQ_READS": 600, "POSIX_F_READ_TIME": 2 * S}),
        "random_access",
    )
    assert (
        fired(
            one(tmp_path, {"POSIX_READS": 1001, "POSIX_SEQ_READS": 750, "POSIX_F_READ_TIME": 2 * S}),
            "random_access",
        )
        is None
    )
    assert fired(one(tmp_path, {"POSIX_WRITES": 1000, "POSIX_F_WRITE_TIME": S}), "random_access") is None
    a = fired(
        one(tmp_path, {"POSIX_WRITES": 2000, "POSIX_SEQ_WRITES": 10, "POSIX_F_WRITE_TIME": S}),
        "random_access",
    )
    assert a is not None and "seq_write_share" in a["evidence"] and "reads" not in a["evidence"]
    # In memory, access order costs nothing.
    assert (
        fired(one(tmp_path, {"POSIX_READS": 1001, "POSIX_F_READ_TIME": S}, mount="/shm"), "random_access")
        is None
    )


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
    read = {"POSIX_READS": 600, "POSIX_F_READ_TIME": S}
    spec.file_recs = [(0, 1, read), (1, 1, read)]
    _, rep = report_of(tmp_path, spec, proc_log(2, {"/lus/f": read}))
    assert rep["access_patterns"]["first_reads"] == 3
    a = fired(rep, "random_access")
    assert a is not None and "1797 of 1797 reads after the first" in a["finding"]


def test_misaligned(tmp_path: Path) -> None:
    w = {"POSIX_WRITES": 1000, "POSIX_F_WRITE_TIME": 2 * S}
    a = fired(one(tmp_path, w | {"POSIX_FILE_NOT_ALIGNED": 500}), "misaligned")
    assert a is not None and a["evidence"]["fs_types"] == ["lustre"] and "on lustre" in a["finding"]
    assert "H5Pset_alignment" not in a["suggestion"] and "striping_unit" not in a["suggestion"]
    assert fired(one(tmp_path, w | {"POSIX_FILE_NOT_ALIGNED": 499}), "misaligned") is None
    # On a node's own disk or in memory the page cache absorbs it.
    assert fired(one(tmp_path, w | {"POSIX_FILE_NOT_ALIGNED": 1000}, mount="/shm"), "misaligned") is None


def test_a_directory_declared_parallel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """IOLENS_PARALLEL_FS: files under its directories count as on a parallel file system whatever their
    mount's type (here an ext4 disk, where misaligned access is no advice), others do not."""
    w = {"POSIX_WRITES": 1000, "POSIX_F_WRITE_TIME": 2 * S, "POSIX_FILE_NOT_ALIGNED": 1000}
    spec = proc_log(1, {"/data/run/f": w})
    spec.mounts = [MountSpec(1, "/data", "ext4")]
    monkeypatch.delenv("IOLENS_PARALLEL_FS", raising=False)
    assert fired(report_of(tmp_path, spec)[1], "misaligned") is None
    monkeypatch.setenv("IOLENS_PARALLEL_FS", "/scratch, /data/run/")
    a = fired(report_of(tmp_path, spec)[1], "misaligned")
    assert (
        a is not None and a["evidence"]["file_not_aligned"] == 1000 and a["evidence"]["fs_types"] == ["ext4"]
    )
    monkeypatch.setenv("IOLENS_PARALLEL_FS", "/data/ru")  # a directory, not a prefix of the name
    assert fired(report_of(tmp_path, spec)[1], "misaligned") is None


def test_fsync_heavy(tmp_path: Path) -> None:
    synced = {"POSIX_WRITES": 1000, "POSIX_FSYNCS": 60, "POSIX_FDSYNCS": 40, "POSIX_F_META_TIME": S}
    a = fired(one(tmp_path, synced), "fsync_heavy")
    assert a is not None and a["evidence"]["syncs"] == 100 and a["evidence"]["writes_per_sync"] == 10.0
    assert a["evidence"]["files"] == 1 and a["evidence"]["saving_s"] == pytest.approx(1.0)
    assert fired(one(tmp_path, synced, mount="/shm"), "fsync_heavy") is None  # a sync in memory does nothing
    assert fired(one(tmp_path, synced | {"POSIX_F_META_TIME": S // 4}), "fsync_heavy") is None  # 2.5%
    few = {"POSIX_WRITES": 99, "POSIX_FSYNCS": 99, "POSIX_F_META_TIME": S}
    assert fired(one(tmp_path, few), "fsync_heavy") is None
    rare = {"POSIX_WRITES": 1010, "POSIX_FSYNCS": 100, "POSIX_F_META_TIME": S}
    assert fired(one(tmp_path, rare), "fsync_heavy") is None
    # 100 files each synced once when complete: what the advice would ask for.
    once = {
        f"/lus/f{i}": {"POSIX_WRITES": 1, "POSIX_FSYNCS": 1, "POSIX_F_META_TIME": S // 50} for i in range(100)
    }
    assert fired(report_of(tmp_path, proc_log(1, once))[1], "fsync_heavy") is None


def test_shared_read_after_write(tmp_path: Path) -> None:
    # Timestamps are ns since each process's start + 1; both logs start at the same wall-clock time here.
    def w(at: int) -> dict[str, int]:
        return {"POSIX_WRITES": 5, "POSIX_BYTES_WRITTEN": 5 * MiB, "POSIX_F_WRITE_START_TIMESTAMP": at,
                "POSIX_F_WRITE_TIME": S}  # fmt: skip

    def r(at: int) -> dict[str, int]:
        return {"POSIX_READS": 5, "POSIX_BYTES_READ": 5 * MiB, "POSIX_F_READ_START_TIMESTAMP": at,
                "POSIX_F_READ_TIME": S}  # fmt: skip

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
    # The earliest writer reads after a second writer's first write, but every reader also wrote the file:
    # the ranks of a shared checkpoint reading back their own parts look the same, and get no advice.
    _, rep = report_of(tmp_path, proc_log(1, {"/lus/x": w(100) | r(300)}), proc_log(2, {"/lus/x": w(200)}))
    assert fired(rep, "shared_read_after_write") is None
    # Through a file in memory (/dev/shm): passing data in memory already.
    a, b = proc_log(1, {"/lus/x": w(100)}), proc_log(2, {"/lus/x": r(200)})
    a.mounts = b.mounts = [MountSpec(1, "/lus", "tmpfs")]
    assert fired(report_of(tmp_path, a, b)[1], "shared_read_after_write") is None
    # Briefer: 0.1 s in all, 0.5% of the 20 s the two processes ran.
    quick = {"POSIX_F_WRITE_TIME": S // 20}
    _, rep = report_of(
        tmp_path,
        proc_log(1, {"/lus/x": w(100) | quick}),
        proc_log(2, {"/lus/x": r(200) | {"POSIX_F_READ_TIME": S // 20}}),
    )
    assert fired(rep, "shared_read_after_write") is None
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
    assert a["evidence"]["saving_run_time_s"] == pytest.approx(1.5)  # the slowest rank's excess over the mean
    assert fired(ranks_job(tmp_path, [1, 1, 1, 1.6]), "rank_imbalance") is None  # 1.39x the mean
    # 2.5x the mean, but 0.3 s of excess: 3% of the 10 s run.
    assert fired(ranks_job(tmp_path, [0.1, 0.1, 0.1, 0.5]), "rank_imbalance") is None
    a = fired(ranks_job(tmp_path, [1, 2.2], [0, 128 * MiB]), "rank_imbalance")
    assert a is not None and a["evidence"]["bytes"]["max_rank"] == 1 and "io_time_s" not in a["evidence"]
    # The bytes are imbalanced, the time is not: balancing them would save nothing.
    assert fired(ranks_job(tmp_path, [1, 1], [0, 128 * MiB]), "rank_imbalance") is None
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
    for name in ("MIN_SAVING_S", "MIN_SAVING_SHARE", "MIN_ACCESSES", "SMALL_ACCESS_SHARE", "META_SHARE",
                 "REPEATS", "MIN_NAMESPACE_OPS", "MIN_FILES", "SMALL_FILE_SHARE", "SEQ_SHARE",
                 "MISALIGNED_SHARE", "MIN_SYNCS", "SYNCS_PER_WRITE", "SYNCS_PER_FILE",
                 "IMBALANCE_RATIO"):  # fmt: skip
        value = getattr(advice, name)
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        assert re.search(rf"\b{re.escape(shown)}\b", doc), f"{name} = {shown} is not in docs/profile.md"


# --- code and libraries, top files --------------------------------------------------------------------------

PYTHON_LIB = "/usr/lib/python3.11"


def python_job(tmp_path: Path, all_files: bool = False) -> tuple[Job, dict[str, Any]]:
    """python importing 150 modules (.py under /usr, .so in a venv's site-packages, a .pyc of the user's own
    script), the loader's cache, and writing one data file of 10 KiB."""
    code = {f"{PYTHON_LIB}/m{i}.py": {"POSIX_OPENS": 2, "POSIX_STATS": 3, "POSIX_READS": 2,
                                      "POSIX_BYTES_READ": 4000, "POSIX_SIZE_READ_1K_10K": 2,
                                      "POSIX_MAX_BYTE_READ": 3999, "POSIX_F_META_TIME": S // 100,
                                      "POSIX_F_READ_TIME": S // 1000}
            for i in range(148)}  # fmt: skip
    code["/home/u/venv/lib/python3.11/site-packages/numpy/_core.cpython-311.so"] = {
        "POSIX_OPENS": 1, "POSIX_READS": 1, "POSIX_BYTES_READ": 832, "POSIX_F_META_TIME": S // 100,
    }  # fmt: skip
    code["/home/u/__pycache__/run.cpython-311.pyc"] = {
        "POSIX_OPENS": 1,
        "POSIX_READS": 1,
        "POSIX_BYTES_READ": 900,
    }
    code["/etc/ld.so.cache"] = {"POSIX_OPENS": 1, "POSIX_BYTES_READ": 0}
    data = {
        "/dev/shm/out.json": {"POSIX_OPENS": 1, "POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": 10_000,
                              "POSIX_SIZE_WRITE_1K_10K": 1, "POSIX_MAX_BYTE_WRITTEN": 9999},
    }  # fmt: skip
    spec = proc_log(1, code | data, proc={"META_TIME": 2 * S, "OPENS": 152, "STATS": 444})
    d = tmp_path / f"py{len(list(tmp_path.iterdir()))}"
    d.mkdir()
    write_log(d, spec)
    job = load_jobs(d, all_files)[0]
    return job, job_report(job)


def test_code_and_libraries_are_kept_apart_from_data(tmp_path: Path) -> None:
    _, r = python_job(tmp_path)
    s = r["summary"]
    assert s["files"]["total"] == 1 and s["bytes_read"] == 0 and s["bytes_written"] == 10_000
    code = s["code_and_libraries"]
    assert (code["files"], code["bytes_read"], code["reads"]) == (151, 148 * 4000 + 832 + 900, 148 * 2 + 2)
    assert code["io_time_s"] == pytest.approx(148 * 0.011 + 0.01) and code["counted_as_data"] is False
    assert [f["path"] for f in r["top_files_by_bytes"]] == ["/dev/shm/out.json"]
    assert [f["path"] for f in r["top_files_by_time"]] == []  # the data file took no time
    assert r["advice"] == []  # not "many small files", not "metadata-bound" (the imports' 1.5 s)
    text = " ".join(render({"jobs": [r]}).split())
    assert "code and libraries 151 files, 579.82 KiB read in 298 reads, 1.638 s" in text
    assert "--all-files counts them as data" in text
    # --all-files: the same logs, code counted as data; now 152 files, many of them small, and busy opening.
    _, r = python_job(tmp_path, all_files=True)
    code = r["summary"]["code_and_libraries"]
    assert r["summary"]["files"]["total"] == 152 and code["counted_as_data"] and code["files"] == 151
    assert "(counted as data: --all-files)" in " ".join(render({"jobs": [r]}).split())
    assert r["summary"]["bytes_read"] == 148 * 4000 + 832 + 900
    assert len(r["top_files_by_bytes"]) == 10 and {a["rule"] for a in r["advice"]} == {"many_small_files"}


def test_paths_of_code_and_libraries() -> None:
    from iolens.profile.places import fs_kind, is_code, libraries

    code = [
        "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2", "/etc/ld.so.cache",
        "/usr/include/stdio.h", "/opt/spack/hdf5/lib/libhdf5.so.310", "/home/u/.local/lib/python3.11/"
        "site-packages/h5py/__init__.py", "/scratch/u/env/lib/python3.12/dist-packages/x/y.dat",
        "/home/u/app/__pycache__/model.cpython-311.pyc", "/home/u/app/train.py", "/proc/self/maps",
        "/dev/null", "/sys/fs/cgroup/cpu.max", "/bin/sh",
    ]  # fmt: skip
    data = ["/dev/shm/out.h5", "/scratch/u/run/out.dat", "/tmp/cc1.s", "/home/u/libfoo.sot", "/usrdata/x",
            "/home/u/py/data.json", "/library/table.csv"]  # fmt: skip
    assert [p for p in code if not is_code(p)] == [] and [p for p in data if is_code(p)] == []
    assert libraries(["/usr/lib/x86_64-linux-gnu/hdf5/openmpi/libhdf5.so.103", "/usr/lib/libmpi.so.40"]) == {
        "hdf5"
    }  # fmt: skip
    assert libraries(["/usr/lib/x86_64-linux-gnu/libhdf5_serial_hl.so.100", "/scratch/libhdf5.h5"]) == {
        "hdf5"
    }
    assert [fs_kind(t) for t in ("tmpfs", "lustre", "ext4", "fuse.x", None)] == [
        "memory", "parallel", "local", "unknown", "unknown"
    ]  # fmt: skip


def test_top_files_break_ties_by_path_whatever_the_log_order(tmp_path: Path) -> None:
    """Twelve files of equal bytes in two processes: the ten first paths, in path order, whichever log comes
    first, and the same for equal times."""
    names = [f"/lus/f{c}" for c in "lkjihgfedcba"]
    same = {"POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": 4096, "POSIX_F_WRITE_TIME": S // 10}
    first = report_of(
        tmp_path, proc_log(1, {n: same for n in names[:6]}), proc_log(2, {n: same for n in names[6:]})
    )
    second = report_of(
        tmp_path, proc_log(1, {n: same for n in names[6:]}), proc_log(2, {n: same for n in names[:6]})
    )
    for _, r in (first, second):
        assert [f["path"] for f in r["top_files_by_bytes"]] == sorted(names)[:10]
        assert [f["path"] for f in r["top_files_by_time"]] == sorted(names)[:10]
    _, r = report_of(tmp_path, proc_log(1, {"/lus/b": same, "/lus/a": same | {"POSIX_BYTES_WRITTEN": 1}}))
    assert [f["path"] for f in r["top_files_by_bytes"]] == ["/lus/b", "/lus/a"]  # the value first


def test_small_ios_count_transfers_up_to_and_including_1_mib() -> None:
    """Darshan's 100K_1M bucket (and iolens's) holds 102401..1048576 bytes: a transfer of exactly 1 MiB is
    small, one of 1 MiB + 1 byte is not (in 1M_4M)."""
    from iolens.store.profiles import SMALL_IOS_LABEL, small_ios

    sizes = {
        "buckets": ["0-100", "100K-1M", "1M-4M", "1G+"],
        "read": [1, 2, 4, 8],
        "write": [16, 32, 64, 128],
    }
    assert small_ios(sizes) == 1 + 2 + 16 + 32 and "up to 1 MiB" in SMALL_IOS_LABEL
    assert advice.bucket_upper("100K-1M") == MiB and advice.bucket_upper("10K-100K") == 100 * 1024


def test_the_html_profile_keeps_the_advice_sentence_with_its_numbers(tmp_path: Path) -> None:
    from iolens.report.html import profile_page
    from iolens.store import Store
    from iolens.store.profiles import iolens_jobs

    d = tmp_path / "logs"
    d.mkdir()
    write_log(d, proc_log(1, {"/lus/f": {"POSIX_READS": 1000, "POSIX_SIZE_READ_1K_10K": 600,
                                         "POSIX_SIZE_READ_1M_4M": 400, "POSIX_F_READ_TIME": 2 * S},
                              "/usr/lib/libz.so.1": {"POSIX_OPENS": 1, "POSIX_READS": 1,
                                                     "POSIX_BYTES_READ": 832}}))  # fmt: skip
    with Store.open(str(tmp_path / "iolens.db")) as store:
        stored = store.put_profile(iolens_jobs(d)[0])
        page = profile_page(store, stored.id).render()
    assert "600 of 1000 reads and writes (60%) moved at most 100 KiB each" in page
    assert "At most 1.20 s of the 10.00 s run could be saved" in page and "Aggregate into transfers" in page
    assert "small I/Os (up to 1 MiB)" in page and "code and libraries" in page
    assert "<code>/lus/f</code>" in page and "<code>/usr/lib/libz.so.1</code>" not in page  # top files: data


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
            POSIX_WRITES=2000, POSIX_SIZE_WRITE_1K_10K=2000, POSIX_FILE_NOT_ALIGNED=2000,
            POSIX_F_WRITE_TIME=5 * S, POSIX_BYTES_WRITTEN=2000 * 4096, POSIX_F_WRITE_START_TIMESTAMP=100,
            POSIX_OPENS=500,
        ),
        "/lus/log": dict(POSIX_WRITES=300, POSIX_FSYNCS=300, POSIX_F_META_TIME=2 * S),
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
    # The rules of the layers above POSIX need MPI-IO and HDF5 module records, which these logs written from
    # the document do not have: the advice suite's real MPI and HDF5 cases fire them (and check their keys).
    layer_rules = {"independent_small_writes", "hdf5_alignment"}
    assert sorted(a["rule"] for a in doc["jobs"][1]["advice"]) == sorted(
        r.__name__ for r in advice.RULES if r.__name__ not in layer_rules
    )
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
            {odd: dict(POSIX_WRITES=2000, POSIX_BYTES_WRITTEN=3 * MiB, POSIX_SIZE_WRITE_1K_10K=2000,
                       POSIX_F_WRITE_TIME=2 * S)},
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
