"""fio options through real runs of the engine's fio workload, each checked by what fio's meaning implies and
what can be seen from outside: the files and their contents, the iolog of every I/O, the backend's counters,
the flags of the rank's open files and its threads in /proc, and the CPU and machine figures.

Runs are small (a few MiB on a tmpfs or a disk directory) and well under a second each."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from .fio_helpers import (
    iolog_ios,
    job,
    kernel_worker_cpu,
    open_flags,
    proc_cpu_s,
    rank_pids,
    run_fio,
    thread_names,
    watch_run,
)
from .ior_helpers import EngineResult

KIB = 1024
MIB = 1024 * KIB

O_DIRECT = os.O_DIRECT
O_DSYNC = os.O_DSYNC
O_SYNC_ONLY = os.O_SYNC & ~os.O_DSYNC  # __O_SYNC: set for O_SYNC, clear for O_DSYNC


def common(d: Path, *more: str) -> list[str]:
    return ["--name=t", f"--directory={d}", "--bs=4k", *more]


def group(res: EngineResult) -> dict[str, Any]:
    assert res.doc is not None and res.doc["status"] == "ok", res.stderr
    return res.doc["fio"]["groups"][0]


def options(res: EngineResult) -> dict[str, Any]:
    assert res.doc is not None, res.stderr
    return res.doc["config"]["jobs"][0]["options"]


# --- files, sizes, offsets --------------------------------------------------------------------------------


def test_nrfiles_splits_size_over_that_many_files(engine: Path, tmpfs_dir: Path) -> None:
    log = tmpfs_dir / "io.log"
    j = job(
        run_fio(engine, common(tmpfs_dir, "--rw=write", "--size=1m", "--nrfiles=4", f"--write_iolog={log}"))
    )
    assert j["write"]["ios"] == 256 and j["write"]["bytes"] == MIB
    files = sorted(p.name for p in tmpfs_dir.glob("t.*"))
    assert files == ["t.0.0", "t.0.1", "t.0.2", "t.0.3"]
    assert all((tmpfs_dir / f).stat().st_size == 256 * KIB for f in files)
    per_file = Counter(Path(f).name for f, _, _, _ in iolog_ios(log))
    assert per_file == {f: 64 for f in files}

    log = tmpfs_dir / "rr.log"
    j = job(
        run_fio(
            engine, common(tmpfs_dir, "--rw=randread", "--size=1m", "--nrfiles=4", f"--write_iolog={log}")
        )
    )
    assert j["read"]["bytes"] == MIB
    by_file: dict[str, list[int]] = {}
    for f, _, off, _ in iolog_ios(log):
        by_file.setdefault(Path(f).name, []).append(off)
    assert {f: sorted(offs) for f, offs in by_file.items()} == {
        f: list(range(0, 256 * KIB, 4 * KIB)) for f in files
    }


def test_filesize_gives_each_file_that_size(engine: Path, tmpfs_dir: Path) -> None:
    j = job(run_fio(engine, common(tmpfs_dir, "--rw=read", "--filesize=128k", "--nrfiles=3")))
    assert j["read"]["bytes"] == 3 * 128 * KIB, "without size=, the I/O covers every file"
    assert sorted((p.name, p.stat().st_size) for p in tmpfs_dir.glob("t.*")) == [
        ("t.0.0", 128 * KIB),
        ("t.0.1", 128 * KIB),
        ("t.0.2", 128 * KIB),
    ]


def test_size_below_the_files_total_caps_the_io(engine: Path, tmpfs_dir: Path) -> None:
    # fio: size= is the I/O per loop; two files of 128 KiB, 128 KiB of I/O over them.
    log = tmpfs_dir / "io.log"
    args = common(
        tmpfs_dir, "--rw=randread", "--size=128k", "--filesize=128k", "--nrfiles=2", f"--write_iolog={log}"
    )
    j = job(run_fio(engine, args))
    assert j["read"]["ios"] == 32 and j["read"]["bytes"] == 128 * KIB
    assert [(p.name, p.stat().st_size) for p in sorted(tmpfs_dir.glob("t.*"))] == [
        ("t.0.0", 128 * KIB),
        ("t.0.1", 128 * KIB),
    ]
    ios = iolog_ios(log)
    assert len({(f, off) for f, _, off, _ in ios}) == 32, "the random map still visits no block twice"
    assert {Path(f).name for f, _, _, _ in ios} == {"t.0.0", "t.0.1"}, "the I/O is spread over both files"


def test_offset_leaves_the_first_bytes_untouched(engine: Path, tmpfs_dir: Path) -> None:
    log = tmpfs_dir / "w.log"
    args = common(tmpfs_dir, "--size=256k", "--offset=64k", "--verify=crc32c")
    w = job(run_fio(engine, [*args, "--rw=randwrite", f"--write_iolog={log}"]))
    assert w["write"]["bytes"] == 256 * KIB and w["verify"]["errors"] == 0
    data = (tmpfs_dir / "t.0.0").read_bytes()
    assert len(data) == 320 * KIB, "the region runs from offset for size bytes"
    assert data[: 64 * KIB] == bytes(64 * KIB), "nothing was written before offset"
    assert data[64 * KIB : 64 * KIB + 8] != bytes(8)
    assert sorted(off for _, _, off, _ in iolog_ios(log)) == list(range(64 * KIB, 320 * KIB, 4 * KIB))
    # A read job with the same offset finds every block where the write put it.
    r = job(run_fio(engine, [*args, "--rw=read"]))
    assert r["verify"]["blocks_checked"] == 64 and r["verify"]["errors"] == 0


def test_offset_with_filesize_keeps_the_file_that_size(engine: Path, tmpfs_dir: Path) -> None:
    # fio: a file of filesize bytes, I/O from offset to its end.
    log = tmpfs_dir / "io.log"
    j = job(
        run_fio(
            engine, common(tmpfs_dir, "--rw=write", "--filesize=128k", "--offset=64k", f"--write_iolog={log}")
        )
    )
    assert j["write"]["bytes"] == 64 * KIB
    assert (tmpfs_dir / "t.0.0").stat().st_size == 128 * KIB
    assert [off for _, _, off, _ in iolog_ios(log)] == list(range(64 * KIB, 128 * KIB, 4 * KIB))
    res = run_fio(engine, common(tmpfs_dir, "--rw=write", "--filesize=64k", "--offset=64k"))
    assert res.returncode == 2 and "offset: 65536 is not below filesize 65536" in res.stderr


@pytest.mark.parametrize(("ba", "bs"), [(8 * KIB, 4 * KIB), (2 * KIB, 4 * KIB)])
def test_blockalign_aligns_every_random_offset(engine: Path, tmpfs_dir: Path, ba: int, bs: int) -> None:
    log = tmpfs_dir / "io.log"
    args = [
        "--name=t",
        f"--directory={tmpfs_dir}",
        "--rw=randread",
        f"--bs={bs}",
        "--size=1m",
        f"--blockalign={ba}",
        "--norandommap",
        f"--write_iolog={log}",
    ]
    j = job(run_fio(engine, args))
    assert j["read"]["ios"] == MIB // bs and j["read"]["bytes"] == MIB, (
        "size= is the I/O, whatever the alignment"
    )
    offsets = [off for _, _, off, _ in iolog_ios(log)]
    assert len(offsets) == MIB // bs
    assert all(off % ba == 0 and off + bs <= MIB for off in offsets)
    if ba < bs:
        assert any(off % bs for off in offsets), "offsets between whole blocks are used"
    assert options(run_fio(engine, args))["blockalign"] == ba


def test_blockalign_other_than_bs_needs_norandommap(engine: Path, tmpfs_dir: Path) -> None:
    res = run_fio(engine, common(tmpfs_dir, "--rw=randread", "--size=1m", "--blockalign=8k"))
    assert res.returncode == 2 and "blockalign" in res.stderr and "norandommap" in res.stderr
    assert list(tmpfs_dir.iterdir()) == []


# --- how the files are opened, and the instances run -------------------------------------------------------


def flags_of(engine: Path, d: Path, *more: str) -> int:
    args = common(d, "--rw=write", "--size=256k", "--time_based", "--runtime=300ms", *more)
    target = d / "t.0.0"

    def probe(pid: int) -> int | None:  # the job's own descriptor, not the read-only one of the cache step
        flags = open_flags(pid, target)
        return flags if flags is not None and flags & os.O_ACCMODE != os.O_RDONLY else None

    # The last one seen: before the job opens its file, the layout step may hold it open write-only (without
    # the job's sync flags) for an instant, and a probe that stopped at the first sight read those flags.
    flags, res = watch_run(engine, args, probe, to_the_end=True)
    assert res.returncode == 0, res.stderr
    assert flags is not None, "the rank was never seen holding its file open"
    return flags


@pytest.mark.parametrize(
    ("sync", "want_dsync", "want_sync"),
    [("1", True, True), ("sync", True, True), ("dsync", True, False), ("0", False, False)],
)
def test_sync_opens_the_files_o_sync_or_o_dsync(
    engine: Path, tmpfs_dir: Path, sync: str, want_dsync: bool, want_sync: bool
) -> None:
    flags = flags_of(engine, tmpfs_dir, f"--sync={sync}")
    assert bool(flags & O_DSYNC) == want_dsync
    assert bool(flags & O_SYNC_ONLY) == want_sync


@pytest.mark.parametrize(
    ("opt", "direct"), [("--buffered=0", True), ("--buffered=1", False), ("--direct=1", True)]
)
def test_buffered_is_the_opposite_of_direct(engine: Path, disk_dir: Path, opt: str, direct: bool) -> None:
    assert bool(flags_of(engine, disk_dir, opt) & O_DIRECT) == direct
    j = job(run_fio(engine, common(disk_dir, "--rw=read", "--size=256k", opt)))
    assert j["cache"]["direct"] == direct and j["read"]["bytes"] == 256 * KIB


def test_buffered_contradicting_direct_is_refused(engine: Path, tmpfs_dir: Path) -> None:
    res = run_fio(engine, common(tmpfs_dir, "--rw=read", "--size=256k", "--direct=1", "--buffered=1"))
    assert res.returncode == 2 and "buffered" in res.stderr


@pytest.mark.parametrize("thread", ["--thread", "--thread=0"])
def test_instances_are_threads_of_one_rank_process(engine: Path, tmpfs_dir: Path, thread: str) -> None:
    args = common(
        tmpfs_dir, "--rw=randread", "--size=256k", "--numjobs=3", "--time_based", "--runtime=300ms", thread
    )

    def probe(pid: int) -> tuple[int, list[int]] | None:
        n = len(thread_names(pid))  # the rank's main thread and its three instances
        return (n, rank_pids(pid)) if n >= 4 else None

    seen, res = watch_run(engine, args, probe)
    j = job(res)
    assert seen is not None
    assert seen == (4, []), "numjobs=3: three instance threads beside the rank's own, and no other process"
    assert j["instances"] == 3 and len(j["per_instance"]) == 3
    assert options(res)["thread"] is (thread == "--thread")


# --- verification ----------------------------------------------------------------------------------------


def test_do_verify_0_writes_checksums_without_reading_back(engine: Path, tmpfs_dir: Path) -> None:
    args = common(tmpfs_dir, "--size=1m", "--verify=crc32c")
    w = job(run_fio(engine, [*args, "--rw=randwrite", "--do_verify=0"]))
    assert w["write"]["ios"] == 256 and w["read"]["ios"] == 0
    assert w["verify"]["blocks_checked"] == 0, "do_verify=0: nothing read back"
    r = job(run_fio(engine, [*args, "--rw=randread"]))
    assert r["verify"]["blocks_checked"] == 256 and r["verify"]["errors"] == 0, (
        "the blocks carry their checksums"
    )
    w = job(run_fio(engine, [*args, "--rw=randwrite", "--do_verify=1"]))
    assert w["verify"]["blocks_checked"] == 256 and w["read"]["ios"] == 0, (
        "the read-back is not in the figures"
    )


# --- queue: batches, registered buffers and files, SQPOLL, polled completions ------------------------------


def queued(engine: Path, d: Path, ioengine: str, *more: str) -> tuple[dict[str, Any], dict[str, Any]]:
    args = common(
        d, "--rw=randread", "--size=1m", f"--ioengine={ioengine}", "--iodepth=16", "--direct=1", *more
    )
    res = run_fio(engine, args)
    j = job(res)
    assert j["read"]["ios"] == 256 and j["read"]["bytes"] == MIB, "batching changes no I/O count"
    assert j["backend"]["requests"] == 256
    return j["backend"], options(res)


@pytest.mark.parametrize("ioengine", ["io_uring", "libaio"])
def test_iodepth_batch_submit_sends_at_most_that_many_per_call(
    engine: Path, disk_dir: Path, ioengine: str
) -> None:
    be, opts = queued(engine, disk_dir, ioengine)
    assert opts["iodepth_batch_submit"] == 1, "fio's default"
    assert be["submit_calls"] == 256, "one request per submit call"
    be, opts = queued(engine, disk_dir, ioengine, "--iodepth_batch_submit=1")
    assert opts["iodepth_batch_submit"] == 1
    assert be["submit_calls"] == 256, "one request per submit call"
    be, opts = queued(engine, disk_dir, ioengine, "--iodepth_batch_submit=0")
    assert opts["iodepth_batch_submit"] == 0
    assert be["submit_calls"] < 256, "every free slot in one call"
    be, opts = queued(engine, disk_dir, ioengine, "--iodepth_batch=4")
    assert opts["iodepth_batch_submit"] == 4
    # at most 4 per call; the first fill of 16 slots alone takes 4 calls instead of 16
    assert 64 <= be["submit_calls"] <= 256 - 12


@pytest.mark.parametrize("ioengine", ["io_uring", "libaio"])
def test_iodepth_batch_complete_max_and_min_bound_each_reap(
    engine: Path, disk_dir: Path, ioengine: str
) -> None:
    # Every submit after the first fill sends the slots the last reap freed (batch_submit 0 = all free slots).
    every = "--iodepth_batch_submit=0"
    be, opts = queued(engine, disk_dir, ioengine, every, "--iodepth_batch_complete_max=1")
    assert opts["iodepth_batch_complete_max"] == 1
    assert be["submit_calls"] == 1 + (256 - 16), "one completion per reap, so one request per refill"
    be, _ = queued(engine, disk_dir, ioengine, every, "--iodepth_batch_complete_max=4")
    assert be["submit_calls"] >= 1 + (256 - 16) // 4
    be, opts = queued(
        engine, disk_dir, ioengine, every, "--iodepth_batch_complete_min=8", "--iodepth_batch_complete_max=16"
    )
    assert (opts["iodepth_batch_complete_min"], opts["iodepth_batch_complete_max"]) == (8, 16)
    assert be["submit_calls"] <= 1 + (256 - 16) // 8, (
        "at least 8 completions per reap, so at least 8 per refill"
    )


def test_iodepth_batch_complete_min_above_max_is_refused(engine: Path, tmpfs_dir: Path) -> None:
    args = common(tmpfs_dir, "--rw=randread", "--size=1m", "--ioengine=io_uring", "--iodepth=16")
    res = run_fio(engine, [*args, "--iodepth_batch_complete_min=8", "--iodepth_batch_complete_max=4"])
    assert res.returncode == 2 and "iodepth_batch_complete_min" in res.stderr


def test_fixedbufs_and_registerfiles_switch_io_urings_registrations(engine: Path, tmpfs_dir: Path) -> None:
    be, _ = queued(engine, tmpfs_dir, "io_uring")
    # iolens's defaults: every request uses a registered buffer; the file gets its slot after its first use
    assert be["fixed_bufs"] == 256 and be["fixed_files"] == 255
    be, opts = queued(engine, tmpfs_dir, "io_uring", "--fixedbufs=0")
    assert opts["fixedbufs"] is False and be["fixed_bufs"] == 0 and be["fixed_files"] == 255
    be, opts = queued(engine, tmpfs_dir, "io_uring", "--registerfiles=0")
    assert opts["registerfiles"] is False and be["fixed_files"] == 0 and be["fixed_bufs"] == 256


@pytest.mark.skipif(
    shutil.which("prlimit") is None or shutil.which("setpriv") is None, reason="no prlimit/setpriv"
)
def test_fixed_buffers_over_the_memlock_limit_fall_back_and_the_summary_says_so(
    iolens_bin: list[str], tmpfs_dir: Path
) -> None:
    # 32 buffers of 128 KiB to pin, with a locked-memory limit of 64 KiB: registering them fails. root has
    # CAP_IPC_LOCK, which ignores the limit: the run drops it first.
    drop = ["setpriv", "--bounding-set=-ipc_lock"] if os.geteuid() == 0 else []
    limit = ["prlimit", "--memlock=65536:65536"]
    args = common(tmpfs_dir, "--rw=randread", "--bs=128k", "--size=8m", "--ioengine=io_uring", "--iodepth=32")
    out = tmpfs_dir / "doc.json"
    proc = subprocess.run(
        [*drop, *limit, *iolens_bin, "fio", *args, "--no-live", f"--json={out}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0 and "setpriv" in proc.stderr:
        pytest.skip(f"cannot drop CAP_IPC_LOCK here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    j = json.loads(out.read_text())["fio"]["jobs"][0]
    assert j["read"]["ios"] == 64, "the run is still right, only slower"
    assert j["backend"]["fixed_bufs"] == 0 and j["backend"]["requests"] == 64
    assert "fixedbufs=1, but 0 of 64 requests used a registered buffer" in " ".join(proc.stdout.split())
    assert "ulimit -l" in proc.stdout
    # With fixedbufs=0 nothing was asked for: no warning, under the same limit.
    proc = subprocess.run(
        [*drop, *limit, *iolens_bin, "fio", *args, "--fixedbufs=0", "--no-live"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "registered buffer" not in proc.stdout


def sqpoll_run(engine: Path, d: Path, on: int) -> tuple[dict[str, float], dict[str, Any]]:
    """A 0.3 s io_uring run; the CPU of its io_uring kernel threads as last seen, and its group."""
    args = common(
        d,
        "--rw=randread",
        "--size=1m",
        "--ioengine=io_uring",
        "--iodepth=8",
        "--time_based",
        "--runtime=300ms",
    )
    args.append(f"--sqthread_poll={on}")
    seen, res = watch_run(engine, args, lambda pid: kernel_worker_cpu(pid) or None, to_the_end=True)
    return seen or {}, group(res)


def test_sqthread_poll_runs_a_kernel_thread_whose_cpu_is_counted(engine: Path, tmpfs_dir: Path) -> None:
    workers, g = sqpoll_run(engine, tmpfs_dir, 1)
    sqp = sum(cpu for name, cpu in workers.items() if name.startswith("iou-sqp-"))
    assert any(name.startswith("iou-sqp-") for name in workers), (
        "an iou-sqp-* thread polls the submission queue"
    )
    # The polling thread spins while there is work: a good part of the 0.3 s, even on a busy 2-CPU machine.
    assert sqp > 0.03, workers
    kw = g["cpu"]["kernel_workers_s"]
    # Everything the kernel threads were last seen to have used is in kernel_workers_s (10 ms ticks in /proc).
    assert kw >= sum(workers.values()) - 0.02, (g["cpu"], workers)
    assert g["cpu"]["total_s"] >= kw + g["cpu"]["usr_s"] + g["cpu"]["sys_s"] - 0.001
    # The cost of an I/O with the polling thread's time in it, beside the job threads' alone.
    threads = g["cpu"]["usr_s"] + g["cpu"]["sys_s"]
    assert g["cpu"]["total_per_io_ns"] > g["cpu"]["per_io_ns"] > 0
    assert g["cpu"]["total_per_io_ns"] / g["cpu"]["per_io_ns"] == pytest.approx((threads + kw) / threads)
    workers, g = sqpoll_run(engine, tmpfs_dir, 0)
    assert not any(name.startswith("iou-sqp-") for name in workers), "no polling thread without sqthread_poll"
    assert g["cpu"]["kernel_workers_s"] >= sum(workers.values()) - 0.02, "io-wq workers (iou-wrk-*) count too"


@pytest.mark.parametrize("fs", ["tmpfs", "disk"])
def test_hipri_on_io_uring_works_or_says_why(engine: Path, tmpfs_dir: Path, disk_dir: Path, fs: str) -> None:
    d = tmpfs_dir if fs == "tmpfs" else disk_dir
    args = common(d, "--rw=randread", "--size=1m", "--ioengine=io_uring", "--iodepth=4", "--hipri=1")
    res = run_fio(engine, [*args, "--direct=0"])
    assert res.returncode == 2 and "hipri" in res.stderr and "O_DIRECT" in res.stderr
    res = run_fio(engine, [*args, "--direct=1"])
    if res.returncode == 0:
        assert job(res)["read"]["ios"] == 256
    else:  # a file system or device without polled completions (tmpfs has none)
        assert res.returncode == 1, res.stderr
        assert "hipri" in res.stderr and "not supported" in res.stderr
        assert res.doc is not None and "hipri" in res.doc["error"]["message"]


def test_hipri_on_pvsync2_is_a_hint_the_file_system_may_ignore(engine: Path, tmpfs_dir: Path) -> None:
    args = common(tmpfs_dir, "--rw=randread", "--size=1m", "--ioengine=pvsync2", "--hipri=1")
    j = job(run_fio(engine, args))
    assert j["read"]["ios"] == 256


# --- random distributions ----------------------------------------------------------------------------------


def top_share(engine: Path, d: Path, dist: str, share: float) -> float:
    """The share of 4096 random reads over 4096 blocks that went to the hottest `share` of the blocks."""
    log = d / "io.log"
    args = common(d, "--rw=randread", "--size=16m", f"--random_distribution={dist}", f"--write_iolog={log}")
    if dist == "random":
        args.append("--norandommap")
    res = run_fio(engine, args)
    assert job(res)["read"]["ios"] == 4096
    assert options(res)["random_distribution"] == dist
    ios = iolog_ios(log)
    assert all(off % 4096 == 0 and off < 16 * MIB for _, _, off, _ in ios)
    counts = sorted(Counter(off for _, _, off, _ in ios).values(), reverse=True)
    return sum(counts[: int(4096 * share)]) / len(ios)


def test_pareto_sends_most_io_to_few_blocks(engine: Path, tmpfs_dir: Path) -> None:
    uniform = top_share(engine, tmpfs_dir, "random", 0.2)
    assert uniform < 0.6
    # pareto:H: a share 1 - H of the I/O goes to the hottest H of the blocks (fio's "80/20" for 0.2)
    assert top_share(engine, tmpfs_dir, "pareto:0.2", 0.2) >= 0.8
    assert top_share(engine, tmpfs_dir, "pareto:0.1", 0.1) >= 0.9
    assert abs(top_share(engine, tmpfs_dir, "pareto:0.5", 0.2) - uniform) < 0.05, "pareto:0.5 is uniform"


def test_normal_concentrates_io_and_dev_widens_it(engine: Path, tmpfs_dir: Path) -> None:
    uniform = top_share(engine, tmpfs_dir, "random", 0.2)
    # fio's bell has a standard deviation of n/12 at DEV 0: about 80% of the I/O within the central 20%
    narrow = top_share(engine, tmpfs_dir, "normal", 0.2)
    assert narrow >= 0.75
    wide = top_share(engine, tmpfs_dir, "normal:50", 0.2)
    assert uniform + 0.05 < wide < narrow - 0.1


# --- CPU of the job, of the kernel's workers, and of the rest of the machine -------------------------------


def test_a_short_jobs_cpu_is_its_threads_not_kernel_workers(engine: Path, tmpfs_dir: Path) -> None:
    res = run_fio(engine, common(tmpfs_dir, "--rw=write", "--size=8m"))
    j, g = job(res), group(res)
    threads = j["cpu"]["usr_s"] + j["cpu"]["sys_s"]
    assert threads > 0 and j["cpu"]["per_io_ns"] > 0
    assert g["cpu"]["kernel_workers_s"] < threads / 2, "psync has no kernel workers: the threads did the work"


def test_a_verify_read_back_is_not_kernel_worker_cpu(engine: Path, tmpfs_dir: Path) -> None:
    # psync has no kernel workers; the read-back after the writes (128 MiB checked) is the thread's own CPU,
    # outside the job's figures, and must not show up as kernel workers' time either.
    res = run_fio(engine, common(tmpfs_dir, "--rw=write", "--size=128m", "--verify=crc32c"))
    j, g = job(res), group(res)
    assert j["verify"]["blocks_checked"] == 128 * 256 and j["verify"]["errors"] == 0
    assert g["cpu"]["kernel_workers_s"] < 0.005, g["cpu"]
    threads = j["cpu"]["usr_s"] + j["cpu"]["sys_s"]
    assert g["cpu"]["total_s"] > threads, "the read-back is in the process total"


@pytest.mark.parametrize("runtime", ["500ms", "1200ms"])
def test_a_busy_neighbour_shows_in_the_machine_figures(engine: Path, tmpfs_dir: Path, runtime: str) -> None:
    def favoured() -> None:  # on a shared machine, make sure the neighbour gets a CPU when it can
        try:
            os.nice(-10)
        except OSError:
            pass

    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=favoured)
    try:
        # let it start spinning, then count its CPU over the run
        while proc_cpu_s(burner.pid) < 0.05:
            pass
        before = proc_cpu_s(burner.pid)
        res = run_fio(
            engine, common(tmpfs_dir, "--rw=randread", "--size=1m", "--time_based", f"--runtime={runtime}")
        )
        burned = proc_cpu_s(burner.pid) - before
    finally:
        burner.kill()
        burner.wait()
    m = group(res)["machine"]
    assert burned > 0.05, "the neighbour really ran"
    # Its CPU is counted as the rest of the machine's (the figure has 10 ms ticks; the neighbour also ran
    # while the engine started and stopped, outside the window).
    assert m["others_busy_s"] >= 0.6 * burned - 0.02, (m, burned)
    assert m["others_busy_pct"] >= 100 * (0.6 * burned - 0.02) / (m["cpus"] * m["window_s"])
    assert m["busy_s"] >= m["others_busy_s"]
    # The note needs a window of a second or more (/proc/stat counts 10 ms ticks) and 10% of the CPUs busy.
    assert (m["window_s"] >= 1.0) == (runtime == "1200ms"), m  # each case takes the branch it is for
    if m["window_s"] < 1.0:
        assert m["note"] is None
    else:
        assert m["others_busy_pct"] >= 10.0, m
        assert m["note"] == (
            f"other processes kept {m['others_busy_pct']:.0f}% of this host's CPUs busy during the run"
        )
